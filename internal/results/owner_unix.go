//go:build unix

package results

import (
	"io/fs"
	"os"
	"syscall"
)

// checkModes: Unix owners and permission bits say who may change the results directory.
const checkModes = true

// fileOwner is the uid owning the file fi describes.
func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// currentUID is the user this process runs as.
func currentUID() int { return os.Getuid() }
