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
	dashes64 = []byte("LS0t") // base64 of "---"
	jsonAuth = []byte(`"auth"`)
	jsonKty  = []byte(`"kty"`)
	jsonD    = []byte(`"d"`)
)

// An encodedAnchor is a probe that stands at offset off of the first four characters of
// the base64 of a token's start ("ghp" is "Z2hw") or a JSON document's ("{\"" is "eyJ"); its
// near bytes are those beside it in the same encodings (TestEncodedAnchors): encodedAt
// decodes four characters into three bytes one to one, and with a line break among them
// (which the decoder passes over), only `{"`, from "eyJ".
type encodedAnchor struct {
	probe
	off int
}

// encodedAnchors: 'Z' starts the encodings of gh?, git(hub_pat_) and glp(at-), 'Q' those of
// AKI ASI ABI ACC A3T and AIz, '2' is the second of c2s and c2t (sk- sk_), 'J' the third of
// eyJ ({") and QUJJ (ABI). Each is rare in source code; the encodings of the Slack, npm,
// Stripe restricted and webhook prefixes, whose bytes are not, are not looked for.
var encodedAnchors = [...]encodedAnchor{{probe{'Z', +1, byteSet("2")}, 0}, {probe{'Q', +1, byteSet("TUV")}, 0},
	{probe{'2', -1, byteSet("Zc")}, 1}, {probe{'J', -1, byteSet("Uy")}, 2}}

// tokenStarts are the first three bytes of the tokens encodedAnchors find.
var tokenStarts = map[string]bool{"ghp": true, "gho": true, "ghu": true, "ghs": true, "ghr": true,
	"git": true, "glp": true, "sk-": true, "sk_": true, "AKI": true, "ASI": true, "ABI": true,
	"ACC": true, "A3T": true, "AIz": true}

var (
	// pemProbe finds "LS0t", the base64 of "---" (pemAt).
	pemProbe = probe{'L', +1, byteSet("S")}
	// derProbe finds the base64 of a DER SEQUENCE of 48 bytes or more (derAt).
	derProbe = probe{'M', +1, byteSet("CDEFGHI")}
)

