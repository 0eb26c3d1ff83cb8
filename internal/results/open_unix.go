//go:build unix

package results

import (
	"errors"
	"os"
	"syscall"
)

// openFlags open a record without following a symbolic link in its place (O_NOFOLLOW) and
// without blocking on a FIFO named like one (O_NONBLOCK, which does not affect regular
// files); Store.open then refuses anything that is not a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW

// refusedLink reports whether err is open's refusal, under O_NOFOLLOW, of a symbolic link:
// ELOOP on Linux and macOS, EMLINK on FreeBSD.
func refusedLink(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
