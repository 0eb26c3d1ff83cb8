package secrets

import (
	"bytes"
	"encoding/binary"
	"iter"
	"math"
	"slices"
)

// Held says why Scan holds a whole file back; 0 when it does not.
type Held int

// The reasons Scan holds a file back.
const (
	// HeldPrivateKey: a PEM private key block (see PrivateKey).
	HeldPrivateKey Held = iota + 1
	// HeldEncodedKey: a PEM private key block encoded in base64, as a kubeconfig's
	// client-key-data or a Kubernetes Secret's tls.key holds one.
	HeldEncodedKey
	// HeldPuTTYKey: a PuTTY private key ("PuTTY-User-Key-File-" and its private lines).
	HeldPuTTYKey
	// HeldJWK: a private JSON Web Key (a "d" member beside "kty").
	HeldJWK
	// HeldPasswordHashes: password hashes in the shadow or htpasswd format
	// (name:$6$salt$hash:).
	HeldPasswordHashes
	// HeldUnchecked: more candidates than the scan checks (see budget): a file made of
	// token prefixes or names, built to make the scan run long, is held back rather than
	// sent with candidates unchecked.
	HeldUnchecked
)

// Scan is what a gatherer wants of a file in one call: when content holds key material or
// password hashes (see Held) it says why and redacts nothing (the file is held back
// whole); otherwise it returns content with every high-confidence secret (see the package
// documentation for the rules) replaced by "[REDACTED <kind>]", and the distinct kinds
// found, sorted. With nothing found it returns content itself, without copying or
// allocating, and nil. Content with more candidates than a scan checks (HeldUnchecked)
// gives nil, nil and HeldUnchecked.
func Scan(content []byte) (out []byte, kinds []string, held Held) {
	return scanContent(content, true, 0)
}

// maxDepth bounds how many times base64 inside base64 is decoded (a Kubernetes Secret's
// .dockerconfigjson holds a docker configuration whose auths hold user:password).
const maxDepth = 2

func scanContent(content []byte, keys bool, depth int) ([]byte, []string, Held) {
	s := scan{content: content, keys: keys, depth: depth}
	var found, byProbe [1024]int32 // enough for most files
	hits := collect(content, found[:0], byProbe[:0])
	if h := s.find(&hits); h != 0 {
		return nil, nil, h
	}
	if h := s.encoded(&hits); h != 0 {
		return nil, nil, h
	}
	if s.spans == nil {
		return content, nil, 0
	}
	out, kinds := s.redact()
	return out, kinds, 0
}

// find calls s.at for each candidate of each anchor, anchor by anchor, and reports why a
// hit holds the file back, or 0.
func (s *scan) find(hits *hitList) Held {
	for k := range anchors {
		for i := range hits.of(s.content, anchors[k].b) {
			if h := s.at(k, i); h != 0 {
				return h
			}
			if s.over {
				return HeldUnchecked
			}
		}
	}
	return 0
}

// indexes yields the index of every sep in c, in order.
func indexes(c []byte, sep ...byte) iter.Seq[int] {
	return func(yield func(int) bool) {
		for off := 0; off < len(c); {
			i := bytes.Index(c[off:], sep)
			if i < 0 || !yield(off+i) {
				return
			}
			off += i + len(sep)
		}
	}
}

// A probe is a byte the scan looks for, and near the bytes that may stand at rel (-1 or
// +1) from it where its check has anything to look at: a candidate. One pass over the
// content finds the candidates of every probe by the pairs of bytes they make.
type probe struct {
	b    byte
	rel  int
	near *[256]bool
}

