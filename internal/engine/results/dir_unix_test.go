//go:build unix

package results

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// storeOps are every method of a store that touches its directory, each run once.
var storeOps = []struct {
	name string
	run  func(s *Store) error
}{
	{"Check", func(s *Store) error { return s.Check() }},
	{"Save", func(s *Store) error {
		return s.Save(Record{ID: idAt(t0, 1), Status: Done, Created: t0, Answer: "the answer"})
	}},
	{"Load", func(s *Store) error { _, err := s.Load(idAt(t0, 1)); return err }},
	{"List", func(s *Store) error { _, err := s.List(0); return err }},
	{"Prune", func(s *Store) error { return s.Prune() }},
	{"WriteCancel", func(s *Store) error { return s.WriteCancel(idAt(t0, 1), "tool") }},
	{"CreateLog", func(s *Store) error {
		f, err := s.CreateLog(idAt(t0, 1))
		if err == nil {
			f.Close()
		}
		return err
	}},
	{"TryLock", func(s *Store) error {
		l, _, err := s.TryLock(idAt(t0, 1))
		if err == nil {
			l.Close()
		}
		return err
	}},
	{"TrySlot", func(s *Store) error {
		l, _, err := s.TrySlot(0)
		if err == nil {
			l.Close()
		}
		return err
	}},
	{"AddSpend", func(s *Store) error { _, err := s.AddSpend(context.Background(), t0, 1); return err }},
	{"Reserve", func(s *Store) error { _, _, _, _, err := s.Reserve(context.Background(), t0, 1, 1, 0, t0); return err }},
	{"Spent", func(s *Store) error { _, _, err := s.Spent(t0); return err }},
}

// TestUnsafeDirRefused: a results directory another user may change (owned by them,
// writable by group or others, inside a parent another user owns, or one its group or
// every user may write that is not sticky, or reached through a link such a parent holds)
// is refused by every method with an error naming the directory, what is wrong
// and the fix; nothing is written in it. A directory of the user's, also inside a sticky
// parent like /tmp, is used.
func TestUnsafeDirRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// make builds the results directory under base and returns it.
		make    func(t *testing.T, base string) string
		root    bool     // needs root (chown to another user)
		want    []string // in the error, besides the directory
		missing bool     // the directory and its parent do not exist: nothing may create them
	}{
		{"owned by another user", func(t *testing.T, base string) string {
			dir := mkdir(t, base, "results", 0o700)
			chown(t, dir, 65534)
			return dir
		}, true, []string{"owned by uid 65534", "--results-dir"}, false},
		{"mode 0777", func(t *testing.T, base string) string {
			return mkdir(t, base, "results", 0o777)
		}, false, []string{"writable by group and others", "0777", "chmod go-w "}, false},
		{"mode 0775", func(t *testing.T, base string) string {
			return mkdir(t, base, "results", 0o775)
		}, false, []string{"writable by its group", "0775", "chmod go-w "}, false},
		{"mode 0702", func(t *testing.T, base string) string {
			return mkdir(t, base, "results", 0o702)
		}, false, []string{"writable by others", "chmod go-w "}, false},
		{"parent writable by others, not sticky", func(t *testing.T, base string) string {
			parent := mkdir(t, base, "shared", 0o777)
			return mkdir(t, parent, "results", 0o700)
		}, false, []string{"every user may write", "not sticky", "chmod o-w ", "shared,"}, false},
		{"missing, inside a parent writable by others", func(t *testing.T, base string) string {
			parent := mkdir(t, base, "shared", 0o777)
			return filepath.Join(parent, "state", "results")
		}, false, []string{"every user may write", "chmod o-w "}, true},
		{"parent writable by its group, not sticky", func(t *testing.T, base string) string {
			parent := mkdir(t, base, "team", 0o770)
			return mkdir(t, parent, "results", 0o700)
		}, false, []string{"its group may write", "0770", "chmod g-w ", "team,"}, false},
		{"parent owned by another user", func(t *testing.T, base string) string {
			parent := mkdir(t, base, "theirs", 0o755)
			dir := mkdir(t, parent, "results", 0o700)
			chown(t, parent, 65534)
			return dir
		}, true, []string{"inside", "owned by uid 65534", "not by you", "--results-dir"}, false},
		{"grandparent owned by another user, sticky", func(t *testing.T, base string) string {
			top := mkdir(t, base, "theirs", 0o777|os.ModeSticky)
			dir := mkdir(t, mkdir(t, top, "mine", 0o700), "results", 0o700)
			chown(t, top, 65534) // the owner of a sticky directory may still rename what is in it
			return dir
		}, true, []string{"owned by uid 65534"}, false},
		{"missing, inside another user's directory", func(t *testing.T, base string) string {
			parent := mkdir(t, base, "theirs", 0o755)
			chown(t, parent, 65534)
			return filepath.Join(parent, "state", "results")
		}, true, []string{"owned by uid 65534"}, true},
		{"a link in another user's directory to one of ours", func(t *testing.T, base string) string {
			mine := mkdir(t, base, "mine", 0o700)
			theirs := mkdir(t, base, "theirs", 0o755)
			link := filepath.Join(theirs, "results")
			if err := os.Symlink(mine, link); err != nil {
				t.Fatal(err)
			}
			chown(t, theirs, 65534) // they may point the link elsewhere at any time
			return link
		}, true, []string{"owned by uid 65534"}, false},
		{"a link to another user's directory", func(t *testing.T, base string) string {
			other := mkdir(t, base, "theirs", 0o700)
			chown(t, other, 65534)
			link := filepath.Join(base, "results")
			if err := os.Symlink(other, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, true, []string{"owned by uid 65534"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.root && os.Getuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			dir := tt.make(t, t.TempDir())
			for _, op := range storeOps {
				s := Open(dir, 0, 0, 0)
				err := op.run(s)
				if op.name == "Load" || op.name == "List" || op.name == "Prune" || op.name == "Spent" {
					if _, statErr := os.Stat(dir); statErr != nil {
						continue // reading a missing directory creates nothing and refuses nothing
					}
				}
				if !errors.Is(err, ErrUnsafeDir) {
					t.Errorf("%s: got %v, want ErrUnsafeDir", op.name, err)
					continue
				}
				for _, w := range append([]string{dir}, tt.want...) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q lacks %q", op.name, err, w)
					}
				}
			}
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				t.Errorf("files written in the refused directory: %v", entries)
			}
			if tt.missing {
				if _, err := os.Lstat(filepath.Dir(dir)); err == nil {
					t.Errorf("%s was created inside the unsafe parent", filepath.Dir(dir))
				}
			}
		})
	}
}

