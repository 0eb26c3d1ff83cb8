package providers

import (
	"bytes"
	"fmt"
	"unicode/utf8"
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

// Len is the body's length in bytes.
func (b *Body) Len() int { return len(b.data) }

// Encoder is implemented by the providers of this package: Encode builds req's body once,
// so that a caller that sends it again (a retry) re-sends the same bytes, and can drop the
// files the message was written from as soon as Encode returns. Pass the result as
// [Request.Body].
type Encoder interface {
	Encode(req Request) (*Body, error)
}

// promptMark stands for the user message while the rest of the request is encoded by the
// SDK's own types; the escaped message is then written in its place. It is plain ASCII, so
// every JSON encoder writes it unchanged.
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
// user message, by writing req's message (Text, else Prompt) JSON-escaped in the mark's
// place, into one buffer of the exact size.
func spliceMessage(name string, envelope []byte, req Request) (*Body, error) {
	quoted := []byte(`"` + promptMark + `"`)
	i := bytes.Index(envelope, quoted)
	if i < 0 || bytes.Count(envelope, quoted) != 1 {
		return nil, &Error{Provider: name, Kind: BadRequest,
			Message: "cannot encode the request: the model or system instruction holds " + promptMark}
	}
	raw, escaped := messageLen(req)
	data := make([]byte, 0, len(envelope)-len(promptMark)+escaped)
	data = append(data, envelope[:i+1]...)
	if req.Text != nil {
		for piece := range req.Text {
			data = appendEscaped(data, piece)
		}
	} else {
		data = appendEscaped(data, req.Prompt)
	}
	data = append(data, envelope[i+1+len(promptMark):]...)
	meta := req
	meta.Prompt, meta.Text, meta.Body = "", nil, nil
	return &Body{provider: name, req: meta, data: data, prompt: raw}, nil
}

// messageLen returns the user message's length, raw and JSON-escaped.
func messageLen(req Request) (raw, escaped int) {
	if req.Text == nil {
		return len(req.Prompt), escapedLen(req.Prompt)
	}
	for piece := range req.Text {
		raw += len(piece)
		escaped += escapedLen(piece)
	}
	return raw, escaped
}

// plain marks the ASCII bytes a JSON string holds as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapedLen is the length of s as a JSON string's content: the length appendEscaped writes.
func escapedLen[T string | []byte](s T) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case plain[c]:
				n++
			case c == '"', c == '\\', c == '\n', c == '\r', c == '\t', c == '\b', c == '\f':
				n += 2
			default:
				n += 6 // \u00XX
			}
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// appendEscaped appends s as the content of a JSON string, escaped as encoding/json does
// (without its HTML escaping, which JSON does not need): quote, backslash and control
// characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// decodeRune decodes the rune at the start of s (converting at most utf8.UTFMax bytes,
// which does not allocate).
func decodeRune[T string | []byte](s T) (rune, int) {
	return utf8.DecodeRuneInString(string(s[:min(len(s), utf8.UTFMax)]))
}