// pairs marks by c[j] | c[j+1]<<8 the candidates a pair of bytes makes: 1 for c[j] (a
// probe with a near byte after it, or the dash of "--": at looks for a private key's
// marker at every dash), 2 for c[j+1] (one with a near byte before it). 64 KiB: a bitmap
// would cost a shift and a mask more a pair, and text uses a quarter of the table.
// rankOf numbers the probes, by their byte, for hitList.
var pairs, rankOf = func() (t *[1 << 16]uint8, rank [256]int) {
	t = new([1 << 16]uint8)
	t['-'|'-'<<8] = 1
	for r, p := range allProbes() {
		rank[p.b] = r
		for y := range 256 {
			if p.near[y] && p.rel > 0 {
				t[int(p.b)|y<<8] |= 1
			} else if p.near[y] {
				t[y|int(p.b)<<8] |= 2
			}
		}
	}
	return t, rank
}()

// allProbes returns the anchors' probes and encoded.go's, numProbes in all.
func allProbes() (all []*probe) {
	for k := range anchors {
		all = append(all, &anchors[k].probe)
	}
	for k := range encodedAnchors {
		all = append(all, &encodedAnchors[k].probe)
	}
	return append(all, &pemProbe, &derProbe)
}

const numProbes = len(anchors) + len(encodedAnchors) + 2

// candidates yields, in increasing order, the index of every candidate in c (those of the
// probe only, when only is not 0). It looks up seven pairs at a time, and each of the seven
// only where one of them is marked.
func candidates(c []byte, only byte, yield func(int) bool) {
	t, j := pairs, 0
	for rest := c; len(rest) >= 8; rest = rest[7:] {
		le := binary.LittleEndian
		if t[le.Uint16(rest)]|t[le.Uint16(rest[1:])]|t[le.Uint16(rest[2:])]|t[le.Uint16(rest[3:])]|
			t[le.Uint16(rest[4:])]|t[le.Uint16(rest[5:])]|t[le.Uint16(rest[6:])] != 0 {
			for m := range 7 {
				if t[le.Uint16(rest[m:])] != 0 && !pairAt(c, j+m, only, yield) {
					return
				}
			}
		}
		j += 7
	}
	for ; j+1 < len(c); j++ {
		if !pairAt(c, j, only, yield) {
			return
		}
	}
}

// pairAt yields the candidates the pair c[j], c[j+1] makes, c[j] first, but for a c[j] the
// pair before made (a dash after a near byte and before a dash).
func pairAt(c []byte, j int, only byte, yield func(int) bool) bool {
	le := binary.LittleEndian
	v := pairs[le.Uint16(c[j:])]
	if v&1 != 0 && (only == 0 || only == c[j]) && (j == 0 || pairs[le.Uint16(c[j-1:])]&2 == 0) && !yield(j) {
		return false
	}
	return v&2 == 0 || only != 0 && only != c[j+1] || yield(j+1)
}

// maxHits bounds the candidates a hitList keeps: past it (tens of megabytes of code, or a
// file made of candidates), each probe makes a pass of its own.
const maxHits = 1 << 16

// A hitList holds the candidates of a content by probe, so that each probe's checks run in
// the order of the content and the probes' in the order of the scan: those of the probe of
// rank r (rankOf) are at[from[r]:from[r+1]]. at is nil past maxHits.
type hitList struct {
	at   []int32
	from [numProbes + 1]int32
}

// collect makes the hitList of c with one pass, keeping the candidates in found in the
// order of c, then in byProbe by probe.
func collect(c []byte, found, byProbe []int32) (h hitList) {
	if len(c) > math.MaxInt32 {
		return h
	}
	candidates(c, 0, func(i int) bool {
		found = append(found, int32(i))
		return len(found) < maxHits
	})
	if len(found) >= maxHits {
		return h
	}
	for _, i := range found {
		h.from[rankOf[c[i]]+1]++
	}
	for r := range numProbes {
		h.from[r+1] += h.from[r]
	}
	next := h.from
	h.at = slices.Grow(byProbe[:0], len(found))[:len(found)]
	for _, i := range found {
		r := rankOf[c[i]]
		h.at[next[r]] = i
		next[r]++
	}
	return h
}

