package secrets

import "bytes"

var (
	pemBegin      = []byte("-----BEGIN ")
	pemPrivateKey = []byte("PRIVATE KEY")
	pemDashes     = []byte("-----")
)

const (
	// maxLabel bounds the text between "-----BEGIN " and the closing dashes.
	maxLabel = 64
	// keyDataWindow is how far past the marker key data is looked for: far enough for the
	// headers of an encrypted PKCS #1 or PGP block and for the quotes, commas and
	// indentation of a key written as code.
	keyDataWindow = 1024
	// minKeyData is the shortest run of base64 that counts as key data (a PEM line has 64).
	minKeyData = 40
	// minKeyEntropy is the Shannon entropy, in bits per byte, key data exceeds: 40 random
	// base64 characters have about 5, a long identifier about 4.
	minKeyEntropy = 4.5
)

// PrivateKey reports whether content holds a private key block anywhere in it: a
// "-----BEGIN <kind>PRIVATE KEY-----" marker (RSA, EC, DSA, OPENSSH, ENCRYPTED, plain,
// "PGP PRIVATE KEY BLOCK") followed within keyDataWindow bytes by key data. Key data is a
// run of at least 40 base64 characters that starts after a separator (a line end, real or
// escaped as in JSON, a quote, a space, a comma, a bracket) and mixes upper case, lower
// case and digits. That finds a PEM file, a JSON service-account file and a key written as
// code (Go or C string concatenation, a JS array of lines, Python implicit
// concatenation, a YAML block scalar), and leaves out code that only names the marker, such
// as a PEM parser: the identifiers and expressions that follow it are broken by dots,
// parentheses and spaces, and are not a 40-character mixed run.
func PrivateKey(content []byte) bool {
	for i := range indexes(content, pemBegin...) {
		if privateKeyAt(content, i) {
			return true
		}
	}
	return false
}

// privateKeyAt reports whether the "-----BEGIN " at content[i:] opens a private key block
// followed by key data.
func privateKeyAt(content []byte, i int) bool {
	rest := content[i+len(pemBegin):]
	end := bytes.Index(rest[:min(len(rest), maxLabel+len(pemDashes))], pemDashes)
	if end < 0 {
		return false
	}
	label := rest[:end]
	if !bytes.Contains(label, pemPrivateKey) || bytes.IndexByte(label, '\n') >= 0 {
		return false
	}
	data := rest[end+len(pemDashes):]
	return hasKeyData(data[:min(len(data), keyDataWindow)])
}

// hasKeyData reports a run of at least minKeyData base64 characters in b that starts after
// a separator, holds an upper-case letter, a lower-case letter and a digit, and looks
// random (entropy above minKeyEntropy).
func hasKeyData(b []byte) bool {
	for i := 0; i < len(b); {
		if !isBase64(b[i]) || !startsRun(b, i) {
			i++
			continue
		}
		j := i
		var classes byte
		for j < len(b) && isBase64(b[j]) {
			classes |= class(b[j])
			j++
		}
		if j-i >= minKeyData && classes == upper|lower|digit && entropy(b[i:j]) > minKeyEntropy {
			return true
		}
		i = j
	}
	return false
}

const (
	upper = 1 << iota
	lower
	digit
)

func class(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return upper
	case c >= 'a' && c <= 'z':
		return lower
	case c >= '0' && c <= '9':
		return digit
	}
	return 0
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// startsRun reports whether a run of base64 at b[i] follows a separator: the start of b, an
// escaped line end or tab (\n, \r, \t as written inside a string), or a byte that cannot
// continue a word or expression (anything but letters, digits, '_', '.', '$', '\\' and the
// base64 punctuation).
func startsRun(b []byte, i int) bool {
	if i == 0 {
		return true
	}
	switch p := b[i-1]; {
	case isBase64(p), p == '_', p == '.', p == '$':
		// An escape ends in a letter: "\n" + data.
		return (p == 'n' || p == 'r' || p == 't') && i >= 2 && b[i-2] == '\\'
	case p == '\\':
		return false
	}
	return true
}
