//go:build unix

package files

import (
	"io/fs"
	"os"
	"syscall"
)

// openFlags opens a file for reading without blocking: O_NONBLOCK keeps the open itself
// from waiting on a fifo or a device, and does not affect regular files.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// listDir reads the entries of the directory f, opened through a root, with the types its
// listing gives. Go's File.ReadDir calls fstatat for every entry of a directory opened in a
// Root (os.newUnixDirent); the walk needs only each entry's type, which the listing holds
// on most file systems, so it reads a duplicate of the descriptor, opened outside the root,
// for which ReadDir calls fstatat (relative to the same directory) only on an entry whose
// listing gives no type. Every open of an entry still goes through the root.
func listDir(f *os.File) ([]fs.DirEntry, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f.ReadDir(-1)
	}
	d := os.NewFile(uintptr(fd), f.Name())
	defer d.Close()
	return d.ReadDir(-1)
}