// of yields the candidates of probe b in c, in increasing order.
func (h *hitList) of(c []byte, b byte) iter.Seq[int] {
	return func(yield func(int) bool) {
		if h.at == nil {
			candidates(c, b, yield)
			return
		}
		r := rankOf[b]
		for _, i := range h.at[h.from[r]:h.from[r+1]] {
			if !yield(int(i)) {
				return
			}
		}
	}
}

// at looks at anchors[k] found at content[i]: it records the secrets a rule finds there and
// reports why the file is held back from there (when the scan looks for keys), or 0. Hits
// may come in any order across anchors, but those of one anchor come in increasing order.
func (s *scan) at(k, i int) Held {
	c := s.content
	a := &anchors[k]
	// The dash anchor meets every "-----BEGIN " too: the key check rides on it. It is made
	// even inside a secret just found, which a token's trailing dashes may run into.
	if s.keys && k == dashAnchor && i+len(pemBegin) <= len(c) && c[i+1] == '-' &&
		bytes.HasPrefix(c[i:], pemBegin) && !s.spend(keyDataWindow) && privateKeyAt(c, i) {
		return HeldPrivateKey
	}
	// The byte beside the anchor rules most hits out.
	if j := i + a.rel; j < 0 || j >= len(c) || !a.near[c[j]] || i < s.next[k] {
		return 0
	}
	switch {
	case k == dollarAnchor:
		if s.keys && shadowAt(c, i) {
			return HeldPasswordHashes
		}
		return 0
	case k == dashAnchor && c[i-1] == 'Y':
		if s.keys && s.puttyAt(i) {
			return HeldPuTTYKey
		}
		return 0
	case k == dashAnchor && (c[i-1] == ' ' || c[i-1] == '\t'):
		s.curlOption(i)
		return 0
	}
	if a.check != nil {
		if start, rules := a.check(c, i); rules != nil {
			if end := s.verify(start, i, rules); end > 0 {
				// The anchor's later hits inside the secrets just found are not looked at.
				s.next[k] = max(s.next[k], end)
			}
		}
	}
	if a.vendors != nil {
		s.vendorsAt(k, i)
	}
	return 0
}

// A span is a secret to replace: content[start:end], of kind.
type span struct {
	start, end int
	kind       string
}

type scan struct {
	content []byte
	keys    bool // look for what holds a file back too
	depth   int  // how many base64 decodings content is inside
	// puttyFrom is where the next search for a PuTTY key's private lines starts.
	puttyFrom int
	spans     []span
	// next holds, for each anchor, where its next hit may be: hits inside a secret that
	// hit found are passed over.
	next [len(anchors)]int
	// curlEnd is the end of the last curl command the curl rules ran over.
	curlEnd int
	// work counts the bytes the checks beyond the anchor passes have looked at (see
	// spend); over is set once it passes the budget.
	work int
	over bool
}

// budget is how many bytes a scan's checks may look at beyond the pass over the content:
// each run of a rule's expression over its window, each private key's data window, each
// decoding. The files of $GOROOT/src need at most 1.2 times their size, all under the 256 KiB
// floor; a file of nothing but real tokens, one a line, 1.15 times. A file made of
// candidates ("sk-ant-api03-sk-ant-api03-…", "password=password=…") would cost minutes of
// CPU at the 16 MiB cap without it, and costs a few seconds at most with it.
func (s *scan) budget() int { return len(s.content)/4 + 256<<10 }

// spend counts n bytes of work and reports whether the scan is over its budget.
func (s *scan) spend(n int) bool {
	s.work += n
	if s.work > s.budget() {
		s.over = true
	}
	return s.over
}

const (
	maxBefore = 256 // how far back a token's start is looked for
	maxToken  = 512 // how far a token is followed; longer ones are redacted up to here
)

