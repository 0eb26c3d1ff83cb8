package providers

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"math/bits"
	"net/http"
	"runtime"
	"sync"
	"unicode/utf8"
	"unsafe"
	"weak"
)

// Body is a request encoded for one provider: the JSON the provider receives, built once
// by [Encoder.Encode] with the user message escaped straight into it, and sent as the same
// bytes by every attempt. It is three parts: the envelope up to the message, the message's
// files (Text) escaped, and the rest (the question and the envelope's end). The files' one
// copy is the escaped text; bodies encoded while another body of the same text is alive
// share it (see [shared]).
type Body struct {
	provider string
	req      Request // the request without its user message (Prompt, Text cleared)
	head     []byte
	text     *escapedText
	tail     []byte
	prompt   int // the user message's length in bytes, before escaping
}

// size is the body's length in bytes.
func (b *Body) size() int { return len(b.head) + len(b.text.b) + len(b.tail) }

// newRequest is an HTTP POST of the body to url, with its length, and a GetBody that
// sends the same bytes again.
func (b *Body) newRequest(ctx context.Context, url string) (*http.Request, error) {
	body := func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(bytes.NewReader(b.head), bytes.NewReader(b.text.b), bytes.NewReader(b.tail))), nil
	}
	r, _ := body()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, r)
	if err == nil {
		req.ContentLength, req.GetBody = int64(b.size()), body
	}
	return req, err
}

// Encoder is implemented by the providers of this package: Encode builds req's body once,
// so that a caller that sends it again (a retry) re-sends the same bytes, and can drop the
// files the message was written from as soon as Encode returns. Pass the result as
// [Request.Body].
type Encoder interface {
	Encode(req Request) (*Body, error)
}

// promptMark stands for the user message while the rest of the request is encoded as JSON
// (the chat and Gemini requests' structs); the escaped message is then written in its
// place. It is plain ASCII, so every JSON encoder writes it unchanged.
const promptMark = "consult-prompt-7c1f0e9a4b2d"

// prepare returns the request Stream sends: req.Body when set (it must be this provider's),
// else req encoded now with encode.
func prepare(name string, req Request, encode func(Request) (*Body, error)) (*Body, error) {
	if b := req.Body; b != nil {
		if b.provider != name {
			return nil, &Error{Provider: name, Kind: BadRequest,
				Message: fmt.Sprintf("the request was encoded for %s", b.provider)}
		}
		return b, nil
	}
	return encode(req)
}

// spliceMessage builds a body from envelope, a request encoded with [promptMark] as its
// user message, by writing req's message (Text, else Prompt, then Question) JSON-escaped in
// the mark's place: the text in one buffer, sized for source code (an eighth over the
// message, where source code needs about a tenth) and grown once, to the exact size of the
// rest, by a message that needs more. Text named by a CacheKey is escaped once for all the
// bodies alive at the same time ([shared]).
func spliceMessage(name string, envelope []byte, req Request) (*Body, error) {
	quoted := []byte(`"` + promptMark + `"`)
	i := bytes.Index(envelope, quoted)
	if i < 0 || bytes.Count(envelope, quoted) != 1 {
		return nil, &Error{Provider: name, Kind: BadRequest,
			Message: "cannot encode the request: the model or system instruction holds " + promptMark}
	}
	b := &Body{provider: name, head: envelope[:i+1]}
	switch text := req.Text; {
	case text == nil:
		b.text = escapeText(func(yield func([]byte) bool) { yield(bytesOf(req.Prompt)) })
	case req.CacheKey != "":
		b.text = sharedText(req.CacheKey, text)
	default:
		b.text = escapeText(text)
	}
	b.prompt = b.text.raw + len(req.Question)
	rest := envelope[i+1+len(promptMark):]
	b.tail = append(appendEscaped(make([]byte, 0, len(req.Question)+len(req.Question)/8+len(rest)+8), bytesOf(req.Question)), rest...)
	b.req = req
	b.req.Prompt, b.req.Text, b.req.Body, b.req.Question = "", nil, nil, ""
	return b, nil
}

// escapedText is a message's text as the content of a JSON string, and its length before
// escaping.
type escapedText struct {
	b   []byte
	raw int
}

// escapeText escapes the pieces text yields (views of the files: only their lengths are
// read on the first pass) into one buffer.
func escapeText(text iter.Seq[[]byte]) *escapedText {
	raw := 0
	for piece := range text {
		raw += len(piece)
	}
	t := &escapedText{b: make([]byte, 0, raw+raw/8+8), raw: raw}
	for piece := range text {
		t.b = appendEscaped(t.b, piece)
	}
	return t
}

