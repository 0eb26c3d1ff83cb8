package secrets

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// Base64 the scan decodes: where a private key block, a token or a JSON document is encoded,
// found by the first characters of its encoding, and docker's auth and a JSON Web Key's
// private member, found by their names in JSON.

const (
	// maxEncodedToken bounds what is decoded of a run that may hold a token: the longest
	// token the rules follow, encoded.
	maxEncodedToken = (maxToken + 2) / 3 * 4
	// maxEncoded bounds what is decoded of a run that may hold a private key block or a
	// JSON document: the marker and the key data window, encoded, with room to spare.
	maxEncoded = 8 << 10
	// maxEncodedAuth bounds what is decoded of docker's "auth": user:password.
	maxEncodedAuth = 1 << 10
	// minJWKMember is the shortest private member of a JSON Web Key looked at: an EC P-256
	// key's d has 43 characters.
	minJWKMember = 32
)

var (
	encodedPEM = []byte(base64.StdEncoding.EncodeToString(pemBegin)[:14]) // "-----BEGIN "
	jsonAuth   = []byte(`"auth"`)
	jsonKty    = []byte(`"kty"`)
	jsonD      = []byte(`"d"`)
)

// An encodedAnchor is a byte that stands at offset off of the first four characters of
// the base64 of a token's start ("ghp" is "Z2hw") or a JSON document's ("{\"" is "eyJ").
type encodedAnchor struct {
	b   byte
	off int
}

// encodedAnchors: 'Z' starts the encodings of gh?, git(hub_pat_) and glp(at-), 'Q' those of
// AKI ASI ABI ACC A3T and AIz, '2' is the second of c2s and c2t (sk- sk_), 'J' the third of
// eyJ ({"). Each is rare in source code; the encodings of the Slack, npm, Stripe restricted
// and webhook prefixes, whose bytes are not, are not looked for.
var encodedAnchors = [...]encodedAnchor{{'Z', 0}, {'Q', 0}, {'2', 1}, {'J', 2}}

// tokenStarts are the first three bytes of the tokens encodedAnchors find.
var tokenStarts = setOfStrings("ghp", "gho", "ghu", "ghs", "ghr", "git", "glp", "sk-", "sk_",
	"AKI", "ASI", "ABI", "ACC", "A3T", "AIz")

// encoded finds base64 that holds what the rules look for, decodes it (at most maxEncoded
// characters of a value) and looks again, at most maxDepth levels deep:
//
//   - the base64 of a PEM private key block, as a kubeconfig's client-key-data or a
//     Kubernetes Secret's tls.key holds (HeldEncodedKey);
//   - the base64 of a token, or of a JSON document holding one or holding docker's auths (a
//     Secret's .dockerconfigjson), redacted as "<kind> (base64)";
//   - in a JSON document: docker's "auth", the base64 of user:password, redacted as
//     "registry credentials", and a private JSON Web Key ("d" beside "kty", HeldJWK).
//
// A value is looked at only where it starts: after a byte outside base64's alphabets.
func (s *scan) encoded() Held {
	if s.depth >= maxDepth {
		return 0
	}
	c := s.content
	if s.keys {
		for off := 0; ; {
			i := bytes.Index(c[off:], encodedPEM)
			if i < 0 {
				break
			}
			i += off
			if !valueStart(c, i) {
				off = i + 1
				continue
			}
			end := stdEnd(c, i)
			if s.spend(min(end-i, maxEncoded)) {
				return HeldUnchecked
			}
			if PrivateKey(decode(c[i:end], maxEncoded)) {
				return HeldEncodedKey
			}
			off = i + 1
		}
	}
	for _, a := range encodedAnchors {
		for off := 0; ; {
			i := bytes.IndexByte(c[off:], a.b)
			if i < 0 {
				break
			}
			off += i + 1
			if h := s.encodedAt(off - 1 - a.off); h != 0 {
				return h
			}
			if s.over {
				return HeldUnchecked
			}
		}
	}
	if isJSON(c) || s.depth > 0 {
		return s.json()
	}
	return 0
}

