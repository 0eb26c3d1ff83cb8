package results

import (
	"fmt"
	"os"
)

// Lock is a lock file held by this process (an exclusive flock where the system has one).
type Lock struct{ f *os.File }

// Close releases the lock.
func (l *Lock) Close() error { return l.f.Close() }

// HoldLock creates (mode 0600) or opens the lock file of id's worker and takes its lock,
// waiting while another process holds it. The file is opened through the checked
// directory without following a link or blocking on a FIFO, and must be a regular file.
func (s *Store) HoldLock(id string) (*Lock, error) {
	f, err := s.openAux(id, lockExt, os.O_RDWR|os.O_CREATE, true)
	if err != nil {
		return nil, err
	}
	if err := flock(f, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("results: cannot lock %s: %w", s.LockPath(id), err)
	}
	return &Lock{f}, nil
}

// LockHeld reports whether some process holds the lock of id's worker. A missing lock
// file, or one that is not a regular file of the user's directory, is no lock.
func (s *Store) LockHeld(id string) bool {
	f, err := s.openAux(id, lockExt, os.O_RDONLY, false)
	if err != nil {
		return false
	}
	defer f.Close()
	return lockedElsewhere(f)
}

// holdFileLock opens (creating it, mode 0600) the lock file name in the checked directory
// and takes its lock.
func (s *Store) holdFileLock(name string) (*Lock, error) {
	root, err := s.openDir(true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, _, err := openIn(root, name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", s.dir, err)
	}
	if err := flock(f, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("results: cannot lock %s: %w", name, err)
	}
	return &Lock{f}, nil
}
