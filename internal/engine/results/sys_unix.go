//go:build unix

package results

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openFlags are added to every open of a file in the results directory: do not follow a
// symbolic link in its place (O_NOFOLLOW) and do not block on a FIFO or device named like
// one of ours (O_NONBLOCK, which does not affect regular files); openIn then refuses
// anything that is not a regular file.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW

// refusedLink reports whether err is open's refusal, under O_NOFOLLOW, of a symbolic link:
// ELOOP on Linux and macOS, EMLINK on FreeBSD.
func refusedLink(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// checkModes: Unix owners and permission bits say who may change the results directory.
const checkModes = true

// FileOwner returns the user id that owns the file fi describes; ok is false where files
// have no user ids.
func FileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

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

// unlock releases f's lock. Closing f is not enough where a child process being started
// holds a copy of its descriptor for a moment (until it executes): the lock belongs to the
// open file, which the copy keeps open.
func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// lockedElsewhere reports whether another open file holds f's lock.
func lockedElsewhere(f *os.File) bool {
	err := flock(f, false)
	if err == nil {
		unlock(f)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// isHeld reports whether a lock that could not be taken without waiting is held elsewhere.
func isHeld(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }
