package testrun

import (
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// goroot is the output of `go env GOROOT`, asked once per test process.
var goroot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// GOROOTSrc returns the source tree of the Go installation that runs the tests,
// GOROOT/src joined with elem, the corpus of the benchmarks; it skips tb when there is
// none.
func GOROOTSrc(tb testing.TB, elem ...string) string {
	tb.Helper()
	dir, err := goroot()
	if err != nil || dir == "" {
		tb.Skipf("no Go installation (go env GOROOT: %v)", err)
	}
	return filepath.Join(append([]string{dir, "src"}, elem...)...)
}
