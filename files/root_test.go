package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// outsideMark is the content of every file outside the gathered tree in these tests.
const outsideMark = "package outside // read from outside the root"

// checkNothingOutside fails if g holds a file read from outside the root.
func checkNothingOutside(t *testing.T, g *Gathered) {
	t.Helper()
	for _, f := range g.Files {
		if strings.Contains(string(f.Content), outsideMark) {
			t.Fatalf("%s was read from outside the root: %q", f.Path, f.Content)
		}
	}
}

// TestGatherReadsThroughOpenedRoot: with Options.Opened, every read goes through the
// directory that was opened, even when the path Root names is swapped for a symbolic link
// to another directory before Gather runs: the files gathered are the opened tree's, and
// nothing of the other directory is read.
func TestGatherReadsThroughOpenedRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "tree")
	outside := writeTree(t, map[string]string{"a.go": outsideMark, "sub/b.go": outsideMark, "x.go": outsideMark})
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a.go": "package a", "sub/b.go": "package b"} {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opened, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if err := os.Rename(root, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, root)

	g := gather(t, Options{Root: root, Pattern: "**/*.go", Opened: opened})
	checkNothingOutside(t, g)
	if want := []string{"a.go", "sub/b.go"}; !slices.Equal(paths(g), want) {
		t.Errorf("files = %v, want %v (the opened tree's)", paths(g), want)
	}
	if string(g.Files[0].Content) != "package a" {
		t.Errorf("a.go = %q, want the opened tree's", g.Files[0].Content)
	}
}

// TestSwappedDirectoryStaysInside: a directory of the tree swapped for a symbolic link to
// a directory outside it, and back, again and again while the tree is gathered, never
// lets a file outside be read: the walk may list the directory and then enter it, or list
// a file in it and then open it, after the swap, and the root keeps both inside.
func TestSwappedDirectoryStaysInside(t *testing.T) {
	t.Parallel()
	inside, outsideFiles := map[string]string{"a.go": "package a"}, map[string]string{}
	for i := range 20 {
		inside[fmt.Sprintf("sub/f%02d.go", i)] = "package sub"
		inside[fmt.Sprintf("sub/deep/d%02d.go", i)] = "package deep"
		outsideFiles[fmt.Sprintf("f%02d.go", i)] = outsideMark
		outsideFiles[fmt.Sprintf("deep/d%02d.go", i)] = outsideMark
	}
	root, outside := writeTree(t, inside), writeTree(t, outsideFiles)
	sub, away := filepath.Join(root, "sub"), filepath.Join(root, "away")
	symlink(t, outside, filepath.Join(t.TempDir(), "probe")) // skips where links cannot be made

	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			if os.Rename(sub, away) != nil {
				continue
			}
			if os.Symlink(outside, sub) == nil {
				swaps.Add(1)
				time.Sleep(50 * time.Microsecond) // each state lasts a while
				os.Remove(sub)
			}
			if err := os.Rename(away, sub); err != nil {
				t.Errorf("putting the directory back: %v", err)
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	for i := 0; i < 300 || swaps.Load() < 100; i++ {
		g, err := Gather(context.Background(), Options{Root: root, Pattern: "**/*.go"})
		if err != nil {
			t.Fatalf("Gather: %v", err)
		}
		checkNothingOutside(t, g)
		if i >= 100_000 {
			t.Fatalf("only %d swaps in %d gatherings", swaps.Load(), i)
		}
	}
}
