//go:build unix

package results

import (
	"os"
	"syscall"
)

// openFlags open a record without following a symbolic link in its place (O_NOFOLLOW) and
// without blocking on a FIFO named like one (O_NONBLOCK, which does not affect regular
// files); openRecord then refuses anything that is not a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW
