//go:build unix

package results

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestNonRegularRecordNeverBlocks: a FIFO (no writer: opening it for reading would block
// forever) or a symbolic link named like a record is refused by Load as ErrCorrupt,
// skipped by List and left alone by Prune, at once.
func TestNonRegularRecordNeverBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, s *Store, path string)
	}{
		{"fifo", func(t *testing.T, _ *Store, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}},
		{"symlink to a valid record", func(t *testing.T, s *Store, path string) {
			target := idAt(t0, 9)
			mustSave(t, s, record(target, &fakeClock{t: t0}))
			if err := os.Symlink(s.path(target), path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, clk := newStore(t, 0, 0, 0)
			mustSave(t, s, record(idAt(t0, 1), clk))
			id := idAt(t0, 2)
			tt.make(t, s, s.path(id))
			done := make(chan error, 1)
			go func() {
				_, err := s.Load(id)
				if _, lerr := s.List(0); lerr != nil {
					err = errors.Join(err, lerr)
				}
				if perr := s.Prune(); perr != nil {
					err = errors.Join(err, perr)
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("Load: got %v, want ErrCorrupt", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Load, List or Prune blocked on a record that is not a regular file")
			}
			if _, err := os.Lstat(s.path(id)); err != nil {
				t.Errorf("after Prune: %v, want the file that is not ours left alone", err)
			}
		})
	}
}
