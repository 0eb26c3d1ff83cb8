//go:build !unix

package results

import "io/fs"

// checkModes: this system has no Unix owners and permission bits (Windows reports every
// directory as 0777), so the results directory's owner and mode are not checked.
const checkModes = false

// fileOwner is unknown here.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// currentUID is unknown here.
func currentUID() int { return -1 }
