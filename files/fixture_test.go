package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/consultmcp/consult"
)

// Fixture archives in testdata/gather hold a tree and, in their comment, one or more cases:
//
//	case: <name>
//	pattern: <glob>            (required)
//	exclude: <glob>
//	root: <dir inside the tree>
//	max-file: <bytes>   max-total: <bytes>   max-files: <n>
//	file: <path>               (each expected file, in order)
//	skip: <Reason> <count> [example…]   (each expected skip, in Reason order)
//
// Lines starting with "#" are comments. A case expects exactly the files and skips it lists.

type fixtureCase struct {
	name  string
	opt   Options
	root  string
	files []string
	skips []Skip
}

var reasonByName = map[string]Reason{
	"Ignored": Ignored, "DefaultExcluded": DefaultExcluded, "LockFile": LockFile,
	"Binary": Binary, "Secret": Secret, "TooLarge": TooLarge, "OverTotal": OverTotal,
	"Outside": Outside, "Unreadable": Unreadable, "ExcludedByPattern": ExcludedByPattern,
}

func parseFixtureCases(t *testing.T, comment string) []fixtureCase {
	t.Helper()
	var cases []fixtureCase
	var c *fixtureCase
	for i, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("line %d: %q is not key: value", i+1, line)
		}
		val = strings.TrimSpace(val)
		if key == "case" {
			cases = append(cases, fixtureCase{name: val})
			c = &cases[len(cases)-1]
			continue
		}
		if c == nil {
			t.Fatalf("line %d: %q before the first case:", i+1, line)
		}
		switch key {
		case "pattern":
			c.opt.Pattern = val
		case "exclude":
			c.opt.Exclude = val
		case "root":
			c.root = val
		case "max-file":
			c.opt.MaxFileBytes = consult.Bytes(atoi(t, val))
		case "max-total":
			c.opt.MaxTotalBytes = consult.Bytes(atoi(t, val))
		case "max-files":
			c.opt.MaxFiles = atoi(t, val)
		case "file":
			c.files = append(c.files, val)
		case "skip":
			f := strings.Fields(val)
			r, ok := reasonByName[f[0]]
			if !ok || len(f) < 2 {
				t.Fatalf("line %d: bad skip %q", i+1, val)
			}
			c.skips = append(c.skips, Skip{Reason: r, Count: atoi(t, f[1]), Examples: f[2:]})
		default:
			t.Fatalf("line %d: unknown key %q", i+1, key)
		}
	}
	return cases
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// extract writes the archive's files under a new temporary directory and returns it.
func extract(t *testing.T, a *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f.Name, "/.keep") { // an empty directory
			continue
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFixtures(t *testing.T) {
	archives, err := filepath.Glob(filepath.Join("..", "testdata", "gather", "*.txtar"))
	if err != nil || len(archives) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range archives {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cases := parseFixtureCases(t, string(a.Comment))
		if len(cases) == 0 {
			continue // an archive used by another test
		}
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			dir := extract(t, a)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					opt := c.opt
					opt.Root = filepath.Join(dir, filepath.FromSlash(c.root))
					got := gather(t, opt)
					checkGathered(t, got, c.files, c.skips)
				})
			}
		})
	}
}

func gather(t *testing.T, opt Options) *Gathered {
	t.Helper()
	g, err := Gather(context.Background(), opt)
	if err != nil {
		t.Fatalf("Gather(%+v): %v", opt, err)
	}
	return g
}

func paths(g *Gathered) []string {
	out := []string{}
	for _, f := range g.Files {
		out = append(out, f.Path)
	}
	return out
}

// checkGathered compares the paths and skips of got with want, and checks the invariants
// of every result: sorted paths, sizes and the byte total.
func checkGathered(t *testing.T, got *Gathered, wantFiles []string, wantSkips []Skip) {
	t.Helper()
	if wantFiles == nil {
		wantFiles = []string{}
	}
	if g := paths(got); !slices.Equal(g, wantFiles) {
		t.Errorf("files:\n got  %q\n want %q", g, wantFiles)
	}
	if g, w := fmtSkips(got.Skipped), fmtSkips(wantSkips); g != w {
		t.Errorf("skipped:\n got  %s\n want %s", g, w)
	}
	checkInvariants(t, got)
}

func checkInvariants(t *testing.T, got *Gathered) {
	t.Helper()
	var total consult.Bytes
	for i, f := range got.Files {
		if i > 0 && got.Files[i-1].Path >= f.Path {
			t.Errorf("files not sorted: %q before %q", got.Files[i-1].Path, f.Path)
		}
		if f.Size != consult.Bytes(len(f.Content)) {
			t.Errorf("%s: Size %d, len(Content) %d", f.Path, f.Size, len(f.Content))
		}
		total += f.Size
	}
	if got.Bytes != total {
		t.Errorf("Bytes = %d, sum of sizes %d", got.Bytes, total)
	}
	for i, s := range got.Skipped {
		if i > 0 && got.Skipped[i-1].Reason >= s.Reason {
			t.Errorf("skips not in Reason order: %v", got.Skipped)
		}
		if s.Count <= 0 || len(s.Examples) > SkipExamples || len(s.Examples) > s.Count ||
			!slices.IsSorted(s.Examples) {
			t.Errorf("bad skip %+v", s)
		}
	}
}

func fmtSkips(skips []Skip) string {
	var b strings.Builder
	for _, s := range skips {
		name := ""
		for n, r := range reasonByName {
			if r == s.Reason {
				name = n
			}
		}
		fmt.Fprintf(&b, "[%s %d %s] ", name, s.Count, strings.Join(s.Examples, " "))
	}
	return b.String()
}
