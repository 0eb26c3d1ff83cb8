package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Fuzz targets for pattern handling. Seeds are in testdata/fuzz/FuzzCheckPattern; run with
//
//	go test ./files -run '^$' -fuzz '^FuzzCheckPattern$' -fuzztime 30s
//
// A note on "an accepted pattern never matches a path outside the root": doublestar itself
// lets "**", "*/x" or "?./x" match "../x" — wildcards match ".." like any other name — so that
// property cannot hold of the matcher. What keeps a walk inside the root is that the walk
// only ever presents paths it listed below the root, and that the pattern's literal base
// (the directories it descends into by name) never climbs. The target checks exactly that,
// end to end: whatever pattern CheckPattern accepts, Gather returns only files inside the
// root.

// fuzzTree is a fixture: a root with a few files, inside a parent holding a file the root
// must never yield, reachable by ".." and by symbolic links.
type fuzzTree struct {
	root    string
	inside  map[string]bool // every relative path Gather may return
	outside string          // content of the file outside the root
}

func newFuzzTree(f *testing.F) *fuzzTree {
	f.Helper()
	parent := f.TempDir()
	tr := &fuzzTree{root: filepath.Join(parent, "root"), inside: map[string]bool{}, outside: "package outside // OUTSIDE THE ROOT\n"}
	write := func(rel, content string) {
		p := filepath.Join(parent, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	write("outside.go", tr.outside)
	write("sibling/s.go", tr.outside)
	for _, rel := range []string{"in.go", "sub/deep.go", "sub/x/y/z.txt", "a b/c d.go", "ü/é.go", "..odd.go", "dots../d.go", `back\slash/b.go`, "br[a]ce{s}/q.go"} {
		write(filepath.Join("root", rel), "package inside\n")
		tr.inside[rel] = true
	}
	for link, target := range map[string]string{
		"root/link-out.go":  "../outside.go",
		"root/link-up":      "..",
		"root/link-sib":     "../sibling",
		"root/link-abs.go":  filepath.Join(parent, "outside.go"),
		"root/sub/link-in":  "../in.go",
		"root/sub/link-dir": "../sub",
	} {
		if err := os.Symlink(target, filepath.Join(parent, link)); err != nil {
			f.Fatal(err)
		}
	}
	tr.inside["sub/link-in"] = true // a link to a file inside is read under its own name
	return tr
}

func FuzzCheckPattern(f *testing.F) {
	tr := newFuzzTree(f)
	f.Fuzz(func(t *testing.T, pattern string) {
		err := CheckPattern(pattern)
		exErr := CheckExclude(pattern)
		if (err == nil) != (exErr == nil) {
			t.Fatalf("CheckPattern and CheckExclude disagree on %q: %v / %v", pattern, err, exErr)
		}
		if len(pattern) > MaxPatternLength && err == nil {
			t.Fatalf("a %d-byte pattern was accepted; the limit is %d", len(pattern), MaxPatternLength)
		}
		if err != nil {
			if !errors.Is(err, ErrBadPattern) {
				t.Fatalf("error does not wrap ErrBadPattern: %v", err)
			}
			if !strings.Contains(err.Error(), "pattern") || !strings.Contains(exErr.Error(), "exclude_pattern") {
				t.Fatalf("messages must name the argument: %q / %q", err, exErr)
			}
			// Messages quote the pattern (%q: up to 4 bytes per byte), at most twice.
			if len(err.Error()) > 8*MaxPatternLength+500 {
				t.Fatalf("message is %d bytes long: it echoes more than the pattern", len(err.Error()))
			}
			return
		}

		if !doublestar.ValidatePattern(pattern) {
			t.Fatalf("accepted %q, which doublestar says is invalid", pattern)
		}
		if isAbsolute(pattern) {
			t.Fatalf("accepted absolute pattern %q", pattern)
		}
		// The literal base is entered by name, from the root: it must never climb.
		for _, seg := range splitBase(normalize(pattern)) {
			if seg == ".." || seg == "" {
				t.Fatalf("accepted %q, whose literal base %q climbs", pattern, splitBase(normalize(pattern)))
			}
		}
		alts, ok := expandBraces(pattern, maxAlternatives)
		if !ok {
			t.Fatalf("accepted %q, which expands to more than %d alternatives", pattern, maxAlternatives)
		}
		for _, a := range alts {
			if isAbsolute(a) {
				t.Fatalf("accepted %q with absolute alternative %q", pattern, a)
			}
			for _, seg := range splitSegments(a) {
				if seg == ".." {
					t.Fatalf("accepted %q with a \"..\" segment in alternative %q", pattern, a)
				}
			}
		}
		// A wildcard-free pattern names one path: never one above or outside the root.
		if !hasMeta(pattern) && !strings.Contains(pattern, `\`) {
			for _, p := range []string{"../" + pattern, "/" + pattern, "../../" + pattern} {
				if doublestar.MatchUnvalidated(pattern, p) {
					t.Fatalf("accepted literal pattern %q matches %q", pattern, p)
				}
			}
		}

		// The walk's shortcuts for "**/<name>" match what doublestar matches.
		glob := compileGlob(normalize(pattern))
		for _, rel := range []string{pattern, "a.go", "x/a.go", "x/y/.go", "go", "a.go/b", "x/" + pattern, "a/b.c/d"} {
			if got, want := glob.match(rel), doublestar.MatchUnvalidated(glob.raw, rel); got != want {
				t.Fatalf("pattern %q on %q: match says %v, doublestar %v", pattern, rel, got, want)
			}
		}

		// End to end: whatever was accepted, Gather stays in the root.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := Gather(ctx, Options{Root: tr.root, Pattern: pattern})
		if err != nil {
			t.Fatalf("Gather refused a pattern CheckPattern accepted (%q): %v", pattern, err)
		}
		for _, file := range g.Files {
			if !tr.inside[file.Path] || string(file.Content) == tr.outside {
				t.Fatalf("pattern %q gathered %q (%q), which is not a file inside the root", pattern, file.Path, file.Content)
			}
		}
		for _, s := range g.Skipped {
			for _, ex := range s.Examples {
				if strings.HasPrefix(ex, "/") || strings.HasPrefix(ex, "../") {
					t.Fatalf("pattern %q: a skip example leaves the root: %q", pattern, ex)
				}
			}
		}
	})
}

// TestCheckPatternLongRefused pins the 10,000-character case of the fuzz target's rule.
func TestCheckPatternLongRefused(t *testing.T) {
	for _, p := range []string{strings.Repeat("a", 10_000), strings.Repeat("**/", 3333) + "*", strings.Repeat("{a,b}", 2000)} {
		if err := CheckPattern(p); !errors.Is(err, ErrBadPattern) || !strings.Contains(err.Error(), "10,000") {
			t.Errorf("%d-byte pattern: got %v, want a refusal naming its length", len(p), err)
		}
	}
}

// TestCheckPatternEscapedDotDot records a known gap (reported, not fixed here): CheckPattern
// looks for ".." segments literally, but doublestar reads `\.\.`, `.\.` and `..\/` as ".."
// followed by a separator, so these patterns break CheckPattern's contract ("no '..' segment in
// any brace alternative"). On Unix the walk cannot follow them out of the root (the literal
// base is then a directory whose name contains a backslash; FuzzCheckPattern checks
// containment end to end), so the test skips instead of failing until the check is fixed.
func TestCheckPatternEscapedDotDot(t *testing.T) {
	for _, p := range []string{`\.\./x`, `.\./x`, `\../x`, `..\/x`, `{y,\.\./x}`, `a/\.\./\.\./x`} {
		t.Run(p, func(t *testing.T) {
			if !doublestar.MatchUnvalidated(p, "../x") && !doublestar.MatchUnvalidated(p, "a/../../x") {
				t.Fatalf("%q does not reach ../x in doublestar: the case is moot", p)
			}
			if err := CheckPattern(p); err == nil {
				t.Errorf("CheckPattern accepts %q, which doublestar matches against a path through \"..\"", p)
			}
		})
	}
}