// verify runs rules over the token starting at start (its anchor byte at anchor) and records
// the secrets found. It returns the end of the last one, or -1.
func (s *scan) verify(start, anchor int, rules []*rule) int {
	c := s.content
	// One byte before the token for \b; the token's characters and two bytes after for
	// the trailing delimiter (`\n` written as two characters) or end of text. The token is
	// followed from the anchor: a rule's prefix may hold a byte that is not a token's
	// (gitleaks' "xoxe.xoxb-" matches any byte for the dot).
	lo := max(start-1, 0)
	hi := max(start, anchor)
	for hi < len(c) && hi-start < maxToken && isTokenByte(c[hi]) {
		hi++
	}
	hi = min(hi+2, len(c))
	last := -1
	for _, r := range rules {
		end := hi
		if r.window > 0 { // a keyword rule: the name, the separator and the value
			end = min(start+r.window, len(c))
			if r.toAnchor {
				end = min(end, anchor+1)
			}
		}
		last = max(last, s.match(r, lo, end))
		if s.over {
			return -1
		}
	}
	return last
}

// match runs r over content[lo:hi] and records the secrets it finds there. It returns the
// end of the last one, or -1.
func (s *scan) match(r *rule, lo, hi int) int {
	if s.spend(hi - lo) {
		return -1
	}
	w := s.content[lo:hi]
	last := -1
	for _, loc := range r.re().FindAllSubmatchIndex(w, -1) {
		if st, en, ok := r.secret(w, loc); ok {
			s.spans = append(s.spans, span{lo + st, lo + en, r.kind})
			last = max(last, lo+en)
		}
	}
	return last
}

// isTokenByte reports a byte that may be part of a token or a webhook URL.
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '/' || c == '+' || c == '=' || c == ':' || c == '~'
}

// redact builds the copy with every span replaced, overlapping spans merged under the
// kind of the first; of spans that start together, a provider's kind comes first (a
// Stripe key as curl's -u user is a "Stripe secret key", not a "password").
func (s *scan) redact() ([]byte, []string) {
	slices.SortFunc(s.spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return genericKind(a.kind) - genericKind(b.kind)
	})
	var out []byte
	var kinds []string
	prev := 0
	for i := 0; i < len(s.spans); {
		sp := s.spans[i]
		i++
		for i < len(s.spans) && s.spans[i].start < sp.end {
			sp.end = max(sp.end, s.spans[i].end)
			i++
		}
		if out == nil {
			out = make([]byte, 0, len(s.content))
		}
		out = append(out, s.content[prev:sp.start]...)
		out = append(out, "[REDACTED "...)
		out = append(out, sp.kind...)
		out = append(out, ']')
		prev = sp.end
		if !slices.Contains(kinds, sp.kind) {
			kinds = append(kinds, sp.kind)
		}
	}
	out = append(out, s.content[prev:]...)
	slices.Sort(kinds)
	return out, kinds
}

// genericKind is 1 for the kinds that say where a secret stands rather than whose it is.
func genericKind(kind string) int {
	switch kind {
	case kindPassword, kindURL, kindAuthorization, kindAPIHeader:
		return 1
	}
	return 0
}

// An anchor is a probe for redact.go's checks: the check that, given the content and the
// anchor's index, returns where a candidate token starts and the rules to try, or nil; and
// the table of the vendors (vendors.go) whose prefix holds the byte, by the byte at rel.
type anchor struct {
	probe
	check   func(c []byte, i int) (start int, rules []*rule)
	vendors *vendorTable
}

