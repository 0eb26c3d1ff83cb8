//go:build !unix

package results

import "os"

// flock: no file locks here; the lock file only marks that a worker runs.
func flock(*os.File, bool) error { return nil }

// lockedElsewhere cannot tell here: a lock file that exists counts as held.
func lockedElsewhere(*os.File) bool { return true }

// isHeld: without locks, nothing is ever held elsewhere.
func isHeld(error) bool { return false }
