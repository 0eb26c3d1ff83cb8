//go:build unix

package files

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestFifoDoesNotBlock(t *testing.T) {
	root := writeTree(t, map[string]string{"a.txt": "a"})
	if err := syscall.Mkfifo(filepath.Join(root, "pipe.txt"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := Gather(ctx, Options{Root: root, Pattern: "**"})
	if err != nil {
		t.Fatalf("Gather: %v (blocked on the fifo?)", err)
	}
	checkGathered(t, got, []string{"a.txt"}, []Skip{{Reason: Unreadable, Count: 1, Examples: []string{"pipe.txt"}}})
}

func TestUnreadable(t *testing.T) {
	root := writeTree(t, map[string]string{
		"ok.go": "package ok", "secret/x.go": "package x", "locked.go": "package locked",
	})
	// nobody must be able to reach root: open up the temporary directories above it.
	for d := root; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "locked.go"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "secret"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "secret"), 0o755) })

	var got, base, whole *Gathered
	asNobody(t, func() {
		got = gather(t, Options{Root: root, Pattern: "**/*.go"})
		base = gather(t, Options{Root: root, Pattern: "secret/sub/*.go"})
	})
	checkGathered(t, got, []string{"ok.go"},
		[]Skip{{Reason: Unreadable, Count: 2, Examples: []string{"locked.go", "secret/"}}})
	checkGathered(t, base, nil, []Skip{{Reason: Unreadable, Count: 1, Examples: []string{"secret/sub/"}}})

	if err := os.Chmod(root, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(root, 0o755)
	asNobody(t, func() {
		whole = gather(t, Options{Root: root, Pattern: "**"}) // its parent is searchable: no error
	})
	checkGathered(t, whole, nil, []Skip{{Reason: Unreadable, Count: 1, Examples: []string{"./"}}})
}

// TestJoinAbs: a directory that ends in a separator (the root) is not given a second one.
func TestJoinAbs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dir, name, want string }{
		{"/", "etc", "/etc"},
		{"/home/u", "a.go", "/home/u/a.go"},
		{"/home/u/", "a.go", "/home/u/a.go"},
	} {
		if got := joinAbs(tc.dir, tc.name); got != tc.want {
			t.Errorf("joinAbs(%q, %q) = %q, want %q", tc.dir, tc.name, got, tc.want)
		}
	}
}
