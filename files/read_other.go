//go:build !unix

package files

import "os"

// readFile reads the regular file at name, at most limit+1 bytes of it.
func readFile(name string, limit int64) ([]byte, Reason) {
	f, err := os.Open(name)
	if err != nil {
		return nil, Unreadable
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, Unreadable
	}
	return readAll(f, fi.Size(), limit)
}
