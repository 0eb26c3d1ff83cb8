package secrets

import (
	"bytes"
	"encoding/base64"
	"math/bits"
	"net/url"
)

// Credentials written where a program or a command takes them: in a URL
// (scheme://user:password@host), an Authorization header, a curl command's -u and -H.
// Each is found from an anchor byte (the URL's '@', the 'z' of Authorization, the 'A' of
// AUTHORIZATION, the '-' of an option after a blank), and the value must look like a
// secret, not a placeholder or code.

const (
	// maxUserinfo bounds the user and password a URL's '@' is followed back over.
	maxUserinfo = 386
	// maxScheme bounds a URL's scheme.
	maxScheme = 32
)

var (
	// A password in a URL, any scheme: scheme://user:password@ (the user may be empty, as
	// in redis://:password@host), also with its slashes escaped as a JSON string writes
	// them (postgresql:\/\/…). A password holding '@' or '/' must be percent-encoded, as
	// RFC 3986 says; one that is not is cut there.
	ruleURLPassword = &rule{id: "url-password", kind: kindURL, window: maxScheme + 3*2 + maxUserinfo + 8, toAnchor: true, check: credentialCheck,
		re: lazyRegexp(`(?:^|[^A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}:(?:/|\\/){2}[^\s/?#@"'<>\\:]{0,128}:([^\s/?@"'<>\\]{1,256})@`)}
	// A token as a URL's user, without a password (https://<token>@github.com/, as git's
	// insteadOf and CI clone URLs hold one): 20 characters or more that look random.
	ruleURLToken = &rule{id: "url-token", kind: kindURL, window: maxScheme + 3*2 + maxUserinfo + 8, toAnchor: true, check: tokenCheck,
		re: lazyRegexp(`(?:^|[^A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}:(?:/|\\/){2}([^\s/?#@"'<>\\:]{20,256})@`)}
	rulesURL   = []*rule{ruleURLPassword, ruleURLToken}
	rulesTeams = []*rule{ruleTeams}
)

// checkAt: the credentials of a URL, from the '@' that ends them, and Teams' webhook,
// whose path holds an '@'.
func checkAt(c []byte, i int) (int, []*rule) {
	// Teams: "webhookb2/", a 36-character id, then the '@'.
	if i >= 46 && string(c[i-46:i-36]) == "webhookb2/" {
		lo := max(0, i-200)
		if j := bytes.LastIndex(c[lo:i-36], []byte("https://")); j >= 0 {
			return lo + j, rulesTeams
		}
		return 0, nil
	}
	u := i // the user's start
	colon := false
	for u > 0 && i-u < maxUserinfo && userinfoSet[c[u-1]] {
		u--
		colon = colon || c[u] == ':'
	}
	if !colon && i-u < 20 {
		return 0, nil // a user alone (ssh://git@host) too short to be a token
	}
	var p int // the scheme's ':'
	switch {
	case u >= 3 && c[u-1] == '/' && c[u-2] == '/' && c[u-3] == ':':
		p = u - 3
	case u >= 5 && string(c[u-5:u]) == `:\/\/`:
		p = u - 5
	default:
		return 0, nil
	}
	st := p
	for st > 0 && p-st <= maxScheme && schemeSet[c[st-1]] {
		st--
	}
	if st == p {
		return 0, nil
	}
	return st, rulesURL
}

var (
	// userinfoSet holds the bytes the URL rules accept in a password: all but white space,
	// the delimiters of a URL's parts (/?@<>), quotes and '\'. A '#', which would start a
	// fragment, is accepted: passwords hold one unencoded.
	userinfoSet = func() *[256]bool {
		t := byteSet("\t\n\f\r /?@\"'<>\\")
		for b := range t {
			t[b] = !t[b]
		}
		return t
	}()
	schemeSet = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
)

var (
	// An Authorization header's bearer token (also "token", as GitHub's API takes one):
	// "Authorization: Bearer <token>" in a curl command, an HTTP file, a JSON or YAML
	// map of headers, git's http.extraheader.
	ruleAuthToken = &rule{id: "authorization-token", kind: kindAuthorization, window: 320, check: tokenCheck,
		re: lazyRegexp(`(?:\b[Aa]uthorization|\bAUTHORIZATION)(?:\\?["'])?[ \t]{0,16}[:=][ \t]{0,16}(?:\\?["'])?[ \t]{0,16}(?i:bearer|token|api-token)[ \t]{1,16}([\w=~@.+/-]{12,1000})`)}
	// An Authorization header's basic credentials: base64 of user:password.
	ruleAuthBasic = &rule{id: "authorization-basic", kind: kindAuthorization, window: 320, check: basicCheck,
		re: lazyRegexp(`(?:\b[Aa]uthorization|\bAUTHORIZATION)(?:\\?["'])?[ \t]{0,16}[:=][ \t]{0,16}(?:\\?["'])?[ \t]{0,16}(?i:basic)[ \t]{1,16}([A-Za-z0-9+/]{4,1000}={0,2})`),
		// RFC 7617's example, Aladdin:open sesame.
		allow: []string{"QWxhZGRpbjpvcGVuIHNlc2FtZQ=="}}
	rulesAuthorization = []*rule{ruleAuthToken, ruleAuthBasic}
)

