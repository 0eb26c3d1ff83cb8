//go:build unix

package files

import (
	"os"
	"syscall"
)

// openFlags opens a file for reading without blocking: O_NONBLOCK keeps the open itself
// from waiting on a fifo or a device, and does not affect regular files.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
