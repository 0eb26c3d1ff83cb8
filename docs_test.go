package consult

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsLinkInsideRepository: README.md and the Markdown under docs/ and internal/ link only
// to files of the repository (or to the web), and name no path outside it: a user's clone has
// nothing beside it.
func TestDocsLinkInsideRepository(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, dir := range []string{"docs", "internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".md") {
				docs = append(docs, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range append(docs, "README.md") {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), "../shared") {
			t.Errorf("%s names ../shared, which a clone of the repository does not have", doc)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Join(filepath.Dir(doc), filepath.FromSlash(target))
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s links to %s, outside the repository", doc, m[1])
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which is not in the repository: %v", doc, m[1], err)
			}
		}
	}
}
