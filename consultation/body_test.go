package consultation

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestRetrySendsTheSameBody: after a transient failure the retry sends the very bytes of the
// first attempt, for each provider, and those bytes are the files laid out as the prompt.
func TestRetrySendsTheSameBody(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		t.Run(f.flavor.String(), func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, i)
			svc.jitter = noJitter
			srv.Push(fake.Script{Status: http.StatusServiceUnavailable}, fake.Answer("main prints hello."))
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
			if res.IsError {
				t.Fatalf("error result: %s", res.Text())
			}
			reqs := srv.Requests()
			var bodies [][]byte
			for _, r := range reqs {
				if r.Method == http.MethodPost {
					bodies = append(bodies, r.Body)
				}
			}
			if len(bodies) != 2 {
				t.Fatalf("the fake got %d model requests, want 2", len(bodies))
			}
			if !bytes.Equal(bodies[0], bodies[1]) {
				t.Errorf("the retry sent other bytes than the first attempt")
			}
			body := reqs[len(reqs)-1].JSON()
			if body == nil {
				t.Fatalf("the body is not JSON: %s", bodies[1])
			}
			want := files.Layout([]files.File{
				{Path: "internal/big/big.go", Content: []byte("package big\n\n" + strings.Repeat("// a comment line that adds tokens\n", 200))},
				{Path: "internal/small/s.go", Content: []byte("package small\n")},
				{Path: "main.go", Content: []byte("package main\n\nfunc main() { println(\"hello\") }\n")},
			}, "What does main do?")
			if got := userMessage(body); got != want {
				t.Errorf("user message:\n got  %q\n want %q", got, want)
			}
		})
	}
}

// userMessage digs the user message out of a decoded chat-completions or Gemini body.
func userMessage(body map[string]any) string {
	if msgs, ok := body["messages"].([]any); ok {
		for _, m := range msgs {
			if m, ok := m.(map[string]any); ok && m["role"] == "user" {
				s, _ := m["content"].(string)
				return s
			}
		}
	}
	if contents, ok := body["contents"].([]any); ok && len(contents) > 0 {
		c, _ := contents[0].(map[string]any)
		parts, _ := c["parts"].([]any)
		if len(parts) > 0 {
			p, _ := parts[0].(map[string]any)
			s, _ := p["text"].(string)
			return s
		}
	}
	return ""
}
