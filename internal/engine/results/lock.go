package results

import (
	"fmt"
	"os"
)

// Lock is a lock file held by this process (an exclusive flock where the system has one).
type Lock struct{ f *os.File }

// Close releases the lock.
func (l *Lock) Close() error { return l.f.Close() }

// File is the lock's open file: a child process that inherits it holds the lock as long as
// it keeps it open, whatever becomes of this one.
func (l *Lock) File() *os.File { return l.f }

// TryLock creates (mode 0600) or opens the lock file of id's worker and takes its lock
// without waiting; ok is false when another holder has it. The file is opened through the
// checked directory without following a link or blocking on a FIFO, and must be a regular
// file.
func (s *Store) TryLock(id string) (l *Lock, ok bool, err error) {
	if _, err := ParseID(id); err != nil {
		return nil, false, err
	}
	return s.tryLock(auxName(id, lockExt))
}

// TrySlot takes, without waiting, the n-th of the directory's slot locks (.slot-n.lock):
// what bounds the workers running at once over every server sharing the directory.
func (s *Store) TrySlot(n int) (l *Lock, ok bool, err error) {
	return s.tryLock(fmt.Sprintf(".slot-%d.lock", n))
}

// tryLock opens (creating it, mode 0600) the lock file name in the checked directory, which
// it creates if needed, and takes its lock without waiting.
func (s *Store) tryLock(name string) (*Lock, bool, error) {
	f, err := s.openFile(name, os.O_RDWR|os.O_CREATE, true)
	if err != nil {
		return nil, false, err
	}
	if err := flock(f, false); err != nil {
		f.Close()
		if isHeld(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("results: cannot lock %s: %w", f.Name(), err)
	}
	return &Lock{f}, true, nil
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
