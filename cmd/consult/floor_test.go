package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// floorEnv, set to a directory, makes the test binary the floor program over it (see
// floorMain) instead of running tests.
const floorEnv = "CONSULT_FLOOR_ROOT"

// floorMain is the floor program that BenchmarkDryRunOverFloor holds `consult dry-run`
// against, run as a whole process of its own: the simplest program that does a dry run's
// work under the default caps. It walks root with filepath.WalkDir in lexical order (as
// consult does), passes over the directories named vendor (left out by default), reads each
// .go file of at most consult.MaxFileBytes with os.ReadFile until the next would pass
// consult.MaxTotalBytes (then only walks on, as consult lists what it left out), and counts
// the tokens of all it read with a new Counter, the vocabulary loading while it reads as in
// the dry run. No patterns, ignore files, secrets scan, *os.Root, digests or report. It
// prints the files, bytes and tokens.
func floorMain(root string) int {
	tokens.Preload()
	var contents [][]byte
	var size int64
	full := false
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "vendor":
			return filepath.SkipDir
		case full || !d.Type().IsRegular() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > int64(consult.MaxFileBytes) {
			return err
		}
		if size+fi.Size() > int64(consult.MaxTotalBytes) {
			full = true
			return nil
		}
		data, err := os.ReadFile(path)
		contents = append(contents, data)
		size += int64(len(data))
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	counts, err := tokens.NewCounter().CountAll(context.Background(), contents)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var n consult.Tokens
	for _, c := range counts {
		n += c
	}
	fmt.Printf("%d files, %d bytes, %d tokens\n", len(contents), size, n)
	return 0
}

// BenchmarkDryRunOverFloor runs the built binary's `consult dry-run --path $GOROOT/src
// --pattern '**/*.go'` and the floor program (floorMain, this test binary started again) as
// whole processes, alternately, one of each per iteration, and reports the ratio of their
// median wall times (x-floor) and of their median CPU times, user and system
// (x-floor-cpu): process start, the vocabulary's load and exit included on both sides.
// Run alternately, the two meet the same load on a shared machine.
func BenchmarkDryRunOverFloor(b *testing.B) {
	root := testrun.GOROOTSrc(b)
	if _, err := os.Stat(root); err != nil {
		b.Skipf("no tree: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	// run runs cmd with env added and returns its wall and CPU time and its first line.
	run := func(cmd *exec.Cmd, env ...string) (wall, cpu time.Duration, first string) {
		cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "CONSULT_RESULTS_DIR=" + home}, env...)...)
		start := time.Now()
		out, err := cmd.Output()
		wall = time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v\n%s", cmd.Args, err, out)
		}
		first, _, _ = strings.Cut(strings.TrimPrefix(string(out), "Dry run (nothing sent to a model).\n"), "\n")
		return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), first
	}
	var fWall, fCPU, dWall, dCPU []time.Duration
	var fLine, dLine string
	for b.Loop() {
		w, c, line := run(exec.Command(self, "-test.run=^$"), floorEnv+"="+root)
		fWall, fCPU, fLine = append(fWall, w), append(fCPU, c), line
		w, c, line = run(exec.Command(binary, "dry-run", "--path", root, "--pattern", "**/*.go"))
		dWall, dCPU, dLine = append(dWall, w), append(dCPU, c), line
	}
	b.Logf("floor: %s\ndry run: %s", fLine, dLine)
	b.ReportMetric(ms(median(fWall)), "floor-ms")
	b.ReportMetric(ms(median(dWall)), "dryrun-ms")
	b.ReportMetric(float64(median(dWall))/float64(median(fWall)), "x-floor")
	b.ReportMetric(ms(median(fCPU)), "floor-cpu-ms")
	b.ReportMetric(ms(median(dCPU)), "dryrun-cpu-ms")
	b.ReportMetric(float64(median(dCPU))/float64(median(fCPU)), "x-floor-cpu")
}

// median returns the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
