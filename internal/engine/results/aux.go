package results

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Files beside a record. A background consultation's worker holds a lock file while it
// runs, may log to a log file, and is stopped by a cancel marker; a result that was
// returned to its owner whole has a collected marker. All are named after the record's id
// with a leading dot, so List and Prune never take them for records.
const (
	cancelExt    = ".cancel"
	lockExt      = ".lock"
	logExt       = ".log"
	collectedExt = ".collected"
	// maxCancelBytes bounds what a cancel marker says (who cancelled).
	maxCancelBytes = 64
)

// auxName is the name of the file beside the record of this (valid) id with this ext.
func auxName(id, ext string) string { return "." + id + ext }

// Check checks the results directory now: nil when it is the user's or does not exist yet
// inside parents that are safe (the first Save creates it, mode 0700), else the error
// every other method would return, wrapping ErrUnsafeDir when another user may change it.
// A server calls it at start to refuse an unsafe directory before any consultation relies
// on it.
func (s *Store) Check() error {
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return checkMissing(s.dir) // where it would be created
	}
	if err != nil {
		return err
	}
	return root.Close()
}

// WriteCancel leaves the cancel marker of id, saying who cancelled (why, a short word); a
// marker already there is kept. It is created exclusively, never through a link.
func (s *Store) WriteCancel(id, why string) error {
	err := s.writeAux(id, cancelExt, why)
	if errors.Is(err, fs.ErrExist) {
		if _, ok := s.ReadCancel(id); ok {
			return nil // cancelled already
		}
		return fmt.Errorf("results: %s: something that is not a cancel marker is in its place", auxName(id, cancelExt))
	}
	return err
}

// writeAux creates the file with ext beside id's record, exclusively (an error wrapping
// fs.ErrExist when something has that name), never through a link, holding content.
func (s *Store) writeAux(id, ext, content string) error {
	f, err := s.openAux(id, ext, os.O_WRONLY|os.O_CREATE|os.O_EXCL, true)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// MarkCollected records that id's result was returned to its owner whole (or to its last
// page): from then on Prune may remove it before it expires to make room for others (see
// Prune). The marker is an empty file, created exclusively; one already there is kept.
func (s *Store) MarkCollected(id string) error {
	return kept(s.writeAux(id, collectedExt, ""))
}

// kept is err, or nil when it says only that the file was there already: it is kept.
func kept(err error) error {
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// Collected reports whether id's result was marked collected.
func (s *Store) Collected(id string) bool { return s.hasAux(id, collectedExt) }

// hasAux reports whether the file with ext beside id's record is there, a regular file.
func (s *Store) hasAux(id, ext string) bool {
	f, err := s.openAux(id, ext, os.O_RDONLY, false)
	if err == nil {
		f.Close()
	}
	return err == nil
}

// ReadCancel returns what id's cancel marker says, and whether there is one.
func (s *Store) ReadCancel(id string) (string, bool) {
	f, err := s.openAux(id, cancelExt, os.O_RDONLY, false)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCancelBytes))
	return strings.TrimSpace(string(b)), err == nil
}

// CreateLog creates the log file of id's worker, new (an existing file, link or FIFO of
// that name is refused, never opened), mode 0600, for appending. The directory is created
// if needed.
func (s *Store) CreateLog(id string) (*os.File, error) {
	return s.openAux(id, logExt, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, true)
}

// RemoveCancel, RemoveLog and RemoveLock remove the file of that kind beside id's record; a
// file already gone is no error. A link in its place is removed, never followed.
func (s *Store) RemoveCancel(id string) error { return s.removeAux(id, cancelExt) }

// RemoveLog removes the log file of id's worker; see RemoveCancel.
func (s *Store) RemoveLog(id string) error { return s.removeAux(id, logExt) }

// RemoveLock removes the lock file of id's worker; see RemoveCancel.
func (s *Store) RemoveLock(id string) error { return s.removeAux(id, lockExt) }

// openAux opens the file with ext beside id's record; see openFile.
func (s *Store) openAux(id, ext string, flag int, create bool) (*os.File, error) {
	if _, err := ParseID(id); err != nil {
		return nil, err
	}
	return s.openFile(auxName(id, ext), flag, create)
}

// openFile opens name (mode 0600 if it creates it) through the checked directory, with
// openIn's guarantees; create creates the directory first if needed.
func (s *Store) openFile(name string, flag int, create bool) (*os.File, error) {
	root, err := s.openDir(create)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, _, err := openIn(root, name, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", s.dir, err)
	}
	return f, nil
}

// removeAux removes the file with ext beside id's record; a file already gone, or no
// directory, is no error.
func (s *Store) removeAux(id, ext string) error {
	if err := s.takeAux(id, ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// takeAux removes the file with ext beside id's record; the error wraps fs.ErrNotExist when
// it is not there.
func (s *Store) takeAux(id, ext string) error {
	if _, err := ParseID(id); err != nil {
		return err
	}
	root, err := s.openDir(false)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Remove(auxName(id, ext))
}

// auxID returns the id of a file beside a record (cancel, lock or log), if name is one.
func auxID(name string) (string, bool) {
	if !strings.HasPrefix(name, ".") {
		return "", false
	}
	for _, ext := range []string{cancelExt, lockExt, logExt, orphanExt, collectedExt} {
		if id, ok := strings.CutSuffix(name[1:], ext); ok {
			if _, err := ParseID(id); err == nil {
				return id, true
			}
		}
	}
	return "", false
}

// staleAux reports whether a file beside id's record is a leftover: its record is gone (a
// worker was killed, the record expired), and it has not been touched for staleTemp.
func staleAux(root *os.Root, id string, info fs.FileInfo, now time.Time) bool {
	if !info.Mode().IsRegular() || now.Sub(info.ModTime()) <= staleTemp {
		return false
	}
	_, err := root.Lstat(recordName(id))
	return errors.Is(err, fs.ErrNotExist)
}