// anchors. The pass over the content is shared; each anchor costs a call of at for each
// of its candidates, which code makes where a near byte is common beside it ("ok" is one
// pair in 980 in net/http, the "iz" of size one in 2,300). A prefix whose every pair is
// common is left out ("s." of Vault's hvs. is one pair in 430).
var anchors = [...]anchor{
	{probe{'$', -1, byteSet(":")}, nil, nil}, // name:$6$ (shadowAt)
	// sk- glpat- xox?- xapp- PuTTY-, curl's options after a blank, and the vendors'
	{probe{'-', -1, vendorNear('-', "kKtbBpPeEaArRoOsSY \t")}, checkDash, vendorTables['-']},
	{probe{'k', -1, byteSet("o")}, checkWebhook, nil}, // hooks
	// AKIA ASIA ABIA ACCA A3T AIza SecretAccessKey AccountKey SharedAccessKey AUTHORIZATION,
	// and the vendors'
	{probe{'A', +1, vendorNear('A', "KSBC3IcU")}, checkA, vendorTables['A']},
	// gh?_ npm_ sk_ rk_ github_ secret_, and the vendors'
	{probe{'_', -1, vendorNear('_', "pousrmMkKbBtT")}, checkUnderscore, vendorTables['_']},
	{probe{'w', -1, byteSet("sSpP")}, checkPassword, nil}, // password passwd pwd
	{probe{'W', -1, byteSet("sSpP")}, checkPassword, nil}, // PASSWORD PASSWD PWD
	{probe{'@', -1, userinfoSet}, checkAt, nil},           // scheme://user:password@ and Teams' webhook
	{probe{'~', -1, vendorNear('~', "")}, nil, vendorTables['~']},
	{probe{'G', -1, vendorNear('G', "")}, nil, vendorTables['G']},
	{probe{'z', -1, byteSet("i")}, checkAuthorization, nil}, // Authorization authorization
}

// dollarAnchor and dashAnchor are the indexes in anchors of '$', which the password hash
// check rides on, and of '-', which the private key checks ride on.
const (
	dollarAnchor = 0
	dashAnchor   = 1
)

func byteSet(s string) *[256]bool {
	var t [256]bool
	for i := range len(s) {
		t[s[i]] = true
	}
	return &t
}

var (
	rulesAzure     = []*rule{ruleAzureKey}
	rulesAWSSecret = []*rule{ruleAWSSecret}
	rulesPassword  = []*rule{rulePassword}
	rulesXML       = []*rule{rulePasswordXML}
	rulesRouter    = []*rule{ruleOpenRouter}
	rulesAWS       = []*rule{ruleAWS}
	rulesOpen      = []*rule{ruleOpenAI}
	rulesGoog      = []*rule{ruleGoogle}
)

