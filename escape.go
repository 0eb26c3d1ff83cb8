package consult

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s safe to place in a line of text read by a terminal or an agent: C0
// and C1 control characters, DEL, the bidirectional controls (U+061C, U+200E, U+200F,
// U+202A-U+202E, U+2066-U+2069), the line and paragraph separators (U+2028, U+2029) and
// invalid UTF-8 are written as visible escapes (\n, \t, \x1b, \u202e, \xff); everything
// else, including all printable Unicode, is left alone. File names come from the user's
// tree and error messages from the upstream: raw, an ESC sequence could drive the terminal
// (OSC 52 writes the clipboard), a bidi control could reorder what is shown and a newline
// could forge a report line. A clean s is returned as is, without allocating.
func Printable(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unprintable(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unprintable(r, size):
			b.WriteString(s[i : i+size])
		case size == 1 && r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unprintable reports whether the rune r, decoded from size bytes, must be escaped.
func unprintable(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1: // invalid UTF-8
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}
