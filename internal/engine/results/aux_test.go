package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPruneRemovesWorkerLeftovers: Prune removes the cancel, lock and log files of a worker
// whose record is gone once they are an hour old, and keeps those of a record that exists,
// fresh ones, and files that are not ours.
func TestPruneRemovesWorkerLeftovers(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir(), 0, 0, 0)
	kept := NewID(time.Now())
	if err := s.Save(Record{ID: kept, Status: Running, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	gone := NewID(time.Now())
	old := time.Now().Add(-2 * staleTemp)
	write := func(path string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	stale := []string{s.auxPath(gone, cancelExt), s.auxPath(gone, lockExt), s.auxPath(gone, logExt)}
	fresh := NewID(time.Now())
	keep := []string{s.auxPath(kept, lockExt), s.auxPath(fresh, logExt), filepath.Join(s.Dir(), ".notes.log")}
	for _, p := range stale {
		write(p, old)
	}
	write(keep[0], old)
	write(keep[1], time.Now())
	write(keep[2], old)
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was kept, want removed", filepath.Base(p))
		}
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed, want kept: %v", filepath.Base(p), err)
		}
	}
}
