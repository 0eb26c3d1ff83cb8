//go:build !unix

package main

import "os"

// fileOwner reports no owner where files have no user id (Windows: the file's ACL, not
// checked here, decides who can read it).
func fileOwner(os.FileInfo) (uid int, ok bool) { return 0, false }
