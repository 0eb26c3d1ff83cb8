package main

import (
	"bytes"
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
	var help bytes.Buffer
	if _, err := parseServe("openrouter", []string{"-h"}, func(string) string { return "" }, &help); err == nil {
		t.Fatal("-h parsed without the usage error")
	}
	names := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(help.String(), -1)
	if len(names) < 10 {
		t.Fatalf("found %d flags in the flag set's help, want them all:\n%s", len(names), help.String())
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range names {
		flag := "--" + m[1]
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
