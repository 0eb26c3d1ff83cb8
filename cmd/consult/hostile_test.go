//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileTreesStayBounded runs the real binary's dry run over trees built to exhaust
// it: ignore files that are devices, fifos or huge, a huge source file. Each run must end
// without reaching its deadline (which would fail it), gather the ordinary files, and peak
// under 300 MB of memory.
func TestHostileTreesStayBounded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, root string)
	}{
		{"gitignore to /dev/zero", func(t *testing.T, root string) {
			mustSymlink(t, "/dev/zero", filepath.Join(root, ".gitignore"))
		}},
		{"gitignore to /dev/urandom", func(t *testing.T, root string) {
			mustSymlink(t, "/dev/urandom", filepath.Join(root, "lib", ".gitignore"))
		}},
		{"gitignore of 300 MB", func(t *testing.T, root string) {
			p := filepath.Join(root, ".gitignore")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 300<<20); err != nil {
				t.Fatal(err)
			}
		}},
		{"gitignore is a fifo", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, ".gitignore"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}},
		{"info/exclude to /dev/zero", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, ".git", "info"), 0o755); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, "/dev/zero", filepath.Join(root, ".git", "info", "exclude"))
		}},
		{"source file of 300 MB", func(t *testing.T, root string) {
			p := filepath.Join(root, "huge.go")
			if err := os.WriteFile(p, []byte("package huge\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 300<<20); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := fixture(t)
			tc.setup(t, root)
			// A dry run that stalled on a hostile file would fail at this deadline (exit 1):
			// a hang guard, long enough for a busy machine.
			const deadline = 60 * time.Second
			cmd := exec.Command(binary, "dry-run", "--path", root, "--pattern", "**/*.go", "--timeout", fmt.Sprint(deadline.Seconds()))
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			peak := watchPeak(cmd)
			err := cmd.Wait()
			elapsed := time.Since(start)
			rss := peak.Peak()
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, out.String())
			}
			if rss > 300<<20 {
				t.Errorf("peak memory %d MiB, want under 300", rss>>20)
			}
			if !strings.Contains(out.String(), "lib/lib.go") && !strings.Contains(out.String(), "Gathered 3 files") {
				t.Errorf("the ordinary files were not gathered:\n%s", out.String())
			}
			t.Logf("%v, peak %d MiB", elapsed.Round(time.Millisecond), rss>>20)
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
}
