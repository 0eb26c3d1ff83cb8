package providers

import (
	"strings"
	"unicode/utf8"
)

// MaxAnswerBytes caps the answer text kept from one model call. An answer is held a few
// times on its way to the client (the text, the result, the saved record) and decoding
// takes several times its size, so an unbounded answer is an unbounded
// amount of memory; 8 MiB is about two million tokens of prose, far beyond any real answer.
// Past it the stream is closed and the rest dropped: nothing more is useful.
const MaxAnswerBytes = 8 << 20

// FinishAnswerCap is [Response.Finish] when the answer reached [MaxAnswerBytes] and the
// rest was dropped (distinct from "length", the model's own output limit).
const FinishAnswerCap = "answer_cap"

// answerText accumulates the answer of one stream up to [MaxAnswerBytes].
type answerText struct {
	b    strings.Builder
	full bool
}

// add appends as much of delta as fits under the cap, cut on a UTF-8 boundary, and returns
// the part kept. full reports that the cap has been reached: the caller stops reading.
func (a *answerText) add(delta string) (kept string, full bool) {
	if a.full {
		return "", true
	}
	if room := MaxAnswerBytes - a.b.Len(); len(delta) > room {
		delta = runePrefix(delta, room)
		a.full = true
	}
	a.b.WriteString(delta)
	if a.b.Len() >= MaxAnswerBytes {
		a.full = true
	}
	return delta, a.full
}

// Len is the number of bytes kept.
func (a *answerText) Len() int { return a.b.Len() }

// String returns the text kept.
func (a *answerText) String() string { return a.b.String() }

// runePrefix is s cut to at most n bytes on a UTF-8 boundary; n < len(s).
func runePrefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// truncated reports whether a finish reason means the answer is incomplete: the model's
// output limit ("length") or the answer cap.
func truncated(finish string) bool { return finish == "length" || finish == FinishAnswerCap }
