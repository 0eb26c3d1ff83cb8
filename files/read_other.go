//go:build !unix

package files

import "os"

// openFlags opens a file for reading; O_NONBLOCK is a unix flag, and the fstat that follows
// refuses anything but a regular file here too.
const openFlags = os.O_RDONLY
