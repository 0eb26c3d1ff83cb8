package secrets

import "bytes"

var puttyPrivate = []byte("Private-Lines:")

// puttyWindow is how far past "PuTTY-User-Key-File-" its private lines are looked for: the
// public lines of a 4096-bit RSA key come first and take about 1 KiB.
const puttyWindow = 16 << 10

// puttyAt reports whether the '-' at c[i] is the one of "PuTTY-User-Key-File-" opening a
// PuTTY private key: "Private-Lines:" follows within puttyWindow bytes, and key data
// (hasKeyData) within keyDataWindow bytes of it. A PPK parser names the marker and the
// field but has no key data after them. The scan remembers how far it has looked, so a
// file of markers costs one look at each byte, not one window per marker.
func (s *scan) puttyAt(i int) bool {
	c := s.content
	if i < 5 || !bytes.HasPrefix(c[i-5:], []byte("PuTTY-User-Key-File-")) {
		return false
	}
	end := min(len(c), i+puttyWindow)
	from := max(i, s.puttyFrom)
	if from >= end {
		return false
	}
	j := bytes.Index(c[from:end], puttyPrivate)
	if j < 0 {
		s.puttyFrom = max(end-len(puttyPrivate)+1, from)
		return false
	}
	j += from
	s.puttyFrom = j + 1 // the lines at j are looked at once
	data := c[j+len(puttyPrivate):]
	return hasKeyData(data[:min(len(data), keyDataWindow)])
}

const (
	maxUserName = 32 // the longest name a shadow line may start with
	minHash     = 20 // the shortest hash after the last '$' (MD5-crypt's is 22)
)

// shadowAt reports whether the '$' at c[i], after a ':', starts the password hash of a
// shadow or htpasswd line: a line starting with a user name (letters, digits, '_', '.',
// '-'), then ":$<id>$", then salt and hash ([./0-9A-Za-z] and '$', the hash after the last
// '$' at least minHash long), ending at a ':' or the end of the line. That is crypt(3)'s
// format for MD5, SHA-256, SHA-512, bcrypt, yescrypt and Apache's apr1.
func shadowAt(c []byte, i int) bool {
	n := 0
	for j := i - 2; j >= 0 && n <= maxUserName && isNameByte(c[j]); j-- {
		n++
	}
	if n == 0 || n > maxUserName {
		return false
	}
	// The line starts there: at the start of c, after a line end, a quote (a JSON string),
	// or an escaped line end ("\n", whose n the name took).
	if j := i - 1 - n; j > 0 && c[j-1] != '\n' && c[j-1] != '"' && !(c[j-1] == '\\' && c[j] == 'n') {
		return false
	}
	// "$<id>$": one to four letters or digits.
	j := i + 1
	for j < len(c) && j-i <= 5 && isLowerOrDigit(c[j]) {
		j++
	}
	if j == i+1 || j >= len(c) || c[j] != '$' {
		return false
	}
	hash := 0
	for j++; j < len(c); j++ {
		switch b := c[j]; {
		case b == '$':
			hash = 0
		case isCryptByte(b):
			hash++
		case b == ':' || b == '\n' || b == '\r':
			return hash >= minHash
		default:
			return false
		}
	}
	return hash >= minHash
}

func isNameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-'
}

func isLowerOrDigit(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

func isCryptByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '/'
}
