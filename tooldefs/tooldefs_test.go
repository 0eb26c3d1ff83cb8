package tooldefs

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/leaf/tokens"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/tooldefs")

// goldenDir holds one JSON file per tool: what tools/list shows a client.
const goldenDir = "../testdata/tooldefs"

// MaxToolTokens is the budget for one tool's whole tools/list entry: agents pay for it on
// every turn of every conversation. Most of it is the output schema, which documents each
// field of the structured result: the one part of a result some clients show their model.
const MaxToolTokens consult.Tokens = 850

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
		for _, want := range []string{"This server uses " + srv.Provider + "; default model " + srv.Model + ".", srv.TimeoutRule()} {
			if !strings.Contains(d, want) {
				t.Errorf("description for %+v lacks %q:\n%s", srv, want, d)
			}
		}
	}
	if d := Consultation(Server{}).Description; strings.Contains(d, "This server uses") || strings.Contains(d, "%!") {
		t.Errorf("description for an unnamed server: %s", d)
	}
}

// TestAdvertisedDefaultTimeout: the schema's timeout default and the description's rule are
// the server's configured default, not the built-in one.
func TestAdvertisedDefaultTimeout(t *testing.T) {
	t.Parallel()
	for _, def := range []time.Duration{0, 60 * time.Second, 5 * time.Second} {
		srv := Server{Provider: "openai", Model: "gpt-4.1", DefaultTimeout: def}
		want := def
		if want == 0 {
			want = consult.DefaultTimeout
		}
		tool := Consultation(srv)
		p := tool.InputSchema.Properties["timeout"].(map[string]any)
		if got := p["default"]; got != want.Seconds() {
			t.Errorf("DefaultTimeout %v: schema default %v, want %v", def, got, want.Seconds())
		}
		if rule := fmt.Sprintf("(default timeout %g s)", want.Seconds()); !strings.Contains(tool.Description, rule) {
			t.Errorf("DefaultTimeout %v: description lacks %q:\n%s", def, rule, tool.Description)
		}
	}
}

// TestOutputSchemaDeclaresSummary: every field of the structured result is declared in the
// output schema with the type its JSON has, unless tagged undeclared; a listing only in
// consultation_result's.
func TestOutputSchemaDeclaresSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool    mcp.Tool
		listing bool
	}{{Consultation(golden), false}, {Result(), true}} {
		var schema struct {
			Properties map[string]struct {
				Type string   `json:"type"`
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tc.tool.RawOutputSchema, &schema); err != nil {
			t.Fatalf("%s: %v", tc.tool.Name, err)
		}
		typ := reflect.TypeFor[consultation.Summary]()
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p, ok := schema.Properties[name]
			switch tag := f.Tag.Get("schema"); {
			case tag == "undeclared" || tag == "list" && !tc.listing:
				if ok {
					t.Errorf("%s declares %q", tc.tool.Name, name)
				}
			case !ok:
				t.Errorf("%s does not declare %q", tc.tool.Name, name)
			case p.Type != jsonType(f.Type):
				t.Errorf("%s declares %q as %s, want %s", tc.tool.Name, name, p.Type, jsonType(f.Type))
			}
		}
		if got := slices.Contains(schema.Properties["kind"].Enum, consultation.KindList); got != tc.listing {
			t.Errorf("%s: kind may be %q: %v, want %v", tc.tool.Name, consultation.KindList, got, tc.listing)
		}
	}
}