// TestSafeDirUsed: the user's own directory, 0700 or 0755, directly in a sticky
// world-writable parent like /tmp or a sticky group-writable one, is used; a missing one is created 0700 with its
// missing parents.
func TestSafeDirUsed(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	sticky := mkdir(t, base, "tmp", 0o777|os.ModeSticky)
	teamSticky := mkdir(t, base, "team", 0o770|os.ModeSticky)
	for _, dir := range []string{
		mkdir(t, sticky, "mine", 0o700),
		mkdir(t, teamSticky, "mine", 0o700),
		mkdir(t, base, "readable", 0o755),
		filepath.Join(sticky, "new", "state", "results"),
	} {
		s := Open(dir, 0, 0, 0)
		for _, op := range storeOps {
			if err := op.run(s); err != nil {
				t.Errorf("%s in %s: %v", op.name, dir, err)
			}
		}
	}
	for _, p := range []string{filepath.Join(sticky, "new"), filepath.Join(sticky, "new", "state"), filepath.Join(sticky, "new", "state", "results")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("%s created with mode %04o, want 0700", p, got)
		}
	}
}

// mkdir makes base/name with exactly mode (whatever the umask) and returns it.
func mkdir(t *testing.T, base, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(base, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// chown gives p to uid.
func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// outside is a file outside the results directory that a planted link points at, and a
// check that it was neither written nor replaced.
type outside struct {
	path string
	fi   os.FileInfo
}

func newOutside(t *testing.T) outside {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bashrc")
	writeFile(t, p, "the victim's file\n")
	old := time.Now().Add(-time.Hour)
	setMtime(t, p, old)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return outside{p, fi}
}

func (o outside) untouched(t *testing.T, what string) {
	t.Helper()
	fi, err := os.Stat(o.path)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b, _ := os.ReadFile(o.path)
	if string(b) != "the victim's file\n" || !fi.ModTime().Equal(o.fi.ModTime()) || !os.SameFile(fi, o.fi) {
		t.Errorf("%s wrote the file a planted link points at: %q", what, b)
	}
}