// encodedAt looks at the value that may start at c[st] with the first bytes of a token or a
// JSON document encoded.
func (s *scan) encodedAt(st int) Held {
	c := s.content
	if st < 0 || st+16 > len(c) || !valueStart(c, st) {
		return 0
	}
	var head [3]byte
	if _, err := base64.RawStdEncoding.Decode(head[:], c[st:st+4]); err != nil {
		return 0
	}
	limit := maxEncodedToken
	switch {
	case head[0] == '{' && head[1] == '"':
		limit = maxEncoded
	case !tokenStarts[string(head[:])]:
		return 0
	}
	end := stdEnd(c, st)
	if s.spend(min(end-st, limit) + 64) {
		return 0 // encoded reports it
	}
	_, kinds, held := scanContent(decode(c[st:end], limit), s.keys, s.depth+1)
	switch held {
	case 0:
	case HeldUnchecked:
		return held
	default:
		return HeldEncodedKey
	}
	if kinds != nil {
		s.spans = append(s.spans, span{st, padEnd(c, end), strings.Join(kinds, ", ") + " (base64)"})
	}
	return 0
}

// json looks in a JSON document for docker's "auth" values and a JSON Web Key's private
// member.
func (s *scan) json() Held {
	c := s.content
	for off := 0; ; {
		i := bytes.Index(c[off:], jsonAuth)
		if i < 0 {
			break
		}
		off += i + len(jsonAuth)
		if st := memberValue(c, off); st > 0 {
			end := stdEnd(c, st)
			if s.spend(min(end-st, maxEncodedAuth) + 64) {
				return HeldUnchecked
			}
			if isUserPassword(decode(c[st:end], maxEncodedAuth)) {
				s.spans = append(s.spans, span{st, padEnd(c, end), kindRegistry})
			}
		}
	}
	if !s.keys || !bytes.Contains(c, jsonKty) {
		return 0
	}
	for off := 0; ; {
		i := bytes.Index(c[off:], jsonD)
		if i < 0 {
			return 0
		}
		off += i + len(jsonD)
		if st := memberValue(c, off); st > 0 {
			end := st
			for end < len(c) && isBase64URL(c[end]) {
				end++
			}
			if end-st >= minJWKMember {
				return HeldJWK
			}
		}
	}
}

// kindRegistry names docker's auth, user:password in base64.
const kindRegistry = "registry credentials"

// memberValue returns where the string value of a JSON member starts when c[i:] is what
// follows its name (`: "`), or -1.
func memberValue(c []byte, i int) int {
	for i < len(c) && (c[i] == ' ' || c[i] == '\t') {
		i++
	}
	if i >= len(c) || c[i] != ':' {
		return -1
	}
	i++
	for i < len(c) && (c[i] == ' ' || c[i] == '\t' || c[i] == '\n' || c[i] == '\r') {
		i++
	}
	if i >= len(c) || c[i] != '"' {
		return -1
	}
	return i + 1
}

// isJSON reports content whose first byte other than white space opens an object or an
// array.
func isJSON(c []byte) bool {
	t := bytes.TrimLeft(c[:min(len(c), 64)], " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// valueStart reports whether a value may start at c[i]: at the start of c or after a byte
// outside base64's alphabets.
func valueStart(c []byte, i int) bool { return i == 0 || !isBase64URL(c[i-1]) }

// stdEnd returns the end of the standard base64 (without padding) that starts at c[i].
func stdEnd(c []byte, i int) int {
	for i < len(c) && isBase64(c[i]) && c[i] != '=' {
		i++
	}
	return i
}

// padEnd returns end past the padding ('=') that follows it, at most two.
func padEnd(c []byte, end int) int {
	for n := 0; n < 2 && end < len(c) && c[end] == '='; n++ {
		end++
	}
	return end
}

// decode decodes at most limit characters (a multiple of four) of the standard base64 enc,
// without its padding; what does not decode is left out.
func decode(enc []byte, limit int) []byte {
	if len(enc) > limit {
		enc = enc[:limit]
	} else if len(enc)%4 == 1 {
		enc = enc[:len(enc)-1] // not base64: one character cannot end it
	}
	out := make([]byte, base64.RawStdEncoding.DecodedLen(len(enc)))
	n, _ := base64.RawStdEncoding.Decode(out, enc)
	return out[:n]
}

// isUserPassword reports a decoded "user:password": printable ASCII with a ':' that has
// something before and after it.
func isUserPassword(b []byte) bool {
	i := bytes.IndexByte(b, ':')
	if i <= 0 || i == len(b)-1 {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func isBase64URL(c byte) bool { return isBase64(c) && c != '=' || c == '-' || c == '_' }

func setOfStrings(ss ...string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}
