package providers

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

var updateRequests = flag.Bool("update-requests", false, "rewrite testdata/gemini_requests.txtar from what Stream sends")

// geminiRequestsFile pins, byte for byte, the request line, the headers that matter and the
// body of every kind of request Gemini's Stream sends. It was first written from what the
// provider sent through google.golang.org/genai v1.77.0 (whose body TestBodyMatchesSDK
// compared with genai's own encoding, field by field), so that its replacement sends the
// same requests.
const geminiRequestsFile = "testdata/gemini_requests.txtar"

// geminiRequestCases are the requests pinned: every thinking mode, output limit and model
// family, a system instruction, a message in pieces with a question, and base URLs with and
// without a trailing slash or a path of their own.
func geminiRequestCases() []struct {
	name, base string // base: appended to the fake's URL
	req        Request
} {
	type c = struct {
		name, base string
		req        Request
	}
	var out []c
	modes := []struct {
		name string
		req  Request
	}{
		{"thinking off", Request{}},
		{"thinking off, system", Request{System: "Be \"brief\".\n"}},
		{"thinking on, no budget", Request{Thinking: Thinking{On: true}, System: "Be brief."}},
		{"thinking on, budget", Request{Thinking: Thinking{On: true, Budget: 8000}, System: "Be brief."}},
		{"thinking on, large budget", Request{Thinking: Thinking{On: true, Budget: 100_000}}},
		{"thinking on, small budget", Request{Thinking: Thinking{On: true, Budget: 50}}},
		{"thinking off, max output", Request{MaxOutput: 1000}},
		{"thinking on, budget, max output", Request{Thinking: Thinking{On: true, Budget: 2000}, MaxOutput: 1000}},
		{"thinking on, no budget, max output", Request{Thinking: Thinking{On: true}, MaxOutput: 1000}},
		{"thinking on, budget, output limit", Request{Thinking: Thinking{On: true, Budget: 8000}, OutputLimit: 4000}},
	}
	for _, model := range []string{"gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview"} {
		for _, m := range modes {
			req := m.req
			req.Model, req.Prompt = model, awkwardText
			out = append(out, c{model + "/" + m.name, "/", req})
		}
	}
	out = append(out,
		c{"pieces and question", "/", Request{Model: "gemini-2.5-flash", Text: pieces(awkwardText, 5, 17, 40),
			Question: "\nQuestion: \"why\"?\u2028"}},
		c{"prefixed model", "/", Request{Model: "models/gemini-2.5-pro", Prompt: "q"}},
		c{"tuned model", "/", Request{Model: "tunedModels/my-model-7", Prompt: "q"}},
		c{"base without slash", "", Request{Model: "gemini-2.5-flash", Prompt: "q"}},
		c{"base with a path", "/proxy/google", Request{Model: "gemini-2.5-flash", Prompt: "q"}},
		c{"base with a path and slash", "/proxy/google/", Request{Model: "gemini-2.5-flash", Prompt: "q"}},
	)
	return out
}

// TestGeminiRequests: the requests Stream sends are those pinned in geminiRequestsFile,
// byte for byte (run with -update-requests to rewrite the file after a deliberate change).
func TestGeminiRequests(t *testing.T) {
	srv := fake.New(t, fake.Gemini)
	var got txtar.Archive
	got.Comment = []byte("What the Gemini provider sends (TestGeminiRequests): the request line with the path\n" +
		"below the fake's address, the key and content-type headers, then the body.\n")
	for _, tc := range geminiRequestCases() {
		p := newProviderFor(t, flavorFor(fake.Gemini), srv.URL+tc.base, nil)
		n := len(srv.Requests())
		if _, err := p.Stream(context.Background(), tc.req, nil); err != nil {
			t.Fatalf("%s: Stream: %v", tc.name, err)
		}
		reqs := srv.Requests()
		if len(reqs) != n+1 {
			t.Fatalf("%s: the fake got %d requests, want 1", tc.name, len(reqs)-n)
		}
		r := reqs[n]
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s?%s\n", r.Method, r.Path, r.Query)
		fmt.Fprintf(&b, "Content-Type: %s\n", r.Header.Get("Content-Type"))
		key := r.Header.Get("X-Goog-Api-Key")
		if key == testKey {
			key = "(the key)"
		}
		fmt.Fprintf(&b, "X-Goog-Api-Key: %s\n\n", key)
		b.Write(r.Body)
		b.WriteByte('\n')
		got.Files = append(got.Files, txtar.File{Name: tc.name, Data: b.Bytes()})
	}
	if *updateRequests {
		if err := os.WriteFile(filepath.FromSlash(geminiRequestsFile), txtar.Format(&got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := txtar.ParseFile(filepath.FromSlash(geminiRequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Files) != len(got.Files) {
		t.Errorf("%d requests, the file pins %d", len(got.Files), len(want.Files))
	}
	for i := range min(len(want.Files), len(got.Files)) {
		g, w := got.Files[i], want.Files[i]
		if g.Name != w.Name || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s:\n got  %s\n want %s (%s)", g.Name, g.Data, w.Data, w.Name)
		}
	}
}

// TestGeminiServerTimeout: a call with a deadline tells the server how long it has
// (X-Server-Timeout, whole seconds rounded up), as Google's Go SDK did; a call without one sends none.
func TestGeminiServerTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout time.Duration
		want    string
	}{
		{"no deadline", 0, ""},
		{"whole seconds", 90 * time.Second, "90"},
		{"rounded up", 2500 * time.Millisecond, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				p, srv := setupInMemory(t, flavorFor(fake.Gemini))
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				if _, err := p.Stream(ctx, Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil); err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if got := srv.Requests()[0].Header.Get("X-Server-Timeout"); got != tt.want {
					t.Errorf("X-Server-Timeout = %q, want %q", got, tt.want)
				}
			})
		})
	}
}

// TestGeminiHeaders: the client names itself as consult in User-Agent and sends none of
// the telemetry headers of Google's SDKs (X-Goog-Api-Client).
func TestGeminiHeaders(t *testing.T) {
	t.Parallel()
	p, srv := setup(t, flavorFor(fake.Gemini))
	if _, err := p.Stream(context.Background(), Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	h := srv.Requests()[0].Header
	if got, want := h.Get("User-Agent"), "consult/"+consult.Version; got != want {
		t.Errorf("User-Agent = %q, want %q", got, want)
	}
	if got := h.Get("X-Goog-Api-Client"); got != "" {
		t.Errorf("X-Goog-Api-Client = %q, want none", got)
	}
}

// TestGeminiModelRefused: a model name that would change the request's path or query is
// refused as a bad request, and nothing is sent; so is a base URL that does not parse.
func TestGeminiModelRefused(t *testing.T) {
	t.Parallel()
	p, srv := setup(t, flavorFor(fake.Gemini))
	for _, model := range []string{"gemini-2.5-pro?key=x", "a&b", "models/../files"} {
		_, err := p.Stream(context.Background(), Request{Model: model, Prompt: "q"}, nil)
		if e := asError(t, err); e.Kind != BadRequest || Retryable(err) {
			t.Errorf("%q: error = %v, want a bad request, not retryable", model, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the fake got %d requests, want none", n)
	}
	if _, err := NewGemini(Config{APIKey: testKey, BaseURL: "http://[::1"}); err == nil || !strings.Contains(err.Error(), "base URL") {
		t.Errorf("NewGemini with a bad base URL: %v, want an error naming the base URL", err)
	}
}