// shared holds, by CacheKey, the escaped text of the bodies alive now: a consultation about
// the same files as one in flight (parallel agents asking about one repository) reuses its
// escaped files rather than escaping and holding them again. It holds them weakly, so it
// keeps nothing alive: once the last body that holds a text is dropped, the garbage
// collector frees the text and its entry goes.
var shared = struct {
	sync.Mutex
	m map[string]weak.Pointer[escapedText]
}{m: map[string]weak.Pointer[escapedText]{}}

// sharedText returns the escaped text for key, escaping text (which key names: the same
// key, the same bytes) unless a body alive now holds it.
func sharedText(key string, text iter.Seq[[]byte]) *escapedText {
	shared.Lock()
	e := shared.m[key].Value()
	shared.Unlock()
	if e != nil {
		return e
	}
	e = escapeText(text)
	w := weak.Make(e)
	shared.Lock()
	shared.m[key] = w
	shared.Unlock()
	runtime.AddCleanup(e, func(key string) { // once e is freed, unless a newer text took its key
		shared.Lock()
		defer shared.Unlock()
		if shared.m[key] == w {
			delete(shared.m, key)
		}
	}, key)
	return e
}

// bytesOf views s as bytes without copying it; the view is only read.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// asciiLen is the escaped length of each ASCII byte: 1 as it is, 2 for a two-byte escape,
// 6 for \u00XX.
var asciiLen = func() (t [utf8.RuneSelf]byte) {
	for c := range t {
		switch {
		case c >= 0x20 && c != '"' && c != '\\':
			t[c] = 1
		case shortEscape[c] != 0:
			t[c] = 2
		default:
			t[c] = 6
		}
	}
	return t
}()

// shortEscape is the letter of the two-byte escapes ("\n"); 0 for the others.
var shortEscape = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f'}

// The tests below read eight bytes at a time as one uint64 (SWAR, portable Go). Each byte's
// test fits in its own byte, with no carry into the next, as long as the bytes below it are
// below 0x80.
const (
	ones  = 0x0101010101010101 // 0x01 in each byte
	highs = 0x8080808080808080 // 0x80 in each byte
)

// below returns, for a word of bytes below 0x80, a mask with the high bit of each byte
// less than c (c at most 0x80).
func below(w uint64, c byte) uint64 { return ^(w + (0x80-uint64(c))*ones) & highs }

// equal returns, for a word of bytes below 0x80, a mask with the high bit of each byte
// equal to c (c below 0x80).
func equal(w uint64, c byte) uint64 { return ^(w ^ uint64(c)*ones + 0x7f*ones) & highs }

// masks returns, for a word w of eight bytes of s, masks with the high bit of each byte
// that: a JSON string escapes (esc: control characters, quote, backslash); or that the
// length loop counts one at a time (slow: bytes above 0x7f, and control characters other than
// tab and newline, which may take a six-byte escape). esc is exact below the lowest bit of
// slow; above it, it may be wrong (a byte above 0x7f carries into the next one).
func masks(w uint64) (esc, slow uint64) {
	ctl := below(w, 0x20)
	esc = (ctl | equal(w, '"') | equal(w, '\\')) & highs
	slow = (ctl&^(equal(w, '\t')|equal(w, '\n')) | w) & highs
	return esc, slow
}

// plain reports whether the word w of eight bytes is all plain ASCII, tabs and newlines:
// bytes appendEscaped stores from its table.
func plain(w uint64) bool {
	return (w|below(w, '\t')|below(w, 0x20)&^below(w, '\n'+1))&highs == 0
}

// escapedLen is the length of s as a JSON string's content, what appendEscaped writes: the
// bytes to escape in a word are found from masks and counted at once.
func escapedLen(s []byte) int {
	n, i := 0, 0
	for i+8 <= len(s) {
		w := binary.LittleEndian.Uint64(s[i:])
		esc, slow := masks(w)
		if slow == 0 {
			n += 8 + bits.OnesCount64(esc) // each escape here takes two bytes
			i += 8
			continue
		}
		// The bytes before the first slow one, then that byte or rune.
		k := bits.TrailingZeros64(slow) / 8
		n += k + bits.OnesCount64(esc&(1<<(8*k)-1))
		if c := s[i+k]; c < utf8.RuneSelf {
			n += int(asciiLen[c])
			i += k + 1
			continue
		}
		r, size := utf8.DecodeRune(s[i+k:])
		n += runeLen(r, size)
		i += k + size
	}
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			n += int(asciiLen[c])
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		n += runeLen(r, size)
		i += size
	}
	return n
}