// checkA: AWS access key ids (AKIA, ASIA, ABIA, ACCA, A3T), Google API keys (AIza) and
// the names SecretAccessKey, AccountKey, SharedAccessKey and AUTHORIZATION.
func checkA(c []byte, i int) (int, []*rule) {
	if c[i+1] == 'U' {
		if bytes.HasPrefix(c[i:], []byte("AUTHORIZATION")) && assignedAt(c, i+len("AUTHORIZATION")) {
			return i, rulesAuthorization
		}
		return 0, nil
	}
	if c[i+1] == 'c' {
		if i >= 6 && string(c[i-5:i]) == "ecret" && (c[i-6] == 's' || c[i-6] == 'S') && bytes.HasPrefix(c[i:], []byte("AccessKey")) {
			return i - 6, rulesAWSSecret
		}
		if bytes.HasPrefix(c[i:], []byte("AccountKey")) {
			return i, rulesAzure
		}
		if i >= 6 && string(c[i-6:i]) == "Shared" && bytes.HasPrefix(c[i:], []byte("AccessKey")) {
			return i - 6, rulesAzure
		}
		return 0, nil
	}
	if i+20 > len(c) || i > 0 && isWordByte(c[i-1]) {
		return 0, nil
	}
	switch string(c[i : i+4]) {
	case "AKIA", "ASIA", "ABIA", "ACCA":
		return i, rulesAWS
	case "AIza":
		return i, rulesGoog
	}
	if c[i+1] == '3' && c[i+2] == 'T' {
		return i, rulesAWS
	}
	return 0, nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

var (
	rulesGitHubPAT     = []*rule{ruleGitHubPAT}
	rulesGitHubOAuth   = []*rule{ruleGitHubOAuth}
	rulesGitHubApp     = []*rule{ruleGitHubApp}
	rulesGitHubRefresh = []*rule{ruleGitHubRefresh}
	rulesGitHubFine    = []*rule{ruleGitHubFine}
	rulesNpm           = []*rule{ruleNpm}
	rulesStripe        = []*rule{ruleStripe}
)

// checkUnderscore: GitHub (ghp_ gho_ ghu_ ghs_ ghr_ github_pat_), npm (npm_, any case),
// Stripe (sk_ rk_ followed by test_ live_ prod_) and the names secret_key and
// secret_access_key (any case).
func checkUnderscore(c []byte, i int) (int, []*rule) {
	if i < 2 || i+12 > len(c) {
		return 0, nil
	}
	if c[i-1] == 'k' && (c[i-2] == 's' || c[i-2] == 'r') {
		switch string(c[i+1 : i+6]) {
		case "test_", "live_", "prod_":
			return i - 2, rulesStripe
		}
		return 0, nil
	}
	if i >= 6 && hasPrefixFold(c[i-6:], "secret") {
		return i - 6, rulesAWSSecret
	}
	if i < 3 {
		return 0, nil
	}
	if c[i-3] == 'g' && c[i-2] == 'h' {
		switch c[i-1] {
		case 'p':
			return i - 3, rulesGitHubPAT
		case 'o':
			return i - 3, rulesGitHubOAuth
		case 'u', 's':
			return i - 3, rulesGitHubApp
		case 'r':
			return i - 3, rulesGitHubRefresh
		}
		return 0, nil
	}
	if hasPrefixFold(c[i-3:], "npm_") {
		return i - 3, rulesNpm
	}
	if i >= 6 && string(c[i-6:i+5]) == "github_pat_" {
		return i - 6, rulesGitHubFine
	}
	return 0, nil
}

var (
	rulesGitLab         = []*rule{ruleGitLabPAT, ruleGitLabRoutable}
	rulesAnthropic      = []*rule{ruleAnthropic}
	rulesAnthropicAdmin = []*rule{ruleAnthropicAdmin}
	rulesXoxb           = []*rule{ruleSlackBot, ruleSlackLegacyBot}
	rulesXoxbConfig     = []*rule{ruleSlackBot, ruleSlackLegacyBot, ruleSlackConfig}
	rulesXoxp           = []*rule{ruleSlackUser}
	rulesXoxpConfig     = []*rule{ruleSlackUser, ruleSlackConfig}
	rulesXoxe           = []*rule{ruleSlackUser, ruleSlackRefresh}
	rulesXoxar          = []*rule{ruleSlackWorkspace}
	rulesXoxos          = []*rule{ruleSlackLegacy}
	rulesXapp           = []*rule{ruleSlackApp}
)

// checkDash: GitLab (glpat-), OpenAI (sk- and "T3BlbkFJ" within the next 200 bytes),
// Anthropic (sk-ant-api03-, sk-ant-admin01-), OpenRouter (sk-or-v1-) and Slack (xoxb-
// xoxp- xoxe- xoxa- xoxr- xoxo- xoxs- xapp-, and xoxe.xoxb- xoxe.xoxp-).
func checkDash(c []byte, i int) (int, []*rule) {
	if i < 2 || i+9 > len(c) {
		return 0, nil
	}
	switch c[i-1] {
	case 'k':
		if c[i-2] == 's' {
			if bytes.HasPrefix(c[i+1:], []byte("ant-api03-")) {
				return i - 2, rulesAnthropic
			}
			if bytes.HasPrefix(c[i+1:], []byte("ant-admin01-")) {
				return i - 2, rulesAnthropicAdmin
			}
			if bytes.HasPrefix(c[i+1:], []byte("or-v1-")) {
				return i - 2, rulesRouter
			}
			if bytes.Contains(c[i+1:min(len(c), i+200)], []byte("T3BlbkFJ")) {
				return i - 2, rulesOpen
			}
		}
		return 0, nil
	case 't':
		if i >= 5 && string(c[i-5:i]) == "glpat" {
			return i - 5, rulesGitLab
		}
		return 0, nil
	}
	if i < 4 {
		return 0, nil
	}
	if hasPrefixFold(c[i-4:], "xapp") {
		return i - 4, rulesXapp
	}
	if !hasPrefixFold(c[i-4:], "xox") {
		return 0, nil
	}
	config := i >= 9 && hasPrefixFold(c[i-9:], "xoxe")
	switch c[i-1] | 0x20 {
	case 'b':
		if config {
			return i - 9, rulesXoxbConfig
		}
		return i - 4, rulesXoxb
	case 'p':
		if config {
			return i - 9, rulesXoxpConfig
		}
		return i - 4, rulesXoxp
	case 'e':
		return i - 4, rulesXoxe
	case 'a', 'r':
		return i - 4, rulesXoxar
	case 'o', 's':
		return i - 4, rulesXoxos
	}
	return 0, nil
}

var rulesWebhook = []*rule{ruleSlackWebhook}

// checkWebhook: "hooks.slack.com/" (gitleaks' '.' matches any byte), from the 'k' of hooks;
// the token starts at "https://" or "http://" when one comes before.
func checkWebhook(c []byte, i int) (int, []*rule) {
	if i < 3 || i+13 > len(c) || string(c[i-3:i+2]) != "hooks" || string(c[i+3:i+8]) != "slack" || string(c[i+9:i+12]) != "com" {
		return 0, nil
	}
	start := i - 3
	for _, p := range [...]string{"https://", "http://"} {
		if start >= len(p) && string(c[start-len(p):start]) == p {
			return start - len(p), rulesWebhook
		}
	}
	return start, rulesWebhook
}

var (
	rulesPasswordConn  = []*rule{rulePassword, ruleConnPassword}
	rulesPasswordQuery = []*rule{rulePassword, ruleQueryPassword}
	rulesConn          = []*rule{ruleConnPassword}
	rulesQuery         = []*rule{ruleQueryPassword}
)

// checkPassword: the names password and passwd (any case), from their 'w': in an XML tag,
// the window starts at the '<'; else at the start of the name that ends in them (at most
// 32 letters, digits, '_', '.', '-', as in mavenPassword or signing.password), or at the
// ';' before it in a connection string, or at the '?' or '&' before it in a URL's query.
// The name pwd counts only there.
func checkPassword(c []byte, i int) (int, []*rule) {
	if i >= 1 && i+1 < len(c) && c[i-1]|0x20 == 'p' && c[i+1]|0x20 == 'd' {
		j := i - 2
		for j >= 0 && (c[j] == ' ' || c[j] == '\t') {
			j--
		}
		switch {
		case j >= 0 && c[j] == ';':
			return j, rulesConn
		case i >= 2 && (c[i-2] == '?' || c[i-2] == '&'):
			return i - 2, rulesQuery
		}
		return 0, nil
	}
	if i < 4 || i+2 > len(c) || !hasPrefixFold(c[i-4:], "pass") {
		return 0, nil
	}
	end := i + 2 // past passwd
	if c[i+1]|0x20 != 'd' {
		if !hasPrefixFold(c[i+1:], "ord") {
			return 0, nil
		}
		end = i + 4 // past password
	}
	if i >= 5 && c[i-5] == '<' {
		return i - 5, rulesXML
	}
	// A separator must follow the name, after a closing quote (escaped or not) and blanks.
	for end < len(c) && (c[end] == '"' || c[end] == '\'' || c[end] == '\\' || c[end] == ' ' || c[end] == '\t') {
		end++
	}
	if end >= len(c) || c[end] != ':' && c[end] != '=' {
		return 0, nil
	}
	ks := i - 4
	for ks > 0 && i-4-ks < 32 && (isWordByte(c[ks-1]) || c[ks-1] == '.' || c[ks-1] == '-') {
		ks--
	}
	j := ks - 1
	for j >= 0 && (c[j] == ' ' || c[j] == '\t') {
		j--
	}
	switch {
	case j >= 0 && c[j] == ';':
		return j, rulesPasswordConn
	case ks > 0 && (c[ks-1] == '?' || c[ks-1] == '&'):
		return ks - 1, rulesPasswordQuery
	}
	return ks, rulesPassword
}
