package tooldefs

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// readmeRows returns README's table rows whose first cell is a code span, keyed by its text,
// from the table that starts with header.
func readmeRows(t *testing.T, header string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), header+"\n")
	if !ok {
		t.Fatalf("README has no table headed %q", header)
	}
	rows := map[string][]string{}
	for i, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 {
			continue // the separator row
		}
		// Cells are split on " | "; an escaped \| inside a cell stays in it.
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		name := strings.Trim(cells[0], "`")
		rows[name] = cells[1:]
	}
	return rows
}

// checkDocumented checks that README's rows declare exactly tool's arguments, marked
// required as the schema has them, with the schema's defaults, bounds and allowed values.
func checkDocumented(t *testing.T, tool mcp.Tool, rows map[string][]string) {
	t.Helper()
	s := tool.InputSchema
	for name := range rows {
		if _, ok := s.Properties[name]; !ok {
			t.Errorf("README documents %s argument %q, which the schema does not declare", tool.Name, name)
		}
	}
	for name, p := range s.Properties {
		row, ok := rows[name]
		if !ok {
			t.Errorf("README does not document %s argument %q", tool.Name, name)
			continue
		}
		text := strings.Join(row, " | ")
		if got, want := strings.Contains(row[0], "required"), slices.Contains(s.Required, name); got != want {
			t.Errorf("README says %s argument %q required: %v, schema: %v", tool.Name, name, got, want)
		}
		prop := p.(map[string]any)
		if typ := prop["type"].(string); !strings.Contains(text, typ) && prop["enum"] == nil {
			t.Errorf("README row of %q does not give its type %q: %s", name, typ, text)
		}
		for _, key := range []string{"default", "minimum", "maximum"} {
			if v, ok := prop[key]; ok && !strings.Contains(text, fmt.Sprint(v)) {
				t.Errorf("README row of %q lacks its %s %v: %s", name, key, v, text)
			}
		}
		if enum, ok := prop["enum"].([]string); ok {
			for _, v := range enum {
				if !strings.Contains(text, `"`+v+`"`) {
					t.Errorf("README row of %q lacks the value %q: %s", name, v, text)
				}
			}
		}
	}
}

// TestReadmeArguments: README's argument table of the consultation tool matches its schema
// (names, required, type, default, bounds, values), so the two cannot drift.
func TestReadmeArguments(t *testing.T) {
	t.Parallel()
	checkDocumented(t, Consultation(golden), readmeRows(t, "| argument | type | meaning |"))
}

// TestReadmeOtherTools: the row of each other tool names exactly its arguments and gives
// wait's default and bounds.
func TestReadmeOtherTools(t *testing.T) {
	t.Parallel()
	rows := readmeRows(t, "| tool | arguments | what it does |")
	for _, tool := range []mcp.Tool{Result(), Cancel()} {
		row, ok := rows[tool.Name]
		if !ok {
			t.Errorf("README does not document tool %s", tool.Name)
			continue
		}
		args := map[string]bool{}
		for _, a := range strings.Split(row[0], "), ") {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "`"), "`")
			args[name] = true
		}
		for name, p := range tool.InputSchema.Properties {
			if _, ok := args[name]; !ok {
				t.Errorf("README row of %s lacks argument %q: %s", tool.Name, name, row[0])
				continue
			}
			for _, key := range []string{"default", "minimum", "maximum"} {
				if v, ok := p.(map[string]any)[key]; ok && !strings.Contains(row[0], fmt.Sprint(v)) {
					t.Errorf("README row of %s lacks %s's %s %v: %s", tool.Name, name, key, v, row[0])
				}
			}
		}
		if got, want := len(args), len(tool.InputSchema.Properties); got != want {
			t.Errorf("README row of %s names %d arguments, schema %d: %s", tool.Name, got, want, row[0])
		}
	}
}