// checkAuthorization: the header's name Authorization or authorization, from its 'z'
// (AUTHORIZATION is checkA's).
func checkAuthorization(c []byte, i int) (int, []*rule) {
	if i < 7 || i+6 > len(c) {
		return 0, nil
	}
	switch string(c[i-7 : i+6]) {
	case "Authorization", "authorization":
		if assignedAt(c, i+6) {
			return i - 7, rulesAuthorization
		}
	}
	return 0, nil
}

// assignedAt reports whether c[j:] may open what the Authorization rules want after the
// name: an optional quote (escaped or not), blanks, then ':' or '='. Go's header code
// names the header far more often than it assigns it (Header.Get("Authorization")), and
// this rules those out without running the two expressions over 320 bytes. It accepts
// more blanks than the expressions, which still decide.
func assignedAt(c []byte, j int) bool {
	if j+1 < len(c) && c[j] == '\\' && (c[j+1] == '"' || c[j+1] == '\'') {
		j += 2
	} else if j < len(c) && (c[j] == '"' || c[j] == '\'') {
		j++
	}
	for j < len(c) && (c[j] == ' ' || c[j] == '\t') {
		j++
	}
	return j < len(c) && (c[j] == ':' || c[j] == '=')
}

var (
	// curl's -u user:password (gitleaks' curl-auth-user, rules/curl.go), quoted or not.
	ruleCurlUser = &rule{id: "curl-auth-user", kind: kindPassword, check: credentialCheck, curl: true,
		re: lazyRegexp(`(?:^|\s)(?:-u|--user)(?:=|[ \t]{1,5})(?:"[^":\s]{0,256}:([^"]{1,256})"|'[^':\s]{0,256}:([^']{1,256})'|[^\s"':]{0,256}:([^\s"']{1,256}))`)}
	// curl's -u token: (a key as the user and no password, as Stripe's API takes it).
	ruleCurlToken = &rule{id: "curl-auth-user-token", kind: kindPassword, check: tokenCheck, curl: true,
		re: lazyRegexp(`(?:^|\s)(?:-u|--user)(?:=|[ \t]{1,5})["']?([\w.~+/=-]{16,256}):["']?(?:\s|$)`)}
	// curl's -H with a key or token header (gitleaks' curl-auth-header): X-API-Key,
	// X-Auth-Token, Api-Key, Private-Token (GitLab's) and the like.
	ruleCurlHeader = &rule{id: "curl-auth-header", kind: kindAPIHeader, check: tokenCheck, curl: true,
		re: lazyRegexp(`(?i)(?:^|\s)(?:-H|--header)(?:=|[ \t]{1,5})["']?(?:x-(?:[a-z]+-)?|private-)?(?:api-?)?(?:key|token)[ \t]*:[ \t]*([\w=~@.+/-]{8,512})`)}
	rulesCurl = []*rule{ruleCurlUser, ruleCurlToken, ruleCurlHeader}
)

// maxCurl bounds the command a curl is followed over: its line and the lines it continues
// on (a line ending in '\' for a shell, '^' for cmd, '`' for PowerShell).
const (
	maxCurl      = 4 << 10
	maxCurlLines = 16
)

// curlOption looks at the '-' at c[i], after a blank: when it starts -u, --user, -H or
// --header in a command that starts with the word curl on its line or on one of the
// lines it continues, the curl rules run over the command (once for all its options).
func (s *scan) curlOption(i int) {
	c := s.content
	if i+3 > len(c) || i < s.curlEnd {
		return
	}
	switch c[i+1] {
	case 'u', 'H':
		if b := c[i+2]; b != ' ' && b != '\t' && b != '=' && b != '"' && b != '\'' {
			return
		}
	case '-':
		if !bytes.HasPrefix(c[i+2:], []byte("user")) && !bytes.HasPrefix(c[i+2:], []byte("header")) {
			return
		}
	default:
		return
	}
	// Back over the line and the lines it continues, to the word curl.
	lo := max(0, i-maxCurl)
	end := i
	for range maxCurlLines {
		ls := bytes.LastIndexByte(c[lo:end], '\n') + 1 + lo
		if s.spend(end - ls) {
			return
		}
		if w := lastWord(c[ls:end], []byte("curl")); w >= 0 {
			s.curlAt(ls + w)
			return
		}
		if !continued(c, lo, ls-1) { // the line before must end in a continuation
			return
		}
		end = ls - 1
	}
}

