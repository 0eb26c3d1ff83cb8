package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafeDir: the results directory, or one of its parents, can be changed by another
// user, so nothing in it can be trusted (a cancel marker or lock replaced, a record rewritten: the
// other user would decide what the user's agent reads). Like ssh with
// ~/.ssh, the store then refuses to use it; the error names the directory, what is wrong
// and the fix.
var ErrUnsafeDir = errors.New("unsafe results directory")

// openDir checks the results directory and opens it as an *os.Root, through which every
// file of the store is then opened: the kernel refuses any name that leads out of it. With
// create, a missing directory is created first (mode 0700, and so are missing parents);
// without, a missing directory is an error wrapping fs.ErrNotExist.
//
// The directory must be a directory owned by the current user and not writable by group
// or others, and each of its parents must not be writable by others unless it is sticky
// (like /tmp, where others cannot remove or rename what is ours): else the error wraps
// ErrUnsafeDir. On systems without Unix owners and modes the checks are skipped; the
// directory is still opened as a root.
func (s *Store) openDir(create bool) (*os.Root, error) {
	if s.dir == "" {
		return nil, errNoDir
	}
	if create {
		if _, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
			// Nothing is created inside a parent another user may change.
			if err := checkMissing(s.dir); err != nil {
				return nil, err
			}
			if err := os.MkdirAll(s.dir, 0o700); err != nil {
				return nil, fmt.Errorf("results: cannot create the results directory: %w", err)
			}
		}
	}
	real, err := filepath.EvalSymlinks(s.dir)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if err := checkParents(s.dir, s.dir, real); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	// The directory opened is the one checked, whatever its name leads to now.
	fi, err := root.Stat(".")
	if err == nil {
		err = checkDir(s.dir, fi)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// checkDir refuses a results directory (described by fi, named dir) that another user may
// change: owned by someone else, or writable by group or others.
func checkDir(dir string, fi fs.FileInfo) error {
	if !checkModes {
		return nil
	}
	if !fi.IsDir() {
		return fmt.Errorf("results: %s is not a directory", dir)
	}
	if uid, ok := FileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d): another user could replace what consult stores there; choose a directory of your own with --results-dir (or CONSULT_RESULTS_DIR)",
			ErrUnsafeDir, dir, uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		writers := map[fs.FileMode]string{0o022: "group and others", 0o020: "its group", 0o002: "others"}[perm&0o022]
		return fmt.Errorf("%w: %s is writable by %s (mode %04o): another user could replace what consult stores there; run chmod go-w %s, or choose another --results-dir",
			ErrUnsafeDir, dir, writers, perm, shellQuote(dir))
	}
	return nil
}

// checkParents refuses a results directory (named dir; lexical is that path, or the path
// of a descendant of it, as written, and real the same once its links are resolved) with a
// parent that another user could change: one owned by a user other than the current
// one or root, or one its group or others may write without the sticky bit (in a sticky
// directory like /tmp, others cannot rename or remove what is ours). Such a user could
// rename the results directory away and put one of their own, or a link, in its place. The
// parents of dir as written are checked too when it goes through a link: the link lives in
// one of them.
func checkParents(dir, lexical, real string) error {
	if !checkModes {
		return nil
	}
	if err := checkAncestors(dir, real); err != nil {
		return err
	}
	if abs, err := filepath.Abs(lexical); err == nil && filepath.Clean(abs) != real {
		return checkAncestors(dir, filepath.Clean(abs))
	}
	return nil
}

// checkAncestors checks every ancestor of p, the results directory dir's path, as
// checkParents says; links among them are followed.
func checkAncestors(dir, p string) error {
	for p = filepath.Dir(p); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		if err := checkParent(dir, p, fi); err != nil {
			return err
		}
		if next := filepath.Dir(p); next == p {
			return nil
		}
	}
}

// checkParent refuses p, a parent of the results directory dir described by fi, when
// another user could change it.
func checkParent(dir, p string, fi fs.FileInfo) error {
	if uid, ok := FileOwner(fi); ok && uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("%w: %s is inside %s, which is owned by uid %d, not by you (uid %d) or root: that user could replace the results directory; choose a directory of your own with --results-dir (or CONSULT_RESULTS_DIR)",
			ErrUnsafeDir, dir, p, uid, os.Getuid())
	}
	perm := fi.Mode().Perm()
	if perm&0o022 == 0 || fi.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	if perm&0o002 != 0 {
		return fmt.Errorf("%w: %s is inside %s, which every user may write (mode %04o, not sticky): another user could replace the results directory; run chmod o-w %s, or choose another --results-dir",
			ErrUnsafeDir, dir, p, perm, shellQuote(p))
	}
	return fmt.Errorf("%w: %s is inside %s, which its group may write (mode %04o, not sticky): another member of the group could replace the results directory; run chmod g-w %s, or choose another --results-dir",
		ErrUnsafeDir, dir, p, perm, shellQuote(p))
}

// checkMissing checks, for a results directory dir that does not exist, its deepest
// existing ancestor as checkParents checks parents: the directories MkdirAll would create
// must not land where another user may replace them.
func checkMissing(dir string) error {
	if !checkModes {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return checkParents(dir, filepath.Join(p, "missing"), filepath.Join(real, "missing"))
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("results: %w", err)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// shellQuote quotes a path for a command line the user may paste, when it needs quoting.
func shellQuote(p string) string {
	const plain = "/.-_~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if strings.Trim(p, plain) == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
