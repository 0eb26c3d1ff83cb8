//go:build !unix

package files

import "os"

// readFile reads the regular file at name and classifies it, as readAll.
func readFile(name string, limit int64, scratch []byte) ([]byte, Reason) {
	f, err := os.Open(name)
	if err != nil {
		return nil, Unreadable
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, Unreadable
	}
	return readAll(f, fi.Size(), limit, scratch)
}
