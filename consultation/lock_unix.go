//go:build unix

package consultation

import (
	"errors"
	"os"
	"syscall"
)

// holdLock creates path and takes an exclusive lock on it for as long as the returned file
// stays open: the kernel drops the lock when the process ends, however it ends.
func holdLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockHeld reports whether some process holds the lock on path. A missing file is no lock.
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

// stopProcess asks process pid to stop: a worker cancels its upstream request, saves what
// it had and exits. The signal says why: SIGINT when the user stopped the call that
// started it (ErrUserCancelled), SIGTERM otherwise (consultation_cancel).
func stopProcess(pid int, why error) error {
	sig := syscall.SIGTERM
	if errors.Is(why, ErrUserCancelled) {
		sig = syscall.SIGINT
	}
	return syscall.Kill(pid, sig)
}
