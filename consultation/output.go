package consultation

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxNameTries bounds the search for a free name next to an existing output file.
const maxNameTries = 1000

// outputTarget is the directory output_file goes to, opened when the call is checked (see
// checkAllowed) and held until the call ends. The answer arrives much later; creating the
// file through this handle (openat) means a directory swapped for a symbolic link meanwhile
// is never followed. A zero outputTarget opens the directory when the answer is written.
type outputTarget struct{ dir *os.Root }

// close releases the directory handle; the call is over.
func (t outputTarget) close() {
	if t.dir != nil {
		t.dir.Close()
	}
}

// writeNew writes data to path atomically and never replaces an existing file: when path is
// taken it writes "name-1.ext", "name-2.ext", … instead and returns the name it used. The data
// goes to a temporary file in the same directory first, which is then hard-linked into place
// (link fails rather than overwrite), so a reader never sees a half-written answer. Every
// name is created in the directory t holds (see [outputTarget]) and created exclusively, so a symbolic
// link is never followed as the final component.
func writeNew(path string, t outputTarget, data string) (string, error) {
	dir := filepath.Dir(path)
	root := t.dir
	if root == nil {
		var err error
		if root, err = os.OpenRoot(dir); err != nil {
			return "", fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPathError(err))
		}
		defer root.Close()
	}
	tmp, tmpName, err := createTemp(root)
	if err != nil {
		return "", fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPathError(err))
	}
	defer root.Remove(tmpName)
	if _, err := tmp.WriteString(data); err != nil { // a string: no copy of the answer
		tmp.Close()
		return "", fmt.Errorf("cannot write %s: %w", path, unwrapPathError(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("cannot write %s: %w", path, unwrapPathError(err))
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", path, unwrapPathError(err))
	}
	for i := 0; i < maxNameTries; i++ {
		name := numbered(path, i)
		err := root.Link(tmpName, name)
		if err == nil {
			return filepath.Join(dir, name), nil
		}
		if errors.Is(err, os.ErrExist) {
			continue
		}
		// No hard links here (some network and FUSE filesystems): create exclusively instead.
		return writeExclusive(root, path, data)
	}
	return "", fmt.Errorf("%s and %d numbered variants already exist: choose another output_file", path, maxNameTries-1)
}

// numbered is the base name of path for try i: "answer.md", then "answer-1.md", ...
func numbered(path string, i int) string {
	name := filepath.Base(path)
	if i == 0 {
		return name
	}
	ext := filepath.Ext(name)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), i, ext)
}

// createTemp creates a new hidden file with a random name in root (as os.CreateTemp does).
func createTemp(root *os.Root) (*os.File, string, error) {
	for {
		name := ".consult-answer-" + rand.Text()[:12]
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, name, err
	}
}

// writeExclusive is writeNew's fallback where hard links are not supported: O_EXCL keeps the
// no-overwrite promise, at the cost of atomicity.
func writeExclusive(root *os.Root, path string, data string) (string, error) {
	dir := filepath.Dir(path)
	for i := 0; i < maxNameTries; i++ {
		name := numbered(path, i)
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot create %s: %w", filepath.Join(dir, name), unwrapPathError(err))
		}
		_, werr := f.WriteString(data)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			root.Remove(name)
			return "", fmt.Errorf("cannot write %s: %w", filepath.Join(dir, name), errors.Join(werr, cerr))
		}
		return filepath.Join(dir, name), nil
	}
	return "", fmt.Errorf("%s and %d numbered variants already exist: choose another output_file", path, maxNameTries-1)
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
