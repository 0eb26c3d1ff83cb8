//go:build unix

package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// TestHostileIgnoreFiles: ignore files from a cloned tree cannot block the walk, make it read
// without bound, or be followed out of the tree: each is opened without blocking, taken only
// as a regular file of at most 1 MiB, and otherwise reported as not applied.
func TestHostileIgnoreFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, root string)
		label string // the ignore file reported as not applied
	}{
		{"gitignore links to /dev/zero", func(t *testing.T, root string) {
			symlink(t, "/dev/zero", filepath.Join(root, ".gitignore"))
		}, ".gitignore"},
		{"gitignore links to /dev/urandom", func(t *testing.T, root string) {
			symlink(t, "/dev/urandom", filepath.Join(root, "sub", ".gitignore"))
		}, "sub/.gitignore"},
		{"gitignore is a fifo", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, "sub", ".gitignore"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "sub/.gitignore"},
		{"ignore is 300 MB", func(t *testing.T, root string) {
			if err := os.Truncate(filepath.Join(root, ".ignore"), 300<<20); err != nil {
				t.Fatal(err)
			}
		}, ".ignore"},
		{"gitignore links to a regular file", func(t *testing.T, root string) {
			// git does not follow a symbolic .gitignore either.
			symlink(t, "real-rules", filepath.Join(root, "sub", ".gitignore"))
		}, "sub/.gitignore"},
		{"info/exclude links to /dev/zero", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, ".git", "info"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "/dev/zero", filepath.Join(root, ".git", "info", "exclude"))
		}, "/.git/info/exclude"},
		{"info/exclude is a fifo", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, ".git", "info"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(root, ".git", "info", "exclude"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "/.git/info/exclude"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, map[string]string{"a.go": "package a", "sub/b.go": "package b", "real-rules": "*.go\n", ".ignore": ""})
			tc.setup(t, root)
			// A walk that stalled on the hostile file would fail at this deadline: a hang
			// guard, long enough for a busy machine.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			got, err := Gather(ctx, Options{Root: root, Pattern: "**/*.go"})
			if err != nil {
				t.Fatalf("Gather: %v", err)
			}
			t.Logf("gathered in %v", time.Since(start))
			if want := []string{"a.go", "sub/b.go"}; !equalStrings(paths(got), want) {
				t.Errorf("files = %v, want %v", paths(got), want)
			}
			var unused []string
			for _, s := range got.Skipped {
				if s.Reason == IgnoreFileUnused {
					unused = s.Examples
				}
			}
			if len(unused) != 1 || !strings.HasSuffix(unused[0], tc.label) {
				t.Errorf("not applied = %v, want the one ending %q", unused, tc.label)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHostileIgnoreMemory: a tree whose every directory links its .gitignore to /dev/zero, or
// holds a 300 MB one, costs no more memory than an ordinary tree.
func TestHostileIgnoreMemory(t *testing.T) {
	root := writeTree(t, map[string]string{"a.go": "package a"})
	for i := range 20 {
		dir := filepath.Join(root, "d", string(rune('a'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			symlink(t, "/dev/zero", filepath.Join(dir, ".gitignore"))
		} else if err := os.WriteFile(filepath.Join(dir, ".gitignore"), nil, 0o644); err != nil {
			t.Fatal(err)
		} else if err := os.Truncate(filepath.Join(dir, ".gitignore"), 300<<20); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := gather(t, Options{Root: root, Pattern: "**/*.go"})
	runtime.ReadMemStats(&after)
	if len(got.Files) != 21 {
		t.Errorf("gathered %d files, want 21", len(got.Files))
	}
	// Other tests run in parallel, so allow for them; reading even one hostile file whole
	// would cost 300 MB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("gathering allocated %d MiB", alloc>>20)
	}
}

// TestTooManyIgnorePatterns: ignore files holding more patterns than a gathering applies stop
// it with ErrIgnoreFiles, rather than sending what they may exclude.
func TestTooManyIgnorePatterns(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for b.Len() < maxIgnoreFile-16 {
		b.WriteString("x\n")
	}
	root := writeTree(t, map[string]string{"a.go": "package a", ".gitignore": b.String()})
	_, err := Gather(context.Background(), Options{Root: root, Pattern: "**/*.go"})
	if !errors.Is(err, ErrIgnoreFiles) {
		t.Fatalf("Gather: %v, want ErrIgnoreFiles", err)
	}
}

// TestDeadlineWithManyPatterns: every entry is matched against every ignore pattern; with
// tens of thousands of them in one large directory the walk still stops soon after the
// deadline, not at the directory's end: with a deadline at a quarter of the whole walk
// (measured first, in the same test, so that a busy machine slows both), it returns before
// three quarters of it. A load that changes between the two can break the ratio: it is
// asserted in `make bench` (testrun.Timed), logged in the default suite.
func TestDeadlineWithManyPatterns(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < maxIgnoreFile-64; i++ {
		b.WriteString("*q*r*s*t*[0-9]")
		b.WriteString(strings.Repeat("z", i%7))
		b.WriteString("/**/*.nope\n")
	}
	tree := map[string]string{".gitignore": b.String()}
	for i := range 200 {
		tree[filepath.Join("d", fmt.Sprintf("f%04d.go", i))] = "package f" // one large directory
	}
	root := writeTree(t, tree)
	start := time.Now()
	if _, err := Gather(context.Background(), Options{Root: root, Pattern: "**/*.go"}); err != nil {
		t.Fatalf("Gather without a deadline: %v", err)
	}
	whole := time.Since(start)
	budget := whole / 4
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start = time.Now()
	_, err := Gather(ctx, Options{Root: root, Pattern: "**/*.go"})
	elapsed := time.Since(start)
	t.Logf("the whole walk: %v; with a deadline at %v: returned after %v", whole, budget, elapsed)
	if err == nil {
		t.Skipf("gathered everything in %v: the walk was faster than the first", elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Gather: %v, want the deadline", err)
	}
	if elapsed > budget+whole/2 && testrun.Timed() {
		t.Errorf("Gather returned %v after the deadline, over half the whole walk (%v)", elapsed-budget, whole)
	}
}

// TestVCSDirsNeverGathered: .git is never entered, even when the pattern names it, never read
// through a link, and a root inside it is refused.
func TestVCSDirsNeverGathered(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"a.go":        "package a",
		".git/config": "[remote \"origin\"]\n\turl = https://user:ghp_token@github.com/x/y\n",
		".git/HEAD":   "ref: refs/heads/main\n",
		".hg/hgrc":    "[auth]\nx.password = hunter2\n",
	})
	symlink(t, ".git/config", filepath.Join(root, "cfg.txt"))
	for _, pattern := range []string{".git/**", ".git/config", "**/config", "**", ".hg/*", "{.git,.hg}/**"} {
		got := gather(t, Options{Root: root, Pattern: pattern})
		for _, f := range got.Files {
			if strings.HasPrefix(f.Path, ".git") || strings.HasPrefix(f.Path, ".hg") || f.Path == "cfg.txt" {
				t.Errorf("pattern %q gathered %s", pattern, f.Path)
			}
		}
	}
	got := gather(t, Options{Root: root, Pattern: "*.txt"})
	if len(got.Withheld) != 1 || got.Withheld[0].Path != "cfg.txt" || !strings.Contains(got.Withheld[0].Why, ".git/") {
		t.Errorf("withheld = %+v, want cfg.txt as a link into .git/", got.Withheld)
	}
	_, err := Gather(context.Background(), Options{Root: filepath.Join(root, ".git"), Pattern: "**"})
	if !errors.Is(err, ErrVCSDir) {
		t.Errorf("Gather in .git: %v, want ErrVCSDir", err)
	}
}

// TestLinkJudgedByTarget: a harmless name linked to a credential file is held back, with the
// target named.
func TestLinkJudgedByTarget(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		".env": "OPENAI_API_KEY=x", ".aws/credentials": "[default]\naws_secret_access_key=x",
		"ok.txt": "fine", "notes/readme.md": "fine",
	})
	symlink(t, ".env", filepath.Join(root, "notes.txt"))
	symlink(t, "../.aws/credentials", filepath.Join(root, "notes", "aws.md"))
	symlink(t, "ok.txt", filepath.Join(root, "alias.txt"))
	got := gather(t, Options{Root: root, Pattern: "**/*"})
	if want := []string{"alias.txt", "notes/readme.md", "ok.txt"}; !equalStrings(paths(got), want) {
		t.Errorf("files = %v, want %v", paths(got), want)
	}
	var withheld []string
	for _, w := range got.Withheld {
		withheld = append(withheld, w.Path+": "+w.Why)
	}
	want := []string{
		".aws/credentials: credentials file",
		".env: environment file",
		"notes.txt: link to .env: environment file",
		"notes/aws.md: link to .aws/credentials: credentials file",
	}
	if !equalStrings(withheld, want) {
		t.Errorf("withheld =\n%s\nwant\n%s", strings.Join(withheld, "\n"), strings.Join(want, "\n"))
	}
}

// TestSystemSecretsNeverRead: the system's password and host-key files are held back by
// path, even for a server running as root.
func TestSystemSecretsNeverRead(t *testing.T) {
	t.Parallel()
	if _, err := os.Lstat("/etc/shadow"); err != nil {
		t.Skip("no /etc/shadow here")
	}
	got := gather(t, Options{Root: "/etc", Pattern: "{shadow,shadow-,gshadow,passwd,ssh/ssh_host_*}"})
	for _, f := range got.Files {
		if f.Path != "passwd" && !strings.HasSuffix(f.Path, ".pub") {
			t.Errorf("gathered /etc/%s", f.Path)
		}
	}
	found := false
	for _, w := range got.Withheld {
		if w.Path == "shadow" && w.Why == whySystem {
			found = true
		}
	}
	if !found {
		t.Errorf("withheld = %+v, want shadow as a system credential file", got.Withheld)
	}
}
