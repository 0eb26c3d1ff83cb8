package providers

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// awkwardText holds every kind of character a JSON string escapes or the SDKs treat
// specially: quotes, backslashes, control characters, HTML's <>&, U+2028/U+2029, invalid
// UTF-8, multi-byte runes and a NUL.
const awkwardText = "File: a.go\n```go\npackage \"main\"\t// C:\\path\r\n\b\f\x00\x01\x1f\x7f <b>&amp;</b> \u2028\u2029 \xff\xfe bad \xe2\x82 cut é 世界 🙂\n```\nQuestion:\nWhy?"

// pieces splits s into a piece per byte run between the given cut points, the way
// files.Prompt yields a prompt: a multi-byte rune may be split across pieces only where
// the source data itself was cut.
func pieces(s string, cuts ...int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		start := 0
		for _, c := range append(cuts, len(s)) {
			if !yield([]byte(s[start:c])) {
				return
			}
			start = c
		}
	}
}

// TestEncodeOnce: a message given as Text pieces encodes to the same bytes as the same
// message given as Prompt, in one buffer at most an eighth of the message over the body's
// size; and a Body sent twice
// (a retry) reaches the upstream as the same bytes both times.
func TestEncodeOnce(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		p, srv := setup(t, fc)
		enc := p.(Encoder)
		req := Request{Model: fc.model, System: "Be brief.", Thinking: Thinking{On: true, Budget: 4000}}
		fromString := req
		fromString.Prompt = awkwardText
		fromText := req
		fromText.Text = pieces(awkwardText, 5, 17, 40)
		a, err := enc.Encode(fromString)
		if err != nil {
			t.Fatal(err)
		}
		b, err := enc.Encode(fromText)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.bytes(), b.bytes()) {
			t.Errorf("Text and Prompt encode differently:\n%s\n%s", a.bytes(), b.bytes())
		}
		if got, most := cap(b.text.b), len(b.text.b)+len(awkwardText)/8+64; got > most {
			t.Errorf("escaped text buffer capacity %d, want at most %d (its length %d and an eighth of the message)", got, most, len(b.text.b))
		}
		for range 2 {
			if _, err := p.Stream(context.Background(), Request{Body: b}, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("the fake got %d requests, want 2", len(reqs))
		}
		for i, r := range reqs {
			if !bytes.Equal(r.Body, b.bytes()) {
				t.Errorf("attempt %d sent other bytes than the encoded body", i+1)
			}
			if r.ContentLength != int64(b.size()) {
				t.Errorf("attempt %d declared Content-Length %d, want the body's %d bytes", i+1, r.ContentLength, b.size())
			}
		}
	})
}

// TestSharedText: bodies with the same CacheKey, alive at the same time, share one escaped
// text, whichever provider encodes them and even across a garbage collection, and it is the
// bytes an unshared encoding writes; another key gets its own; once no body holds a text,
// the collector frees it and its entry goes.
func TestSharedText(t *testing.T) {
	t.Parallel()
	or, _ := setup(t, flavorFor(fake.OpenRouter))
	g, _ := setup(t, flavorFor(fake.Gemini))
	key := "consult-" + t.Name()
	encode := func(p Provider, key string) *Body {
		t.Helper()
		b, err := p.(Encoder).Encode(Request{Model: "x/y", Text: pieces(awkwardText, 5, 17, 40), Question: "Why?", CacheKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := encode(or, key)
	runtime.GC()
	b, c := encode(g, key), encode(or, key+"-other")
	if a.text != b.text {
		t.Error("two bodies with the same key escaped the text twice")
	}
	if a.text == c.text {
		t.Error("bodies with different keys share a text")
	}
	if unshared := encode(or, ""); !bytes.Equal(a.bytes(), unshared.bytes()) || a.text == unshared.text {
		t.Errorf("the shared body differs from an unshared one:\n%s\n%s", a.bytes(), unshared.bytes())
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	for i := 0; sharedHas(key) || sharedHas(key+"-other"); i++ {
		if i == 1000 {
			t.Fatal("the table still holds the texts of bodies that are gone")
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on a goroutine of their own
	}
}

// TestBodyForAnotherProvider: a body encoded by one provider is refused by another.
func TestBodyForAnotherProvider(t *testing.T) {
	t.Parallel()
	or, _ := setup(t, flavorFor(fake.OpenRouter))
	g, srv := setup(t, flavorFor(fake.Gemini))
	b, err := or.(Encoder).Encode(Request{Model: "x/y", Prompt: "q"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Stream(context.Background(), Request{Body: b}, nil)
	if !errors.Is(err, BadRequest) {
		t.Errorf("Stream = %v, want a bad-request error", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the fake got %d requests, want none", n)
	}
}

// bytes is the whole body.
func (b *Body) bytes() []byte { return slices.Concat(b.head, b.text.b, b.tail) }

// sharedHas says whether key has an entry in the table of shared texts.
func sharedHas(key string) bool {
	shared.Lock()
	defer shared.Unlock()
	_, ok := shared.m[key]
	return ok
}
