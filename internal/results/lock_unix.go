//go:build unix

package results

import (
	"errors"
	"os"
	"syscall"
)

// flock takes f's exclusive lock, waiting for it when wait.
func flock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lockedElsewhere reports whether another open file holds f's lock.
func lockedElsewhere(f *os.File) bool {
	err := flock(f, false)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// isHeld reports whether a lock that could not be taken without waiting is held elsewhere.
func isHeld(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }
