package results

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Errors of opening a file of the store that is not a regular file of its own.
var (
	errLink       = errors.New("a symbolic link, not a regular file")
	errNotRegular = errors.New("not a regular file")
)

// openIn opens name (a plain file name) in root with flag, never following a symbolic
// link (a link leading out of root is refused by root itself; one inside is refused
// here, before opening and again after) and never blocking (a FIFO or device in its
// place is refused once fstat shows it), and returns it with its information. An
// existing file must be a regular file. The errors wrap errLink
// or errNotRegular for such files, fs.ErrNotExist for a missing one, fs.ErrExist when
// flag asks for exclusive creation of an existing name.
func openIn(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	if before, err := root.Lstat(name); err == nil {
		if err := regular(name, before); err != nil {
			if flag&os.O_EXCL != 0 {
				return nil, nil, fmt.Errorf("%s: %w (%w)", name, fs.ErrExist, err)
			}
			return nil, nil, err
		}
	}
	f, err := root.OpenFile(name, flag|openFlags, perm)
	if err != nil {
		if refusedLink(err) {
			return nil, nil, fmt.Errorf("%s: %w", name, errLink)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = regular(name, fi)
	}
	if err == nil {
		// A link put in the file's place after the check above, and followed by the root
		// (which follows links that stay inside it), shows now. Another regular file in its
		// place is a newer record renamed over it: the one opened is still whole.
		if after, lerr := root.Lstat(name); lerr == nil && after.Mode()&fs.ModeSymlink != 0 {
			err = fmt.Errorf("%s: %w (put in its place while it was opened)", name, errLink)
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regular refuses a file that is not a regular file.
func regular(name string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: %w", name, errLink)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %w (%v)", name, errNotRegular, fi.Mode().Type())
	}
	return nil
}

// createTemp creates a new file in root named prefix, random characters, suffix, mode
// 0600, exclusively: a name that exists (whatever it is) is never opened, and another is
// tried.
func createTemp(root *os.Root, prefix, suffix string) (*os.File, string, error) {
	for range 100 {
		var b [10]byte
		rand.Read(b[:])
		name := prefix + idEncoding.EncodeToString(b[:]) + suffix
		f, _, err := openIn(root, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("cannot create a temporary file %s*%s: every name tried exists", prefix, suffix)
}

// writeAtomic writes data to a new temporary file in root (named prefix, random, suffix),
// gives it modification time mtime, and renames it to name. On failure the temporary file
// is removed and name is left as it was. A link or anything else at name is replaced, not
// followed.
func writeAtomic(root *os.Root, name, prefix, suffix string, data []byte, mtime time.Time) (err error) {
	f, tmp, err := createTemp(root, prefix, suffix)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = root.Chtimes(tmp, mtime, mtime); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}
