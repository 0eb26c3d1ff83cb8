package providers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// chatFlavors are the providers that share the OpenAI-style chat client.
var chatFlavors = []flavorCase{flavorFor(fake.OpenAI), flavorFor(fake.OpenRouter)}

// TestChatHeaders: a chat request carries the key as a bearer token, its JSON body's type,
// a User-Agent naming consult's release and, for OpenRouter, its app attribution headers;
// nothing from the environment (OPENAI_ORG_ID, which openai-go turned into
// OpenAI-Organization) and none of openai-go's X-Stainless headers.
func TestChatHeaders(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	for _, fc := range chatFlavors {
		t.Run(fc.name, func(t *testing.T) {
			p, srv := setup(t, fc)
			if _, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			h := srv.Requests()[0].Header
			want := map[string]string{
				"Authorization": "Bearer " + testKey,
				"Content-Type":  "application/json",
				"Accept":        "application/json",
				"User-Agent":    "consult/" + consult.Version,
				"HTTP-Referer":  "",
				"X-Title":       "",
			}
			if fc.flavor == fake.OpenRouter {
				want["HTTP-Referer"], want["X-Title"] = "https://github.com/consultmcp/consult", "consult"
			}
			for name, w := range want {
				if got := h.Get(name); got != w {
					t.Errorf("%s = %q, want %q", name, got, w)
				}
			}
			for name := range h {
				if strings.HasPrefix(name, "Openai-") || strings.HasPrefix(name, "X-Stainless") {
					t.Errorf("header %s = %q sent", name, h.Get(name))
				}
			}
		})
	}
}

// TestChatStreamEvents: what the chat client makes of events beyond the usual chunks. An
// error event, whether its data holds {"error": ...} or its type is "error", is an in-band
// error with the message it gave; an event with no data is skipped; a member of an
// unexpected type is ignored, as openai-go ignored it; data that is not JSON fails the
// stream as a transport error. The usual chunks follow OpenAI's streaming reference
// (platform.openai.com/docs/api-reference/chat-streaming); the odd events are made up on
// purpose, inputs outside the documented format that a proxy or a compatible server might
// send, and stand for no provider's wire format. The error events OpenRouter and OpenAI
// really send are pinned from published recordings in TestClientErrorsNotRetryable and the
// replayed recordings (docs/testing.md).
func TestChatStreamEvents(t *testing.T) {
	t.Parallel()
	const (
		answer = `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}` + "\n\n"
		finish = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	)
	cases := []struct {
		name   string
		body   string
		kind   Kind // "" for no error
		inBand bool
		msg    string // in the error's message
		text   string
	}{
		{"error event type, object", "event: error\n" + `data: {"code":503,"message":"The model is overloaded"}` + "\n\n",
			Overloaded, true, "The model is overloaded", ""},
		{"error event type, text", answer + "event: error\ndata: upstream went away\n\n",
			Server, true, "upstream went away", "ok"},
		{"error member a string", `data: {"error":"Upstream stream interrupted"}` + "\n\n",
			Server, true, "Upstream stream interrupted", ""},
		{"empty events skipped", "data:\n\ndata: \n\n" + answer + finish, "", false, "", "ok"},
		{"member of another type", `data: {"choices":[{"index":0,"delta":{"content":"ok","reasoning":{"text":"x"}},"finish_reason":null}],"usage":{"cost":"free"}}` + "\n\n" + finish,
			"", false, "", "ok"},
		{"not JSON", answer + "data: {\"choices\":[\n\n", Transport, false, "cannot decode an event", "ok"},
	}
	for _, fc := range chatFlavors {
		for _, tc := range cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				p, srv := setup(t, fc)
				srv.Push(fake.Script{Body: tc.body})
				resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
				if resp.Text != tc.text {
					t.Errorf("Text = %q, want %q", resp.Text, tc.text)
				}
				if tc.kind == "" {
					if err != nil {
						t.Fatalf("Stream: %v", err)
					}
					return
				}
				e := asError(t, err)
				if e.Kind != tc.kind || e.InBand != tc.inBand || !strings.Contains(e.Message, tc.msg) {
					t.Errorf("error = %v (InBand %v); want %q, InBand %v, a message with %q", e, e.InBand, tc.kind, tc.inBand, tc.msg)
				}
			})
		}
	}
}

// TestChatHTTPErrorBody: an error status's body is read as far as 64 KiB: a string error
// member is the message, and a body that is no JSON error object is the message as it is.
// The bodies are made up on purpose (what a proxy in front of a provider might answer:
// {"detail": ...} is FastAPI's shape for an HTTPException, fastapi.tiangolo.com/tutorial/
// handling-errors), not a provider's documented error object, which TestStreamHTTPErrors pins.
func TestChatHTTPErrorBody(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, msg string
	}{
		{"error member a string", `{"error":"Invalid token"}`, ": Invalid token"},
		{"not an error object", `{"detail":"Not authenticated"}`, `{"detail":"Not authenticated"}`},
		{"a long page", "Unauthorized " + strings.Repeat("x", 1<<20), "Unauthorized xxx"},
	}
	for _, fc := range chatFlavors {
		for _, tc := range cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				p, srv := setup(t, fc)
				srv.Push(fake.Script{Status: 401, Body: tc.body})
				_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
				if e := asError(t, err); e.Kind != Auth || e.Status != 401 || !strings.Contains(e.Error(), tc.msg) {
					t.Errorf("error = %v; want an authentication failure (HTTP 401) with %q", e, tc.msg)
				}
			})
		}
	}
}

// TestChatRedirects: a redirect within the endpoint's origin is followed with the same
// body; one to another origin is not followed, so the key goes nowhere else.
func TestChatRedirects(t *testing.T) {
	t.Parallel()
	const stream = `data: {"choices":[{"index":0,"delta":{"content":"moved"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			http.Redirect(w, r, "/v2/chat/completions", http.StatusTemporaryRedirect)
		case "/away/chat/completions":
			http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
		case "/v2/chat/completions":
			b, _ := io.ReadAll(r.Body)
			body.Store(string(b))
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
		}
	}))
	defer srv.Close()

	p, err := NewOpenAI(Config{APIKey: testKey, BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Stream(context.Background(), Request{Model: "o3", Prompt: "q"}, nil)
	if err != nil || resp.Text != "moved" {
		t.Fatalf("Stream = %q, %v; want the answer at the redirect's target", resp.Text, err)
	}
	if got, _ := body.Load().(string); !strings.Contains(got, `"content":"q"`) {
		t.Errorf("the redirect's target got body %q, want the request's", got)
	}

	p, err = NewOpenAI(Config{APIKey: testKey, BaseURL: srv.URL + "/away"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Request{Model: "o3", Prompt: "q"}, nil)
	if e := asError(t, err); e.Kind != Transport || !strings.Contains(e.Message, "another origin") {
		t.Errorf("error = %v, want a transport error saying the redirect leaves the origin", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
}

// TestGeminiRedirects: Gemini's key goes only to the configured endpoint too: a redirect to
// another origin is not followed (Go would forward the X-Goog-Api-Key header to it).
func TestGeminiRedirects(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	p, err := NewGemini(Config{APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Request{Model: "gemini-2.5-flash", Prompt: "q"}, nil)
	if e := asError(t, err); e.Kind != Transport || !strings.Contains(e.Message, "another origin") {
		t.Errorf("error = %v, want a transport error saying the redirect leaves the origin", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
}
