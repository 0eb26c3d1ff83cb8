package results

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files beside a record. A background consultation's worker is told what to do by a job
// file, holds a lock file while it runs and may log to a log file; all three are named
// after the record's id with a leading dot, so List and Prune never take them for records.
const (
	jobExt  = ".job"
	lockExt = ".lock"
	logExt  = ".log"
	// maxJobBytes bounds a job file: a request's arguments (the question is the large
	// one) and the server's settings.
	maxJobBytes = 16 << 20
)

// auxName is the name of the file beside the record of this (valid) id with this ext.
func auxName(id, ext string) string { return "." + id + ext }

// JobPath is the job file of the consultation with this (valid) id.
func (s *Store) JobPath(id string) string { return filepath.Join(s.dir, auxName(id, jobExt)) }

// LockPath is the lock file the worker of this consultation holds while it runs. Open it
// with HoldLock and test it with LockHeld, which refuse links and other users' directories.
func (s *Store) LockPath(id string) string { return filepath.Join(s.dir, auxName(id, lockExt)) }

// LogPath is where the worker of this consultation writes its log. Create it with
// CreateLog, which refuses links and other users' directories.
func (s *Store) LogPath(id string) string { return filepath.Join(s.dir, auxName(id, logExt)) }

// Check checks the results directory now: nil when it is the user's or does not exist yet
// inside parents that are safe (the first Save creates it, mode 0700), else the error every other method would return,
// wrapping ErrUnsafeDir when another user may change it. A server calls it at start to
// refuse an unsafe directory before any consultation relies on it.
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

// WriteJob writes a worker's job file for id atomically, mode 0600, creating the directory
// if needed, and returns its path.
func (s *Store) WriteJob(id string, data []byte) (string, error) {
	if _, err := ParseID(id); err != nil {
		return "", err
	}
	root, err := s.openDir(true)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := writeAtomic(root, auxName(id, jobExt), tempPrefix+id+"-", tempSuffix, data, time.Now()); err != nil {
		return "", fmt.Errorf("results: cannot write the job of %s: %w", id, err)
	}
	return s.JobPath(id), nil
}

// ReadJob returns the job file of id as WriteJob wrote it: opened without following a
// link or blocking, a regular file of at most 16 MiB (refused from its size otherwise).
func (s *Store) ReadJob(id string) ([]byte, error) {
	f, err := s.openAux(id, jobExt, os.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if fi.Size() > maxJobBytes {
		return nil, fmt.Errorf("results: the job file of %s is %d bytes, more than consult writes (%d); it was not read", id, fi.Size(), maxJobBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJobBytes+1))
	if err == nil && len(data) > maxJobBytes {
		err = fmt.Errorf("the job file of %s is more than %d bytes", id, maxJobBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return data, nil
}

// CreateLog creates the log file of id's worker, new (an existing file, link or FIFO of
// that name is refused, never opened), mode 0600, for appending. The directory is created
// if needed.
func (s *Store) CreateLog(id string) (*os.File, error) {
	return s.openAux(id, logExt, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, true)
}

// RemoveJob, RemoveLog and RemoveLock remove the file of that kind beside id's record; a
// file already gone is no error. A link in its place is removed, never followed.
func (s *Store) RemoveJob(id string) error { return s.removeAux(id, jobExt) }

// RemoveLog removes the log file of id's worker; see RemoveJob.
func (s *Store) RemoveLog(id string) error { return s.removeAux(id, logExt) }

// RemoveLock removes the lock file of id's worker; see RemoveJob.
func (s *Store) RemoveLock(id string) error { return s.removeAux(id, lockExt) }

// openAux opens the file with ext beside id's record through the checked directory, with
// openIn's guarantees; create creates the directory first if needed.
func (s *Store) openAux(id, ext string, flag int, create bool) (*os.File, error) {
	if _, err := ParseID(id); err != nil {
		return nil, err
	}
	root, err := s.openDir(create)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, _, err := openIn(root, auxName(id, ext), flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", s.dir, err)
	}
	return f, nil
}

// removeAux removes the file with ext beside id's record.
func (s *Store) removeAux(id, ext string) error {
	if _, err := ParseID(id); err != nil {
		return err
	}
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(auxName(id, ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// auxID returns the id of a file beside a record (job, lock or log), if name is one.
func auxID(name string) (string, bool) {
	if !strings.HasPrefix(name, ".") {
		return "", false
	}
	for _, ext := range []string{jobExt, lockExt, logExt} {
		if id, ok := strings.CutSuffix(name[1:], ext); ok {
			if _, err := ParseID(id); err == nil {
				return id, true
			}
		}
	}
	return "", false
}

// staleAux reports whether a file beside a record is the leftover of a worker that was
// killed: its record is gone, and it has not been touched for staleTemp.
func (s *Store) staleAux(root *os.Root, name string, info fs.FileInfo, now time.Time) bool {
	id, ok := auxID(name)
	if !ok || !info.Mode().IsRegular() || now.Sub(info.ModTime()) <= staleTemp {
		return false
	}
	_, err := root.Lstat(recordName(id))
	return errors.Is(err, fs.ErrNotExist)
}

// Ensure creates the results directory (mode 0700, with its missing parents) when it does
// not exist yet, after the same checks as every other method: nil when it is the user's.
func (s *Store) Ensure() error {
	root, err := s.openDir(true)
	if err != nil {
		return err
	}
	return root.Close()
}
