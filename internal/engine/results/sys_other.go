//go:build !unix

package results

import (
	"io/fs"
	"os"
)

// openFlags: without O_NONBLOCK and O_NOFOLLOW here, openIn relies on the root (which
// refuses links out of the directory) and its checks before and after opening.
const openFlags = 0

// refusedLink: no open flag refuses links here.
func refusedLink(error) bool { return false }

// checkModes: this system has no Unix owners and permission bits (Windows reports every
// directory as 0777), so the results directory's owner and mode are not checked.
const checkModes = false

// FileOwner reports no owner where files have no user id (Windows: the file's ACL decides
// who can read or change it).
func FileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }

// flock: no file locks here; the lock file only marks that a worker runs.
func flock(*os.File, bool) error { return nil }

// unlock: no file locks here.
func unlock(*os.File) {}

// lockedElsewhere cannot tell here: a lock file that exists counts as held.
func lockedElsewhere(*os.File) bool { return true }

// isHeld: without locks, nothing is ever held elsewhere.
func isHeld(error) bool { return false }
