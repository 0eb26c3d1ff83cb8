//go:build unix

package results

import (
	"errors"
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
