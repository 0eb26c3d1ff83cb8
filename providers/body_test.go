package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/genai"

	"github.com/consultmcp/consult/internal/fake"
)

// awkwardText holds every kind of character a JSON string escapes or the SDKs treat
// specially: quotes, backslashes, control characters, HTML's <>&, U+2028/U+2029, invalid
// UTF-8, multi-byte runes and a NUL.
const awkwardText = "File: a.go\n```go\npackage \"main\"\t// C:\\path\r\n\b\f\x00\x01\x1f\x7f <b>&amp;</b> \u2028\u2029 \xff\xfe bad \xe2\x82 cut é 世界 🙂\n```\nQuestion:\nWhy?"

// sdkBody sends req the way the SDK would on its own (genai's GenerateContentStream with the
// message as a user content and geminiConfig) to srv, and returns the body srv received.
func sdkBody(t *testing.T, p Provider, srv *fake.Server, req Request) []byte {
	t.Helper()
	n := len(srv.Requests())
	ctx := context.Background()
	switch p := p.(type) {
	case *Gemini:
		cfg := geminiConfig(req)
		cfg.AutomaticContinuation = genai.Ptr(false)
		for _, err := range p.client.Models.GenerateContentStream(ctx, req.Model,
			[]*genai.Content{genai.NewContentFromText(req.Prompt, genai.RoleUser)}, cfg) {
			if err != nil {
				t.Fatalf("genai: %v", err)
			}
		}
	}
	reqs := srv.Requests()
	if len(reqs) != n+1 {
		t.Fatalf("the fake got %d requests from the SDK, want 1", len(reqs)-n)
	}
	return reqs[n].Body
}

// TestBodyMatchesSDK: the body Gemini sends decodes, field by field, to what genai's own
// marshalling of the same request decodes to, for every thinking mode, output limit and with
// or without a system instruction, so the wire format cannot drift from the SDK's. The path
// and query match too. (The chat providers' bodies are held to openai-go's bytes by
// TestBodyPinned.)
func TestBodyMatchesSDK(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  Request
	}{
		{"thinking off", Request{}},
		{"thinking off, system", Request{System: "Be \"brief\".\n"}},
		{"thinking on, no budget", Request{Thinking: Thinking{On: true}, System: "Be brief."}},
		{"thinking on, budget", Request{Thinking: Thinking{On: true, Budget: 8000}, System: "Be brief."}},
		{"thinking on, large budget", Request{Thinking: Thinking{On: true, Budget: 100_000}}},
		{"thinking off, max output", Request{MaxOutput: 1000}},
		{"thinking on, budget, max output", Request{Thinking: Thinking{On: true, Budget: 2000}, MaxOutput: 1000}},
		{"thinking on, no budget, max output", Request{Thinking: Thinking{On: true}, MaxOutput: 1000}},
	}
	models := map[string][]string{
		NameGemini: {"gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview"},
	}
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			for _, model := range models[fc.name] {
				for _, tc := range cases {
					t.Run(model+"/"+tc.name, func(t *testing.T) {
						req := tc.req
						req.Model, req.Prompt = model, awkwardText
						want := sdkBody(t, p, srv, req)
						n := len(srv.Requests())
						if _, err := p.Stream(context.Background(), req, nil); err != nil {
							t.Fatalf("Stream: %v", err)
						}
						reqs := srv.Requests()
						if len(reqs) != n+1 {
							t.Fatalf("the fake got %d requests, want 1", len(reqs)-n)
						}
						got := reqs[n]
						sdk := reqs[n-1]
						if got.Path != sdk.Path || got.Query != sdk.Query {
							t.Errorf("request line %s?%s, the SDK's %s?%s", got.Path, got.Query, sdk.Path, sdk.Query)
						}
						if g, w := got.Header.Get("Content-Type"), sdk.Header.Get("Content-Type"); g != w {
							t.Errorf("Content-Type %q, the SDK's %q", g, w)
						}
						compareJSON(t, got.Body, want)
					})
				}
			}
		})
	}
}

// compareJSON decodes both bodies and compares them field by field.
func compareJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("our body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("the SDK's body is not JSON: %v\n%s", err, want)
	}
	for _, k := range sortedKeys(g, w) {
		if !reflect.DeepEqual(g[k], w[k]) {
			t.Errorf("field %q:\n got  %#v\n SDK  %#v", k, g[k], w[k])
		}
	}
}

func sortedKeys(ms ...map[string]any) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

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
// message given as Prompt, in one buffer of exactly the body's size; and a Body sent twice
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
		if !bytes.Equal(a.data, b.data) {
			t.Errorf("Text and Prompt encode differently:\n%s\n%s", a.data, b.data)
		}
		if got, want := cap(b.data), len(b.data); got != want {
			t.Errorf("body buffer capacity %d, want exactly its length %d", got, want)
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
			if !bytes.Equal(r.Body, b.data) {
				t.Errorf("attempt %d sent other bytes than the encoded body", i+1)
			}
		}
	})
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
