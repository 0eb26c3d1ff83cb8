package consultation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxNameTries bounds the search for a free name next to an existing output file.
const maxNameTries = 1000

// writeNew writes data to path atomically and never replaces an existing file: when path is
// taken it writes "name-1.ext", "name-2.ext", … instead and returns the name it used. The data
// goes to a temporary file in the same directory first, which is then hard-linked into place
// (link fails rather than overwrite), so a reader never sees a half-written answer.
func writeNew(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".consult-answer-*")
	if err != nil {
		return "", fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPathError(err))
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if _, err := tmp.Write(data); err != nil {
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
	ext := filepath.Ext(path)
	stem := strings.TrimSuffix(path, ext)
	for i := 0; i < maxNameTries; i++ {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		err := os.Link(tmpName, name)
		if err == nil {
			return name, nil
		}
		if errors.Is(err, os.ErrExist) {
			continue
		}
		// No hard links here (some network and FUSE filesystems): create exclusively instead.
		return writeExclusive(stem, ext, path, data)
	}
	return "", fmt.Errorf("%s and %d numbered variants already exist: choose another output_file", path, maxNameTries-1)
}

// writeExclusive is writeNew's fallback where hard links are not supported: O_EXCL keeps the
// no-overwrite promise, at the cost of atomicity.
func writeExclusive(stem, ext, path string, data []byte) (string, error) {
	for i := 0; i < maxNameTries; i++ {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot create %s: %w", name, unwrapPathError(err))
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			os.Remove(name)
			return "", fmt.Errorf("cannot write %s: %w", name, errors.Join(werr, cerr))
		}
		return name, nil
	}
	return "", fmt.Errorf("%s and %d numbered variants already exist: choose another output_file", path, maxNameTries-1)
}
