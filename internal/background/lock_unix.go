//go:build unix

package background

import (
	"errors"
	"os"
	"syscall"
)

// openLockFile opens (creating it) a lock file of the results directory without following
// a link planted in its place and without blocking on a FIFO; only a regular file is taken.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errors.New(path + " is not a regular file")
	}
	return f, nil
}

// tryLock takes an exclusive lock on path without waiting, for as long as the returned file
// stays open (in this process or in a child that inherited it): the kernel drops it when
// the last holder ends, however it ends. ok is false when another holder has it.
func tryLock(path string) (f *os.File, ok bool, err error) {
	f, err = openLockFile(path)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// lockHeld reports whether some holder has the lock on path. A missing file is no lock.
func lockHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// Flags that open a file of the results directory safely.
const (
	noFollow = syscall.O_NOFOLLOW
	nonBlock = syscall.O_NONBLOCK
)
