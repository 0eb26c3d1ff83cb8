package consult

import (
	"go/build"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestLayersPointDown: every package's imports of the module's packages point down the
// layers docs/architecture.md's table names (edges, the background engine, the one-call
// core, leaves), never up, test support is imported by no package of the binary, and each
// package under internal/ sits in its layer's folder. The layers are read from that table,
// so the table, the folders and the imports cannot drift apart.
func TestLayersPointDown(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/consultmcp/consult"
	layer := map[string]int{} // package directory -> its row, from the top
	section, _, _ := strings.Cut(string(doc)[strings.Index(string(doc), "## Layers"):], "\n## Where")
	rows := regexp.MustCompile(`(?m)^\| ([^|]+) \| (.+) \|$`).FindAllStringSubmatch(section, -1)
	for i, row := range rows[2:] { // past the header and its rule
		for _, m := range regexp.MustCompile("`([a-z][a-z0-9]*(/[a-z][a-z0-9]*)*)`").FindAllStringSubmatch(row[2], -1) {
			if fi, err := os.Stat(m[1]); err == nil && fi.IsDir() {
				if _, twice := layer[m[1]]; twice {
					t.Errorf("%s is in two layers", m[1])
				}
				layer[m[1]] = i
			}
		}
	}
	layer["."] = layer["internal/leaf/models"] // the root package, named in words in the table
	if len(layer) < 15 {
		t.Fatalf("read %d packages from the layers table, want them all: %v", len(layer), layer)
	}
	testSupport := len(rows) - 3
	folder := []string{"edge", "engine", "core", "leaf", "testkit"} // internal/'s folder for each row
	for dir, own := range layer {
		if rest, ok := strings.CutPrefix(dir, "internal/"); ok && !strings.HasPrefix(rest, folder[own]+"/") {
			t.Errorf("%s belongs under internal/%s/, its layer being %q", dir, folder[own], strings.TrimSpace(rows[own+2][1]))
		}
		pkg, err := build.ImportDir(dir, 0)
		if _, onlyTests := err.(*build.NoGoError); onlyTests {
			continue
		} else if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range pkg.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			to := strings.TrimPrefix(rel, "/")
			if to == "" {
				to = "."
			}
			switch l, known := layer[to]; {
			case !known:
				t.Errorf("%s imports %s, which the layers table does not name", dir, to)
			case l == testSupport && own != testSupport:
				t.Errorf("%s imports the test support package %s", dir, to)
			case l < own:
				t.Errorf("%s (row %d) imports %s, a layer above it (row %d)", dir, own+1, to, l+1)
			}
		}
	}
}
