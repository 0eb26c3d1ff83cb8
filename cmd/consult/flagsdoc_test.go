package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestEveryFlagDocumented: every server flag the command line takes is in the usage text
// and in README's flag table, so a new flag cannot go undocumented.
func TestEveryFlagDocumented(t *testing.T) {
	t.Parallel()
	_, err := parseServe("openrouter", []string{"-h"}, func(string) string { return "" }, io.Discard)
	var names []string
	requestedFlags(t, err).VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if len(names) < 10 {
		t.Fatalf("found %d flags in the flag set, want them all: %q", len(names), names)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		flag := "--" + name
		if !regexp.MustCompile(`(?m)^  ` + flag + `\b`).MatchString(usage) {
			t.Errorf("usage text does not list %s", flag)
		}
		if !strings.Contains(string(readme), "| `"+flag+"`") && !strings.Contains(string(readme), "| `"+flag+" ") {
			t.Errorf("README's flag table does not list %s", flag)
		}
	}
}

// TestReadmeListsProtocolVersions: README names every MCP protocol version consult serves
// (mcp-go's list), so a version gained or lost with an upgrade cannot go unsaid.
func TestReadmeListsProtocolVersions(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range mcp.ValidProtocolVersions {
		if !strings.Contains(string(readme), v) {
			t.Errorf("README does not name protocol version %s", v)
		}
	}
}
