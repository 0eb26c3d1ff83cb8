//go:build unix

package results

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// plantedFiles are the files of a store a local user might plant something in place of,
// each with the operations that open it.
var plantedFiles = []struct {
	name string // of the file, for id idAt(t0, 1)
	ops  []string
}{
	{"." + idAt(t0, 1) + logExt, []string{"CreateLog"}},
	{"." + idAt(t0, 1) + lockExt, []string{"TryLock", "LockHeld"}},
	{"." + idAt(t0, 1) + cancelExt, []string{"ReadCancel", "WriteCancel"}},
	{".slot-0.lock", []string{"TrySlot"}},
	{idAt(t0, 1) + recordExt, []string{"Load", "List", "Prune", "Save"}},
	{spendFile, []string{"Spent", "AddSpend"}},
	{spendLock, []string{"AddSpend"}},
}

// plantedOp runs one operation of the store on id idAt(t0, 1).
func plantedOp(s *Store, op string) error {
	id := idAt(t0, 1)
	switch op {
	case "CreateLog":
		f, err := s.CreateLog(id)
		if err == nil {
			_, err = f.WriteString("log line\n")
			f.Close()
		}
		return err
	case "TryLock":
		l, _, err := s.TryLock(id)
		if err == nil {
			l.Close()
		}
		return err
	case "TrySlot":
		l, _, err := s.TrySlot(0)
		if err == nil {
			l.Close()
		}
		return err
	case "LockHeld":
		if s.LockHeld(id) {
			return errors.New("LockHeld: true")
		}
		return nil
	case "ReadCancel":
		if why, ok := s.ReadCancel(id); ok {
			return fmt.Errorf("ReadCancel: read %q through what was planted", why)
		}
		return nil
	case "WriteCancel":
		return s.WriteCancel(id, "user")
	case "Load":
		_, err := s.Load(id)
		return err
	case "List":
		_, err := s.List(0)
		return err
	case "Prune":
		return s.Prune()
	case "Save":
		return s.Save(Record{ID: id, Status: Done, Created: t0, Answer: "the answer"})
	case "Spent":
		_, _, err := s.Spent(t0)
		return err
	case "AddSpend":
		_, err := s.AddSpend(context.Background(), t0, 0.5)
		return err
	}
	panic(op)
}

// TestPlantedLinksNotFollowed: a symbolic link planted in the results directory in place
// of a log, lock, job, record or ledger file, pointing at a file outside, is never followed:
// the file outside is neither read into a result nor written, whatever the operation.
func TestPlantedLinksNotFollowed(t *testing.T) {
	t.Parallel()
	for _, pf := range plantedFiles {
		for _, op := range pf.ops {
			t.Run(pf.name+"/"+op, func(t *testing.T) {
				t.Parallel()
				s := Open(t.TempDir(), 0, 0, 0)
				victim := newOutside(t)
				link := filepath.Join(s.Dir(), pf.name)
				if err := os.Symlink(victim.path, link); err != nil {
					t.Fatal(err)
				}
				err := plantedOp(s, op)
				victim.untouched(t, op)
				switch op {
				case "CreateLog", "TryLock", "TrySlot", "WriteCancel", "Load", "Spent":
					if err == nil {
						t.Errorf("%s through a planted link: no error", op)
					}
				}
				// What is at the name now is the link (left alone) or our own regular file
				// that replaced it (a rename never follows).
				if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink == 0 && !fi.Mode().IsRegular() {
					t.Errorf("%s left a %v at %s", op, fi.Mode().Type(), pf.name)
				}
			})
		}
	}
}

// TestPlantedLinkInsideNotFollowed: a link to another file of the directory (inside the
// root, so the root alone would follow it) is refused too.
func TestPlantedLinkInsideNotFollowed(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir(), 0, 0, 0)
	other := filepath.Join(s.Dir(), "notes")
	writeFile(t, other, "kept\n")
	if err := os.Symlink("notes", s.auxPath(idAt(t0, 1), logExt)); err != nil {
		t.Fatal(err)
	}
	if f, err := s.CreateLog(idAt(t0, 1)); err == nil {
		f.Close()
		t.Fatal("CreateLog opened a link to another file of the directory")
	}
	if _, ok := s.ReadCancel(idAt(t0, 1)); ok {
		t.Error("ReadCancel: a cancel where there is none")
	}
	if b, _ := os.ReadFile(other); string(b) != "kept\n" {
		t.Errorf("the link's target: %q", b)
	}
}

// TestPlantedFIFONeverBlocks: a FIFO planted in place of any file of the store (opening
// one with no writer or reader blocks for ever without O_NONBLOCK) is refused at once by
// every operation that opens it.
func TestPlantedFIFONeverBlocks(t *testing.T) {
	t.Parallel()
	for _, pf := range plantedFiles {
		for _, op := range pf.ops {
			t.Run(pf.name+"/"+op, func(t *testing.T) {
				t.Parallel()
				s := Open(t.TempDir(), 0, 0, 0)
				if err := syscall.Mkfifo(filepath.Join(s.Dir(), pf.name), 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				done := make(chan error, 1)
				go func() { done <- plantedOp(s, op) }()
				select {
				case err := <-done:
					switch op {
					case "CreateLog", "TryLock", "TrySlot", "WriteCancel", "Load", "Spent":
						if err == nil {
							t.Errorf("%s on a FIFO: no error", op)
						}
					}
				case <-time.After(10 * time.Second): // a failure only: the call hangs for ever
					t.Fatalf("%s blocked on a FIFO planted as %s", op, pf.name)
				}
			})
		}
	}
}
