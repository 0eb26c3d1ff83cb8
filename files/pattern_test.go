package files

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestCheckPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		wantErr string // a fragment of the message; "" for a valid pattern
	}{
		{"**/*.go", ""},
		{"src/**/*.{ts,tsx}", ""},
		{"./src/*.go", ""},
		{"a/../b", "may not use \"..\""},
		{"../*.go", `pattern "../*.go" leaves the directory`},
		{"a/../../x", "leaves the directory"},
		{"..", "leaves the directory"},
		{"{../x,y}", "leaves the directory"},
		{"{.,a}./x", "leaves the directory"}, // an alternative that spells ".." only once expanded
		{"src/{a,{b,..}}/x", `uses ".."`},
		{"src/{a,{b,../..}}/x", "leaves the directory"},
		{"**/../x", "leaves the directory"},
		{"..foo/*.go", ""},
		{"foo../*.go", ""},
		{"[.][.]/x", ""}, // a class, not "..": matches nothing outside
		{"", "is empty"},
		{strings.Repeat("a", MaxPatternLength+1), "the limit is 1,024 bytes"},
		{strings.Repeat("a", MaxPatternLength), ""},
		{"src/[a-", "not a valid glob"},
		{"src/{a,b", "not a valid glob"},
		{`src\`, "not a valid glob"},
		{"/etc/*", `is absolute`},
		{`C:\x\*.go`, "is absolute"},
		{"c:/x/*.go", "is absolute"},
		{`\\server\share\*`, "is absolute"},
		{"{/etc/passwd,x}", "absolute alternative"},
		{"~/x", `"~" is not expanded`},
		{strings.Repeat("{a,b}", 14), "brace alternatives"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			err := CheckPattern(tc.pattern)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckPattern(%q) = %v, want nil", tc.pattern, err)
			case tc.wantErr == "":
				return
			case err == nil:
				t.Fatalf("CheckPattern(%q) = nil, want an error containing %q", tc.pattern, tc.wantErr)
			case !errors.Is(err, ErrBadPattern):
				t.Errorf("error %v does not wrap ErrBadPattern", err)
			case !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("got %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckExcludeNamesItself(t *testing.T) {
	err := CheckExclude("../x")
	if !errors.Is(err, ErrBadPattern) || !strings.Contains(err.Error(), "exclude_pattern") {
		t.Errorf("got %v, want an ErrBadPattern naming exclude_pattern", err)
	}
}

func TestExpandBraces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"{a,b}", []string{"a", "b"}},
		{"x/{a,b/c}/*.go", []string{"x/a/*.go", "x/b/c/*.go"}},
		{"{a,{b,c}}d", []string{"ad", "bd", "cd"}},
		{"{a,b}{c,d}", []string{"ac", "ad", "bc", "bd"}},
		{`\{a,b\}`, []string{`\{a,b\}`}},
		{"[{]{a,b}", []string{"[{]a", "[{]b"}},
		{"{,x}y", []string{"y", "xy"}},
		{"[!{]{a,b}", []string{"[!{]a", "[!{]b"}},
		{`[\]{]{a,b}`, []string{`[\]{]a`, `[\]{]b`}},
		{"x}{a,b}", []string{"x}a", "x}b"}},
	} {
		got, ok := expandBraces(tc.in, 100)
		if !ok || !slices.Equal(got, tc.want) {
			t.Errorf("expandBraces(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := expandBraces("{a,b}{c,d}{e,f}", 7); ok {
		t.Error("expandBraces over the limit: ok = true")
	}
}

func TestGlobCouldContain(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		dir     string
		want    bool
	}{
		{"**/*.go", "a/b", true},
		{"*.go", "a", false},
		{"src/*.go", "src", true},
		{"src/*.go", "lib", false},
		{"src/*.go", "src/x", false},
		{"src/**/*.go", "src/x/y", true},
		{"{src,lib}/*.go", "lib", true},
		{"{src,lib}/*.go", "doc", false},
		{"a/*/c/*.go", "a/b", true},
		{"a/*/c/*.go", "a/b/d", false},
		{"a/*/c/*.go", "a/b/c", true},
		{"a/**", "a", true},
		{"x*/y", "xa", true},
		{"x*/y", "ya", false},
	} {
		g := compileGlob(tc.pattern)
		if got := g.couldContain(strings.Split(tc.dir, "/")); got != tc.want {
			t.Errorf("%q could contain something in %q = %v, want %v", tc.pattern, tc.dir, got, tc.want)
		}
	}
	// Too many alternatives to expand: every directory may hold a match.
	if g := compileGlob(strings.Repeat("{a,b}", 14)); !g.couldContain([]string{"zzz"}) {
		t.Error("unexpanded pattern: couldContain = false")
	}
}

func TestGlobCoversSubtree(t *testing.T) {
	for _, tc := range []struct {
		pattern, dir string
		want         bool
	}{
		{"tests/**", "tests", true},
		{"tests/**", "src/tests", false},
		{"**/tests/**", "src/tests", true},
		{"**", "anything", true},
		{"{gen/**,*.md}", "gen", true},
		{"{gen/**,*.md}", "x.md", false},
		{"**/*_test.go", "pkg", false},
	} {
		if got := compileGlob(tc.pattern).coversSubtree(tc.dir); got != tc.want {
			t.Errorf("%q covers %q = %v, want %v", tc.pattern, tc.dir, got, tc.want)
		}
	}
}

func TestGlobNames(t *testing.T) {
	g := compileGlob(`{**/node_modules/**,vendor/x/*.go,\[lit\]/*}`)
	for name, want := range map[string]bool{"node_modules": true, "vendor": true, "x": true, "[lit]": true, "*.go": false, "src": false} {
		if got := g.literals[name]; got != want {
			t.Errorf("literals[%q] = %v, want %v", name, got, want)
		}
	}
}

// TestGlobMatchShortcuts: "**/" and one segment is matched on the last segment, and
// "**/*<literal>" by the ending, with the result of matching the whole pattern.
func TestGlobMatchShortcuts(t *testing.T) {
	t.Parallel()
	paths := []string{"a.go", "x/a.go", "x/y/b.md", ".go", "x/.go", "a.go/b", "go", "x/ago", "Makefile",
		"x/Makefile", "a", "x/a*.go", "x/b.go.txt", "x.go/y.md"}
	for _, tc := range []struct{ pattern, name, suffix string }{
		{"**/*.go", "*.go", ".go"},
		{"**/*", "*", ""},
		{"**/*.{go,md}", "*.{go,md}", ""},
		{"**/Makefile", "Makefile", ""},
		{"**/[ab].go", "[ab].go", ""},
		{`**/*\*.go`, `*\*.go`, ""},
		{"**/x/*.go", "", ""},
		{"**/**/*.go", "", ""},
		{"src/**/*.go", "", ""},
	} {
		g := compileGlob(tc.pattern)
		if g.name != tc.name || g.suffix != tc.suffix {
			t.Errorf("%q: name %q, suffix %q; want %q, %q", tc.pattern, g.name, g.suffix, tc.name, tc.suffix)
		}
		for _, rel := range paths {
			if got, want := g.match(rel), doublestar.MatchUnvalidated(tc.pattern, rel); got != want {
				t.Errorf("%q on %q: %v, doublestar says %v", tc.pattern, rel, got, want)
			}
		}
	}
}

func TestSplitBase(t *testing.T) {
	for in, want := range map[string][]string{
		"**/*.go":          nil,
		"src/**/*.go":      {"src"},
		"src/pkg/*.go":     {"src", "pkg"},
		"README.md":        nil,
		"docs/a.md":        {"docs"},
		"{a,b}/x":          nil,
		`a\*b/c/*`:         {"a*b", "c"},
		"vendor/foo/**/*.": {"vendor", "foo"},
	} {
		if got := splitBase(in); !slices.Equal(got, want) {
			t.Errorf("splitBase(%q) = %q, want %q", in, got, want)
		}
	}
}
