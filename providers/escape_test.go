package providers

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// jsonContent is s as encoding/json writes it in a string (HTML escaping off), without
// the quotes.
func jsonContent(t testing.TB, s []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(s)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()[1 : b.Len()-2] // without the quotes and the newline
}

// checkEscape checks that escapedLen gives want's length and that appendEscaped appends s
// as want after what dst holds, leaving that untouched, whatever room dst has: none (it
// grows at once), half of what s needs (it grows midway), and enough (it does not grow).
func checkEscape(t testing.TB, s, want []byte) {
	if n := escapedLen(s); n != len(want) {
		t.Fatalf("escapedLen(%q) = %d, want %d", s, n, len(want))
	}
	head := []byte(`{"content":"`)
	for _, room := range []int{0, len(want) / 2, len(want) + 8} {
		dst := append(make([]byte, 0, len(head)+room), head...)
		got := appendEscaped(dst, s)
		if !bytes.Equal(got[:len(head)], head) || !bytes.Equal(got[len(head):], want) {
			t.Fatalf("appendEscaped(%q) with room for %d bytes:\n got  %s\n want %s%s", s, room, got, head, want)
		}
		if room == len(want)+8 && &got[0] != &dst[0] {
			t.Fatalf("appendEscaped(%q) grew a buffer with room enough", s)
		}
	}
}

// TestEscapeMatchesEncodingJSON: the message is escaped byte for byte as encoding/json
// escapes a string (HTML escaping off), and escapedLen is the length appended, for random
// inputs of up to several 8-byte words that put quotes, control
// characters, multi-byte and invalid UTF-8 anywhere in them.
func TestEscapeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "Z", " ", "~", "\x7f", "\"", "\\", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "<", "&",
		"é", "世", "🙂", "\u2028", "\u2029", "\xff", "\x80", "\xbf", "\xe2\x82", "\xf0\x9f"}
	rnd := rand.New(rand.NewPCG(1, 2))
	for k := range 3000 {
		pieces := rnd.IntN(40)
		if k%3 == 0 {
			pieces = rnd.IntN(200)
		}
		var b strings.Builder
		for range pieces {
			if rnd.IntN(3) == 0 {
				b.WriteString(alphabet[rnd.IntN(len(alphabet))])
			} else {
				b.WriteString("abcdefgh"[:1+rnd.IntN(8)])
			}
		}
		s := []byte(b.String())
		checkEscape(t, s, jsonContent(t, s))
	}
}

// TestEscapeEveryOffset: one byte or rune that needs care, put at every offset of inputs
// of 0 to 100 bytes of plain text, of tabs (two-byte escapes) and of \x01 (six-byte
// ones), so that it lands at every place of an 8-byte word and at both ends of the
// input, is escaped as encoding/json escapes it. The escaping starts no goroutine: the
// race detector would only make the 23,000 inputs take ten times longer.
func TestEscapeEveryOffset(t *testing.T) {
	if testrun.Race {
		t.Skip("runs without -race")
	}
	t.Parallel()
	odd := []string{"\"", "\\", "\n", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "🙂", "\u2028", "\u2029", "\xff", "\x80", "\xe2\x82"}
	for _, fill := range []string{"x", "\t", "\x01"} {
		if fill != "x" {
			odd = []string{"\"", "\r", "\x00", "é", "\u2028", "\xff"}
		}
		for size := range 101 {
			s := []byte(strings.Repeat(fill, size))
			checkEscape(t, s, jsonContent(t, s))
			for at := range size + 1 {
				for _, o := range odd {
					s := []byte(strings.Repeat(fill, at) + o + strings.Repeat(fill, size-at))
					checkEscape(t, s, jsonContent(t, s))
				}
			}
		}
	}
}

// TestEscapeNetHTTP: GOROOT/src/net/http's prompt, 2.3 MB of source with a byte to
// escape every ten or so, is escaped as encoding/json escapes it.
func TestEscapeNetHTTP(t *testing.T) {
	t.Parallel()
	prompt := []byte(files.NewPrompt(gatherNetHTTP(t).Files, "Why?").String())
	checkEscape(t, prompt, jsonContent(t, prompt))
}

func FuzzEscape(f *testing.F) {
	f.Add([]byte(awkwardText))
	f.Add([]byte(strings.Repeat("\t\"x\x01é\u2028\xff", 20)))
	f.Add([]byte(strings.Repeat("abcdefgh", 16) + "\xe2\x80\xa8" + strings.Repeat("\n", 70)))
	f.Fuzz(func(t *testing.T, s []byte) {
		checkEscape(t, s, jsonContent(t, s))
	})
}
