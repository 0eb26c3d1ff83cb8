//go:build !unix

package files

import (
	"io/fs"
	"os"
)

// readFile reads the regular file at name and classifies it, as readAll.
func readFile(name string, limit int64, scratch []byte) ([]byte, []string, Reason) {
	f, fi, err := openRegular(name, false)
	if err != nil {
		return nil, nil, Unreadable
	}
	defer f.Close()
	return readAll(f, fi.Size(), limit, scratch)
}

// readSmall reads the whole regular file at name, at most limit bytes, as on unix.
func readSmall(name string, follow bool, limit int64) ([]byte, error) {
	f, fi, err := openRegular(name, follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, fi.Size(), limit)
}

func openRegular(name string, follow bool) (*os.File, fs.FileInfo, error) {
	if !follow {
		if fi, err := os.Lstat(name); err != nil {
			return nil, nil, err
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, errNotRegular
		}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, errNotRegular
	}
	return f, fi, nil
}
