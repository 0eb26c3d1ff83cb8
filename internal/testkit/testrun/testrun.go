// Package testrun holds the two rules every test package of consult shares about how its
// tests run: how many run at once, and when the long load tests run.
package testrun

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// Parallel is how many parallel tests a package of consult runs at once unless -parallel is
// given. Its tests spend their time waiting on fakes, timers and child processes rather than
// on the CPU, so the default of GOMAXPROCS (2 on a small machine) leaves it idle.
const Parallel = 8

// LoadEnv names the environment variable that turns the load tests on (`make bench` sets it).
const LoadEnv = "CONSULT_LOAD"

// SetParallel sets -test.parallel to Parallel unless the command line gave it. Call it from
// TestMain after flag.Parse.
func SetParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(Parallel))
	}
}

// Run parses the flags, sets the parallel default and runs the tests: a package's whole
// TestMain when it has nothing else to do, os.Exit(testrun.Run(m)).
func Run(m *testing.M) int {
	flag.Parse()
	SetParallel()
	return m.Run()
}

// Large skips t under -short and under the race detector: a test that streams tens of MiB
// through one client takes many times longer with the detector and proves nothing more
// there (`make test` runs these once more without it). what says what makes it large.
func Large(t testing.TB, what string) {
	t.Helper()
	if testing.Short() || Race {
		t.Skipf("%s: runs without -short and without -race", what)
	}
}

// Timed reports whether the checks of speed are asserted: a ratio to a baseline measured in
// the same test holds on a quiet machine, but a load that changes between the baseline and
// the measure can break it, so the default suite only logs the figures, and `make bench`
// (CONSULT_LOAD=1) asserts them.
func Timed() bool { return !testing.Short() && os.Getenv(LoadEnv) == "1" }

// Load skips t unless the load tests were asked for with CONSULT_LOAD=1: they take seconds
// of both cores each and measure rather than check, so `go test ./...` leaves them out.
func Load(t testing.TB) {
	t.Helper()
	if testing.Short() || os.Getenv(LoadEnv) != "1" {
		t.Skipf("a load test: runs with %s=1 (make bench) and without -short", LoadEnv)
	}
}