// lastWord returns the index of the last w in b that stands as a word, or -1.
func lastWord(b, w []byte) int {
	for end := len(b); ; {
		i := bytes.LastIndex(b[:end], w)
		if i < 0 {
			return -1
		}
		if (i == 0 || !isWordByte(b[i-1])) && (i+len(w) == len(b) || !isWordByte(b[i+len(w)])) {
			return i
		}
		end = i
	}
}

// continued reports whether the line that ends at c[nl], a '\n', ends in a continuation
// ('\' for a shell, '^' for cmd, '`' for PowerShell, before an optional '\r'), looking at
// no byte before c[lo].
func continued(c []byte, lo, nl int) bool {
	j := nl
	if j > lo && c[j-1] == '\r' {
		j--
	}
	return j > lo && (c[j-1] == '\\' || c[j-1] == '^' || c[j-1] == '`')
}

// curlAt: the word curl at i; the rules run over the command, up to maxCurl bytes.
func (s *scan) curlAt(i int) {
	c := s.content
	end, limit := i, min(len(c), i+maxCurl)
	for range maxCurlLines {
		nl := bytes.IndexByte(c[end:limit], '\n')
		if nl < 0 {
			end = limit
			break
		}
		end += nl
		if !continued(c, i, end) {
			break
		}
		end++
	}
	s.curlEnd = max(end, i+1)
	for _, r := range rulesCurl {
		if s.match(r, i, end) < 0 && s.over {
			return
		}
	}
}

// passwordCheck is the check of the password rules: a value that looks like a password
// (passwordValue), and not a type after a colon, as Kotlin, Swift, TypeScript and
// Python write one ("password: String", "password: SecretStr").
func passwordCheck(w []byte, st, en int) bool {
	v := w[st:en]
	if !passwordValue(v) {
		return false
	}
	if isTypeName(v) {
		j := st - 1
		for j >= 0 && (w[j] == ' ' || w[j] == '\t' || w[j] == '"' || w[j] == '\'' || w[j] == '\\') {
			j--
		}
		if j >= 0 && w[j] == ':' {
			return false
		}
	}
	return true
}

// credentialCheck is the check of a password in a URL, a curl -u or a Basic header, where
// tests and documentation write placeholders in disguise (user:pa%2Fssword@,
// My%20Pass): percent-decoded, it must pass passwordValue, hold two of lower case, upper
// case and digits (punctuation does not count), and its letters must not spell a
// placeholder (password, secret, mypass…).
func credentialCheck(w []byte, st, en int) bool {
	v := w[st:en]
	if !passwordValue(v) {
		return false
	}
	d, err := url.PathUnescape(string(v))
	if err != nil {
		d = string(v) // not reached: passwordValue refuses a '%' without two hex digits
	}
	var classes byte
	letters := make([]byte, 0, 64) // on the stack: a placeholder is short
	for i := range len(d) {
		classes |= class(d[i])
		if isLetter(d[i]) {
			letters = append(letters, d[i]|0x20)
		}
	}
	return bits.OnesCount8(classes) >= 2 && !placeholders[string(letters)]
}

// placeholders are the words tests and examples write for a password.
var placeholders = map[string]bool{
	"password": true, "passwd": true, "pass": true, "pwd": true, "secret": true, "mypass": true,
	"mypassword": true, "yourpassword": true, "mysecret": true, "changeme": true, "changeit": true,
	"example": true, "test": true, "token": true, "xxx": true, "pw": true,
}

// isTypeName reports a capitalised name of letters, as a type is named, perhaps
// optional (String? in Kotlin and Swift, String! in Swift).
func isTypeName(v []byte) bool {
	if len(v) == 0 || v[0] < 'A' || v[0] > 'Z' {
		return false
	}
	if n := len(v) - 1; v[n] == '?' || v[n] == '!' {
		v = v[:n]
	}
	for _, c := range v {
		if !isLetter(c) {
			return false
		}
	}
	return true
}

// tokenCheck accepts a token that looks random: letters and digits, no code or
// placeholder, entropy above 3 bits a byte.
func tokenCheck(w []byte, st, en int) bool {
	v := w[st:en]
	if isCode(v) {
		return false
	}
	var letter, digit bool
	for _, c := range v {
		letter = letter || isLetter(c)
		digit = digit || c >= '0' && c <= '9'
	}
	return letter && digit && entropy(v) > 3
}

// basicCheck accepts basic credentials: base64 of user:password with a password that
// looks like one, or of a token and a colon.
func basicCheck(w []byte, st, en int) bool {
	dec := make([]byte, base64.StdEncoding.DecodedLen(en-st)) // on the stack when small
	n, err := base64.StdEncoding.Decode(dec, w[st:en])
	if err != nil {
		return false
	}
	dec = dec[:n]
	i := bytes.IndexByte(dec, ':')
	if i <= 0 {
		return false
	}
	for _, c := range dec {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	if i == len(dec)-1 {
		return tokenCheck(dec, 0, i)
	}
	return credentialCheck(dec, i+1, len(dec))
}