// runeLen is the escaped length of the rune r, decoded from size bytes (r above 0x7f, or
// utf8.RuneError).
func runeLen(r rune, size int) int {
	if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
		return 6 // \ufffd, \u2028, \u2029
	}
	return size
}

// pair and step are, for each byte, what appendEscaped stores and how far its output
// moves on: a byte a JSON string holds as it is, then anything (step 1, the next store
// writes over it); or a two-byte escape (step 2). Step 0: escapeOne writes it (bytes
// above 0x7f, and control characters that take \u00XX).
var pair, step = func() (p [256]uint16, n [256]uint8) {
	for c := range utf8.RuneSelf {
		switch asciiLen[c] {
		case 1:
			p[c], n[c] = uint16(c), 1
		case 2:
			p[c], n[c] = '\\'|uint16(shortEscape[c])<<8, 2
		}
	}
	return p, n
}()

// appendEscaped appends s to dst as the content of a JSON string, escaped as encoding/json
// escapes it without its HTML escaping (which JSON does not need): quote, backslash and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029
// escaped. Where dst has too little room for the rest of s, it grows once, to the exact
// size the rest needs (escapedLen). Runs of plain words go through appendPlain; the byte
// that ends a run, and the bytes near the end, go one at a time.
func appendEscaped(dst, s []byte) []byte {
	n, i := len(dst), 0
	dst = dst[:cap(dst)]
	for i < len(s) {
		if n, i = appendPlain(dst, n, s, i); i == len(s) {
			break
		}
		if n+8 > len(dst) { // room for a two-byte store and the longest escape, six bytes
			grown := make([]byte, n+escapedLen(s[i:])+8) // exactly: append would round up
			copy(grown, dst[:n])
			dst = grown
		}
		if c := s[i]; step[c] != 0 {
			binary.LittleEndian.PutUint16(dst[n:], pair[c])
			n += int(step[c])
			i++
			continue
		}
		n, i = escapeOne(dst, n, s, i)
	}
	return dst[:n]
}

// appendPlain escapes s from i into dst from n eight bytes at a time, as long as the words
// are plain (ASCII, tabs and newlines: nearly every word of source code) and dst has room,
// and returns both advanced. Each byte is a table look-up and one two-byte store, with no
// branch on what the byte is: in source code a byte to escape comes every ten or so, which a
// loop that branches on it mispredicts.
func appendPlain(dst []byte, n int, s []byte, i int) (int, int) {
	for i+8 <= len(s) && n+18 <= len(dst) { // room for eight two-byte escapes
		b := (*[8]byte)(s[i:])
		if !plain(binary.LittleEndian.Uint64(b[:])) {
			break
		}
		d := (*[18]byte)(dst[n:])
		m := put(d, 0, b[0]) // eight stores written out: Go does not unroll the loop
		m = put(d, m, b[1])
		m = put(d, m, b[2])
		m = put(d, m, b[3])
		m = put(d, m, b[4])
		m = put(d, m, b[5])
		m = put(d, m, b[6])
		m = put(d, m, b[7])
		n, i = n+m, i+8
	}
	return n, i
}

// put stores c at d[m], escaped (c is plain ASCII, a tab or a newline), and returns the
// offset after it. m is at most 14; masking it lets the compiler drop the bounds check.
func put(d *[18]byte, m int, c byte) int {
	i := m & 15
	binary.LittleEndian.PutUint16(d[i:i+2], pair[c])
	return m + int(step[c])
}

// escapeOne escapes the byte or rune of s at i, which is not plain ASCII, into dst at n,
// and returns both advanced.
func escapeOne(dst []byte, n int, s []byte, i int) (int, int) {
	const hex = "0123456789abcdef"
	if c := s[i]; c < utf8.RuneSelf {
		if asciiLen[c] == 2 {
			dst[n], dst[n+1] = '\\', shortEscape[c]
			n += 2
		} else {
			n += copy(dst[n:], []byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xf]})
		}
		return n, i + 1
	}
	r, size := utf8.DecodeRune(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		n += copy(dst[n:], `\ufffd`)
	case r == '\u2028' || r == '\u2029':
		n += copy(dst[n:], []byte{'\\', 'u', '2', '0', '2', hex[r&0xf]})
	default:
		n += copy(dst[n:], s[i:i+size])
	}
	return n, i + size
}
