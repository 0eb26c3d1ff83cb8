package testrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildConsult builds the consult command, whose package is in cmdDir, for the tests that
// drive it as a process, with the race detector when race is set. It builds into a
// directory of the user's cache named after cmdDir and race, so that a run whose sources
// have not changed finds the binary up to date (go build then has nothing to do),
// and the packages whose tests run at once share it. A lock keeps two runs
// from building it at once. Without a cache directory it builds into a temporary one,
// which cleanup removes.
func BuildConsult(cmdDir string, race bool) (bin string, cleanup func(), err error) {
	abs, err := filepath.Abs(cmdDir)
	if err != nil {
		return "", nil, err
	}
	cleanup = func() {}
	dir := ""
	if cache, err := os.UserCacheDir(); err == nil {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s race=%v", abs, race))
		dir = filepath.Join(cache, "consult-test", hex.EncodeToString(sum[:8]))
		if os.MkdirAll(dir, 0o700) != nil {
			dir = ""
		}
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "consult-bin"); err != nil {
			return "", nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	}
	unlock, err := lockDir(dir)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	defer unlock()
	bin = filepath.Join(dir, "consult")
	// -buildvcs=auto as in the Makefile: the commit is recorded even under GOFLAGS=-buildvcs=false.
	args := []string{"build", "-buildvcs=auto", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = abs
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, cleanup, nil
}
