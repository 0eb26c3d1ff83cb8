package tooldefs

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/tokens"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/tooldefs")

// goldenDir holds one JSON file per tool: what tools/list shows a client.
const goldenDir = "../testdata/tooldefs"

// MaxToolTokens is the budget for one tool's whole tools/list entry: agents pay for it on
// every turn of every conversation.
const MaxToolTokens consult.Tokens = 800

// golden is the server configuration the golden files pin: consult openrouter's defaults.
var golden = Server{Provider: "openrouter", Model: "google/gemini-2.5-flash"}

func all() []mcp.Tool { return []mcp.Tool{Consultation(golden), Result(), Cancel()} }

func marshal(t *testing.T, tool mcp.Tool) []byte {
	t.Helper()
	b, err := json.MarshalIndent(tool, "", "  ")
	if err != nil {
		t.Fatalf("marshal %s: %v", tool.Name, err)
	}
	return append(b, '\n')
}

func TestGolden(t *testing.T) {
	for _, tool := range all() {
		t.Run(tool.Name, func(t *testing.T) {
			got := marshal(t, tool)
			file := filepath.Join(goldenDir, tool.Name+".json")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("read golden (run go test ./tooldefs -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("tool %s drifted from %s; if the change is intended run: go test ./tooldefs -update\ngot:\n%s", tool.Name, file, got)
			}
		})
	}
}

func TestTokenBudget(t *testing.T) {
	c := tokens.NewCounter()
	for _, tool := range all() {
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Count(b)
		t.Logf("%s: %d tokens in tools/list", tool.Name, got)
		if got > MaxToolTokens {
			t.Errorf("tool %s takes %d tokens in tools/list, budget %d: shorten the description", tool.Name, got, MaxToolTokens)
		}
	}
}

// TestDescriptionNamesServer: the consultation description names the provider and default
// model of the server it is built for, and the rule for choosing timeout.
func TestDescriptionNamesServer(t *testing.T) {
	t.Parallel()
	for _, srv := range []Server{golden, {Provider: "openai", Model: "gpt-4.1"}, {Provider: "gemini", Model: "gemini-2.5-flash"}} {
		d := Consultation(srv).Description
		for _, want := range []string{"This server uses " + srv.Provider + "; default model " + srv.Model + ".", TimeoutRule} {
			if !strings.Contains(d, want) {
				t.Errorf("description for %+v lacks %q:\n%s", srv, want, d)
			}
		}
	}
	if d := Consultation(Server{}).Description; strings.Contains(d, "This server uses") || strings.Contains(d, "%!") {
		t.Errorf("description for an unnamed server: %s", d)
	}
}

func TestSchemaDeclaresEveryArgument(t *testing.T) {
	tool := Consultation(golden)
	want := []string{"path", "pattern", "query", "model", "exclude_pattern", "timeout", "output_file", "dry_run", "on_timeout"}
	for _, name := range want {
		if _, ok := tool.InputSchema.Properties[name]; !ok {
			t.Errorf("consultation schema lacks argument %q", name)
		}
	}
	if got := len(tool.InputSchema.Properties); got != len(want) {
		t.Errorf("consultation declares %d arguments, want %d", got, len(want))
	}
	req := map[string]bool{}
	for _, r := range tool.InputSchema.Required {
		req[r] = true
	}
	for _, r := range []string{"path", "pattern", "query"} {
		if !req[r] {
			t.Errorf("argument %q is not required", r)
		}
	}
}
