package providers

import (
	"sync/atomic"
	"unicode/utf8"
)

// maxEventString caps one JSON string inside a streamed event, in raw (escaped) bytes. A
// server that sends the whole answer in one event sends one line of any length, and
// [sseReader] bounds an event at [maxSSEEvent]. Raw bytes are never fewer than the text
// they decode to, and a quarter over [MaxAnswerBytes] leaves room for escapes, so a cut
// string still fills the answer up to the cap, where the provider stops.
const maxEventString = MaxAnswerBytes + MaxAnswerBytes/4

// stringCap filters an SSE body as it is read, cutting any JSON string longer than max raw
// bytes: the rest of the string is dropped (never buffered) and its closing quote kept, so
// the event still parses. The cut falls outside an escape and on a UTF-8 boundary. State
// resets at each line end: a JSON string cannot hold a raw newline.
type stringCap struct {
	max int
	cut atomic.Bool // set when a string is cut

	inString bool
	skipping bool // dropping the rest of an over-long string
	slash    bool // the last byte began an escape
	hex      int  // hex digits of a \u escape still to come
	n        int  // raw bytes of the current string kept
}

// filter filters p in place and returns the length kept: the output is a subsequence of p.
func (s *stringCap) filter(p []byte) int {
	w := 0
	for _, c := range p {
		if c == '\n' {
			s.endLine()
			p[w] = c
			w++
			continue
		}
		if !s.inString {
			if c == '"' {
				s.inString, s.n = true, 0
			}
			p[w] = c
			w++
			continue
		}
		if !s.skipping && s.n >= s.max && !s.slash && s.hex == 0 && c != '"' && utf8.RuneStart(c) {
			s.skipping = true
			s.cut.Store(true)
		}
		switch {
		case s.slash:
			s.slash = false
			if c == 'u' {
				s.hex = 4
			}
		case s.hex > 0:
			s.hex--
		case c == '\\':
			s.slash = true
		case c == '"':
			s.inString, s.skipping = false, false
			p[w] = c
			w++
			continue
		}
		if !s.skipping {
			p[w] = c
			w++
			s.n++
		}
	}
	return w
}

// endLine resets the state at a line's end: a JSON string cannot hold a raw newline.
func (s *stringCap) endLine() { s.inString, s.skipping, s.slash, s.hex = false, false, false, 0 }
