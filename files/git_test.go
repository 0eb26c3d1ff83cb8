package files

import (
	"bytes"
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// TestMatchesGit checks the ignore rules against git itself: with pattern "**", Gather must
// find what `git ls-files -co --exclude-standard` lists, less what our own rules leave out
// by design.
func TestMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	a, err := txtar.ParseFile(filepath.Join("..", "testdata", "gather", "gitcompare.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"", "sub", "sub/deeper", "nested/sub", "wl"} {
		t.Run("root="+cmp.Or(root, "."), func(t *testing.T) {
			top := extract(t, a)
			runGit(t, top, "init", "-q")
			if err := os.Rename(filepath.Join(top, "git-info-exclude"), filepath.Join(top, ".git", "info", "exclude")); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(top, filepath.FromSlash(root))

			var want []string
			for _, p := range strings.Split(strings.TrimSuffix(runGit(t, dir, "ls-files", "-co", "--exclude-standard", "-z"), "\x00"), "\x00") {
				if p != "" && !leftOutByDesign(p) {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			if len(want) == 0 {
				t.Fatalf("git lists only %q: fixture problem", want)
			}

			got := paths(gather(t, Options{Root: dir, Pattern: "**"}))
			if !slices.Equal(got, want) {
				t.Errorf("Gather and git disagree:\n only Gather: %q\n only git:    %q", minus(got, want), minus(want, got))
			}
		})
	}
}

// leftOutByDesign reports the paths git lists but Gather skips on purpose.
func leftOutByDesign(p string) bool {
	segs := strings.Split(p, "/")
	for _, s := range segs[:len(segs)-1] {
		if isDefaultExcludedDir(s, nil) {
			return true
		}
	}
	name := segs[len(segs)-1]
	return isLockFile(name) || secretName(p, name) != ""
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// minus returns the elements of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
