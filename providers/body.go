package providers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// Body is a request encoded for one provider: the JSON the provider receives, built once
// by [Encoder.Encode] with the user message escaped straight into it, and sent as the same
// bytes by every attempt. The prompt's one copy is here; nothing else holds it.
type Body struct {
	provider string
	req      Request // the request without its user message (Prompt, Text cleared)
	data     []byte
	prompt   int // the user message's length in bytes, before escaping
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
// the mark's place, into one buffer of the exact size.
func spliceMessage(name string, envelope []byte, req Request) (*Body, error) {
	quoted := []byte(`"` + promptMark + `"`)
	i := bytes.Index(envelope, quoted)
	if i < 0 || bytes.Count(envelope, quoted) != 1 {
		return nil, &Error{Provider: name, Kind: BadRequest,
			Message: "cannot encode the request: the model or system instruction holds " + promptMark}
	}
	raw, escaped := messageLen(req)
	data := make([]byte, len(envelope)-len(promptMark)+escaped)
	n := copy(data, envelope[:i+1])
	if req.Text != nil {
		for piece := range req.Text {
			n += escapeTo(data[n:], piece)
		}
	} else {
		n += escapeTo(data[n:], bytesOf(req.Prompt))
	}
	n += escapeTo(data[n:], bytesOf(req.Question))
	if n += copy(data[n:], envelope[i+1+len(promptMark):]); n != len(data) {
		// Text yielded less the second time than the first.
		return nil, &Error{Provider: name, Kind: BadRequest, Message: "cannot encode the request: the message changed while it was written"}
	}
	meta := req
	meta.Prompt, meta.Text, meta.Body, meta.Question = "", nil, nil, ""
	return &Body{provider: name, req: meta, data: data, prompt: raw}, nil
}

// messageLen returns the user message's length, raw and JSON-escaped.
func messageLen(req Request) (raw, escaped int) {
	raw, escaped = len(req.Question), escapedLen(bytesOf(req.Question))
	if req.Text == nil {
		return raw + len(req.Prompt), escaped + escapedLen(bytesOf(req.Prompt))
	}
	for piece := range req.Text {
		raw += len(piece)
		escaped += escapedLen(piece)
	}
	return raw, escaped
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

// plainRun is the length of the run at the start of s of ASCII bytes a JSON string holds
// as they are.
func plainRun(s []byte) int {
	for i, c := range s {
		if c >= utf8.RuneSelf || asciiLen[c] != 1 {
			return i
		}
	}
	return len(s)
}

// escapedLen reads s eight bytes at a time as one uint64 (SWAR, portable Go): the bytes to
// escape in a word are found from masks and counted at once. Each byte's test fits in its
// own byte, with no carry into the next, as long as the bytes below it are below 0x80.
// (escapeTo stays a byte loop: with a byte to escape every ten bytes or so in source code,
// the word-at-a-time versions tried were no faster.)
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

// escapedLen is the length of s as a JSON string's content: what escapeTo writes.
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

// escapeTo writes s at the start of dst as the content of a JSON string, escaped as
// encoding/json does without its HTML escaping (which JSON does not need): quote,
// backslash and control characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and
// U+2029 escaped. dst must have room for escapedLen(s) bytes; it returns that length, and
// writes nothing past it.
func escapeTo(dst, s []byte) int {
	n := 0
	for i := 0; i < len(s); {
		if k := plainRun(s[i:]); k > 0 {
			n += copy(dst[n:], s[i:i+k])
			i += k
			continue
		}
		n, i = escapeOne(dst, n, s, i)
	}
	return n
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
