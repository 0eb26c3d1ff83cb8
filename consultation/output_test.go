package consultation

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

func TestWriteNewNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "answer.md")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := writeNew(target, outputTarget{}, "new answer")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "answer-1.md"); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("existing file changed to %q", b)
	}
	if b, _ := os.ReadFile(got); string(b) != "new answer" {
		t.Errorf("new file holds %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (no temporary file left)", len(entries))
	}
}

func TestWriteNewConcurrentNamesAreDistinct(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "a.txt")
	var wg sync.WaitGroup
	names := make([]string, 8)
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := writeNew(target, outputTarget{}, string(rune('a'+i)))
			if err != nil {
				t.Error(err)
			}
			names[i] = n
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("two writers got the same file %q", n)
		}
		seen[n] = true
	}
}

func TestWriteNewMissingDirectory(t *testing.T) {
	t.Parallel()
	if _, err := writeNew(filepath.Join(t.TempDir(), "no", "x.md"), outputTarget{}, "x"); err == nil {
		t.Error("want an error for a missing directory")
	}
}

// TestOutputDirSwappedForLink: the output directory is checked against --allow-root when the
// call starts and written when the answer arrives; a directory swapped for a symbolic link
// to outside in between is not followed: the answer goes to the directory that was checked
// (held open since), and nothing is written outside.
func TestOutputDirSwappedForLink(t *testing.T) {
	t.Parallel()
	for _, withRoots := range []bool{true, false} {
		t.Run(map[bool]string{true: "allow-root", false: "no allow-root"}[withRoots], func(t *testing.T) {
			srv, svc := upstream(t, 0)
			allowed, outside := t.TempDir(), t.TempDir()
			if withRoots {
				roots, err := ResolveRoots([]string{allowed})
				if err != nil {
					t.Fatal(err)
				}
				svc.AllowRoots = roots
			}
			outDir := filepath.Join(allowed, "out")
			if err := os.Mkdir(outDir, 0o755); err != nil {
				t.Fatal(err)
			}
			tree := filepath.Join(allowed, "src")
			if err := os.MkdirAll(tree, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tree, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			srv.SetFunc(func(*fake.Request) fake.Script {
				// The request is on its way: the check is done. Swap the directory.
				if err := os.Rename(outDir, outDir+".old"); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, outDir); err != nil {
					t.Error(err)
				}
				return fake.Answer("the answer")
			})
			res := svc.Consult(context.Background(), goReq(Request{Path: tree, OutputFile: filepath.Join(outDir, "answer.md")}), nil)
			if res.IsError {
				t.Fatalf("the call failed:\n%s", res.Text())
			}
			if b, err := os.ReadFile(filepath.Join(outDir+".old", "answer.md")); err != nil || string(b) != "the answer" {
				t.Errorf("the checked directory holds %q, %v; want the answer", b, err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("%d files were written outside through the swapped link", len(entries))
			}
		})
	}
}

// TestWriteNewFinalLinkNotFollowed: an output_file name that is a symbolic link (to a file
// outside, or dangling) is taken, not followed: the answer goes to a numbered name.
func TestWriteNewFinalLinkNotFollowed(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "authorized_keys")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"existing.md": victim, "dangling.md": filepath.Join(outside, "new")} {
		path := filepath.Join(dir, name)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		got, err := writeNew(path, outputTarget{}, "answer")
		if err != nil {
			t.Fatal(err)
		}
		if want := numberedPath(path, 1); got != want {
			t.Errorf("wrote %q, want %q", got, want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target was changed to %q", b)
	}
	if _, err := os.Lstat(filepath.Join(outside, "new")); err == nil {
		t.Error("a dangling link's target was created")
	}
}

func numberedPath(path string, i int) string {
	return filepath.Join(filepath.Dir(path), numbered(path, i))
}
