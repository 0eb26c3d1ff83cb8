//go:build !unix

package background

import "os"

// tryLock opens path; this system gets no lock: every worker slot looks free, and a
// running record is trusted until its background limit has passed.
func tryLock(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	return f, err == nil, err
}

// lockHeld cannot tell on this system.
func lockHeld(string) bool { return true }

// This system has no flags to refuse links and FIFOs when opening.
const (
	noFollow = 0
	nonBlock = 0
)