// encoded finds base64 that holds what the rules look for, decodes it (at most maxEncoded
// characters of a value) and looks again, at most maxDepth levels deep:
//
//   - the base64 of a PEM private key block, as a kubeconfig's client-key-data or a
//     Kubernetes Secret's tls.key holds (HeldEncodedKey), also wrapped at 64 or 76
//     columns (openssl, GNU base64), and also where the block does not start the
//     encoded text (base64 of a file or a JSON document holding a key): see pemAt;
//   - a private key's DER body in base64 without a PEM block's markers (PKCS #8, PKCS #1,
//     SEC 1, PKCS #12), as an environment variable or a YAML value holds one: see derAt;
//   - the base64 of a token, or of a JSON document holding one or holding docker's auths (a
//     Secret's .dockerconfigjson), redacted as "<kind> (base64)";
//   - in a JSON document: docker's "auth", the base64 of user:password, redacted as
//     "registry credentials", and a private JSON Web Key ("d" beside "kty", HeldJWK).
//
// A value is looked at only where it starts: after a byte outside base64's alphabets.
func (s *scan) encoded(hits *hitList) Held {
	if s.depth >= maxDepth {
		return 0
	}
	c := s.content
	if s.keys {
		for i := range hits.of(c, pemProbe.b) {
			if h := s.pemAt(i); h != 0 {
				return h
			}
		}
		for i := range hits.of(c, derProbe.b) {
			if h := s.derAt(i); h != 0 {
				return h
			}
		}
	}
	for _, a := range encodedAnchors {
		for i := range hits.of(c, a.b) {
			if h := s.encodedAt(i - a.off); h != 0 {
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
	for i := range indexes(c, jsonAuth...) {
		if st := memberValue(c, i+len(jsonAuth)); st > 0 {
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
	for i := range indexes(c, jsonD...) {
		if st := memberValue(c, i+len(jsonD)); st > 0 {
			end := st
			for end < len(c) && isBase64URL(c[end]) {
				end++
			}
			if end-st >= minJWKMember {
				return HeldJWK
			}
		}
	}
	return 0
}

// pemAt looks at "LS0t", the base64 of "---", at c[i]: where a PEM block's marker is
// encoded, one of the three alignments of "-----BEGIN " holds "---" at the start of a
// group of four characters, so that decoding from there gives three to five dashes and
// "BEGIN ". It reports HeldEncodedKey when what follows is a private key block (see
// PrivateKey), decoded across the line breaks of wrapped base64.
func (s *scan) pemAt(i int) Held {
	c := s.content
	if !bytes.HasPrefix(c[i:], dashes64) {
		return 0
	}
	var buf [20]byte
	head := wrapped(buf[:0], c, i, len(buf))
	if len(head) < len(buf) {
		return 0
	}
	var dec [15]byte
	if _, err := base64.StdEncoding.Decode(dec[:], head); err != nil {
		return 0
	}
	rest := bytes.TrimLeft(dec[:], "-")
	if !bytes.HasPrefix(rest, pemBegin[5:]) {
		return 0
	}
	if s.spend(maxEncoded) {
		return HeldUnchecked
	}
	d := decode(wrapped(nil, c, i, maxEncoded), maxEncoded)
	d = bytes.TrimLeft(d, "-")
	block := append([]byte("-----"), d...)
	if PrivateKey(block) {
		return HeldEncodedKey
	}
	return 0
}

// pemContext is how far before a DER body a PEM block's marker is looked for.
const pemContext = 256

// derAt looks at the 'M' at c[i], which starts the base64 of a DER SEQUENCE: a value that
// starts there and whose first twelve bytes are those of a private key (derKey), as long
// as its length says (up to maxEncoded characters) and random, outside a PEM block, holds
// the file back.
func (s *scan) derAt(i int) Held {
	c := s.content
	if i+64 > len(c) || c[i+1] < 'C' || c[i+1] > 'I' || !valueStart(c, i) {
		return 0
	}
	var buf [16]byte
	head := wrapped(buf[:0], c, i, len(buf))
	if len(head) < len(buf) {
		return 0
	}
	var dec [12]byte
	if _, err := base64.StdEncoding.Decode(dec[:], head); err != nil {
		return 0
	}
	n, ok := derKey(dec[:])
	if !ok {
		return 0
	}
	// The body of a PEM block is judged by the block's label (PrivateKey): Go's tests
	// keep their keys under "-----BEGIN RSA TESTING KEY-----" so that scanners pass them.
	if bytes.Contains(c[max(0, i-pemContext):i], pemBegin) {
		return 0
	}
	want := min((n*4+2)/3, maxEncoded)
	if s.spend(want) {
		return HeldUnchecked
	}
	body := wrapped(nil, c, i, want)
	if len(body) < want || entropy(body) <= minKeyEntropy {
		return 0
	}
	return HeldEncodedKey
}

// derKey reports whether b, the first twelve bytes of a DER SEQUENCE, starts a private
// key, and its length with its header: a version (INTEGER 0, 1 or 3) followed by
//
//   - an AlgorithmIdentifier holding an OID: PKCS #8 (version 0, or 1 with a public key);
//   - a long INTEGER: PKCS #1 RSA (the modulus), DSA (p);
//   - an OCTET STRING of 20 to 66 bytes after version 1: SEC 1 EC;
//   - a SEQUENCE after version 3: PKCS #12.
//
// A certificate, a public key, a CSR or a signature starts otherwise (a SEQUENCE, or an
// INTEGER of more than one byte).
func derKey(b []byte) (int, bool) {
	if len(b) < 12 || b[0] != 0x30 {
		return 0, false
	}
	var n, h int
	switch b1 := b[1]; {
	case b1 < 0x80:
		n, h = int(b1), 2
	case b1 == 0x81:
		n, h = int(b[2]), 3
	case b1 == 0x82:
		n, h = int(b[2])<<8|int(b[3]), 4
	default:
		return 0, false
	}
	if b[h] != 0x02 || b[h+1] != 0x01 {
		return 0, false
	}
	v, next := b[h+2], b[h+3]
	switch {
	case v <= 1 && next == 0x30 && b[h+5] == 0x06:
	case v <= 1 && next == 0x02 && (b[h+4] == 0x81 || b[h+4] == 0x82):
	case v == 1 && next == 0x04 && b[h+4] >= 20 && b[h+4] <= 66:
	case v == 3 && next == 0x30:
	default:
		return 0, false
	}
	n += h
	return n, n >= 48
}

// wrapped appends to dst the base64 characters from c[i] on, at most n, across line
// breaks (real, or written \n as in a JSON string) and the blanks that indent the next
// line: a value wrapped at 64 or 76 columns read as one. It stops at padding or at any
// other byte.
func wrapped(dst, c []byte, i, n int) []byte {
	for i < len(c) && len(dst) < n {
		if b := c[i]; isBase64(b) && b != '=' {
			dst = append(dst, b)
			i++
			continue
		}
		j := i
		switch {
		case c[j] == '\n':
			j++
		case c[j] == '\r' && j+1 < len(c) && c[j+1] == '\n':
			j += 2
		case c[j] == '\\' && j+1 < len(c) && c[j+1] == 'n':
			j += 2
		case c[j] == '\\' && j+3 < len(c) && c[j+1] == 'r' && c[j+2] == '\\' && c[j+3] == 'n':
			j += 4
		default:
			return dst
		}
		for j < len(c) && (c[j] == ' ' || c[j] == '\t') {
			j++
		}
		if j == len(c) || !isBase64(c[j]) || c[j] == '=' {
			return dst
		}
		i = j
	}
	return dst
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
	out, _ := base64.RawStdEncoding.AppendDecode(nil, enc)
	return out
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
