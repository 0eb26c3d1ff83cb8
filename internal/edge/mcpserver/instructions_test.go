package mcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/tooldefs"
)

// standAlone is how much of the instructions some clients show (Codex: about 250
// characters).
const standAlone = 250

// TestInstructions: the first sentence of the instructions fits in 250 characters and
// names the tool, the provider and the default model, for each provider's default; the
// rest says how to collect a "still running" answer without repeating the description.
func TestInstructions(t *testing.T) {
	t.Parallel()
	for _, srv := range []tooldefs.Server{
		{Provider: "openrouter", Model: "google/gemini-2.5-flash"},
		{Provider: "openai", Model: "gpt-4.1"},
		{Provider: "gemini", Model: "gemini-2.5-flash"},
	} {
		t.Run(srv.Provider, func(t *testing.T) {
			t.Parallel()
			got := Instructions(srv, true)
			end := strings.Index(got, ". ")
			if end < 0 || end+1 > standAlone {
				t.Fatalf("first sentence ends at %d, want within %d characters:\n%s", end+1, standAlone, got)
			}
			first := got[:end+1]
			for _, want := range []string{"consultation", srv.Provider, srv.Model} {
				if !strings.Contains(first, want) {
					t.Errorf("first sentence lacks %q: %s", want, first)
				}
			}
			if !strings.Contains(got, "consultation_result") {
				t.Errorf("instructions lack consultation_result:\n%s", got)
			}
			// A client sends the instructions and the description every turn: no sentence
			// of the description is said again.
			desc := tooldefs.Consultation(srv).Description
			for s := range strings.SplitSeq(got, ". ") {
				if s = strings.TrimSuffix(s, "."); len(s) > 20 && strings.Contains(desc, s) {
					t.Errorf("instructions repeat the description's %q", s)
				}
			}
			if strings.Contains(got, srv.TimeoutRule()) {
				t.Errorf("instructions repeat the timeout rule:\n%s", got)
			}
			t.Logf("%d characters; first sentence %d:\n%s", len(got), len(first), got)
		})
	}
}

// TestInstructionsServed: a client gets the instructions built for the server's provider and
// model when it initializes.
func TestInstructionsServed(t *testing.T) {
	t.Parallel()
	svc := &consultation.Service{DefaultModel: "gpt-4.1", DefaultTimeout: 45 * time.Second}
	c, res := inProcess(t, New(Config{Service: svc, Provider: "openai"}), clientOpts{})
	ctx := context.Background()
	if got, want := res.Instructions, Instructions(tooldefs.Server{Provider: "openai", Model: "gpt-4.1", DefaultTimeout: 45 * time.Second}, false); got != want {
		t.Errorf("instructions = %q, want %q", got, want)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d := tools.Tools[0].Description; !strings.Contains(d, "This server uses openai; default model gpt-4.1.") {
		t.Errorf("consultation description does not name the server:\n%s", d)
	}
	if got := tools.Tools[0].InputSchema.Properties["timeout"].(map[string]any)["default"]; got != 45.0 {
		t.Errorf("advertised timeout default = %v, want the server's 45", got)
	}
}
