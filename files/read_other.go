//go:build !unix

package files

import (
	"io/fs"
	"os"
)

// openFlags opens a file for reading; O_NONBLOCK is a unix flag, and the fstat that follows
// refuses anything but a regular file here too.
const openFlags = os.O_RDONLY

// listDir reads the entries of the directory f.
func listDir(f *os.File) ([]fs.DirEntry, error) { return f.ReadDir(-1) }
