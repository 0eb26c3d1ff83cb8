package results

import (
	"errors"
	"fmt"
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
)

// JobPath is the job file of the consultation with this (valid) id.
func (s *Store) JobPath(id string) string { return filepath.Join(s.dir, "."+id+jobExt) }

// LockPath is the lock file the worker of this consultation holds while it runs.
func (s *Store) LockPath(id string) string { return filepath.Join(s.dir, "."+id+lockExt) }

// LogPath is where the worker of this consultation writes its log.
func (s *Store) LogPath(id string) string { return filepath.Join(s.dir, "."+id+logExt) }

// WriteJob writes a worker's job file for id atomically, mode 0600, creating the directory
// if needed, and returns its path.
func (s *Store) WriteJob(id string, data []byte) (string, error) {
	if _, err := ParseID(id); err != nil {
		return "", err
	}
	if s.dir == "" {
		return "", errNoDir
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", fmt.Errorf("results: %w", err)
	}
	p := s.JobPath(id)
	if err := writeAtomic(p, tempPrefix+id+"-*"+tempSuffix, data, time.Now()); err != nil {
		return "", fmt.Errorf("results: cannot write the job of %s: %w", id, err)
	}
	return p, nil
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
func (s *Store) staleAux(name string, info fs.FileInfo, now time.Time) bool {
	id, ok := auxID(name)
	if !ok || !info.Mode().IsRegular() || now.Sub(info.ModTime()) <= staleTemp {
		return false
	}
	_, err := os.Lstat(s.path(id))
	return errors.Is(err, fs.ErrNotExist)
}
