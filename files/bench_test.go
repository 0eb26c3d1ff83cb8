package files

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// noCaps raises every cap so that the whole tree is read.
func noCaps(root, pattern string) Options {
	return Options{Root: root, Pattern: pattern, MaxFileBytes: 1 << 40, MaxTotalBytes: 1 << 40, MaxFiles: 1 << 30}
}

func benchGather(b *testing.B, opt Options) {
	b.Helper()
	if _, err := os.Stat(opt.Root); err != nil {
		b.Skipf("no tree: %v", err)
	}
	// One untimed call first: with -benchtime=5x there is no calibration run, and the first
	// calls of a fresh process pay for growing its heap. The loop measures the steady state.
	g, err := Gather(context.Background(), opt)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		g, err = Gather(context.Background(), opt)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(g.Bytes))
	b.ReportMetric(float64(len(g.Files)), "files")
}

// BenchmarkGatherGoroot reads every .go file of $GOROOT/src (about 7,700 files, 90 MB). The
// second alternative names "vendor" so that the vendored packages, default-excluded
// otherwise, are read too.
func BenchmarkGatherGoroot(b *testing.B) {
	benchGather(b, noCaps(testrun.GOROOTSrc(b), "{**/*.go,**/vendor/**/*.go}"))
}

// gatherCount gathers every .go file under root, as BenchmarkGatherGoroot, and counts their
// tokens with a new Counter (an empty cache), as a consultation does.
func gatherCount(b *testing.B, root string) (files int, size int64) {
	g, err := Gather(context.Background(), noCaps(root, "{**/*.go,**/vendor/**/*.go}"))
	if err != nil {
		b.Fatal(err)
	}
	contents := make([][]byte, len(g.Files))
	for i, f := range g.Files {
		contents[i] = f.Content
	}
	if _, err := tokens.NewCounter().CountAll(context.Background(), contents); err != nil {
		b.Fatal(err)
	}
	return len(g.Files), int64(g.Bytes)
}

// floor is the simplest program that does the work of gatherCount: it walks root with
// filepath.WalkDir, reads every .go file with os.ReadFile, and counts the tokens of all of
// them with a new Counter. No patterns, ignore files, limits, secrets scan, symbolic-link
// checks or *os.Root.
func floor(b *testing.B, root string) (files int, size int64) {
	var contents [][]byte
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(path, ".go") {
			return err
		}
		data, err := os.ReadFile(path)
		contents = append(contents, data)
		size += int64(len(data))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tokens.NewCounter().CountAll(context.Background(), contents); err != nil {
		b.Fatal(err)
	}
	return len(contents), size
}

// gorootTree returns $GOROOT/src, or skips b.
func gorootTree(b *testing.B) string {
	root := testrun.GOROOTSrc(b)
	if _, err := os.Stat(root); err != nil {
		b.Skipf("no tree: %v", err)
	}
	return root
}

// BenchmarkGatherCountGoroot gathers and counts every .go file of $GOROOT/src (gatherCount).
func BenchmarkGatherCountGoroot(b *testing.B) {
	root := gorootTree(b)
	benchCount(b, func() (int, int64) { return gatherCount(b, root) })
}

// BenchmarkFloorGoroot walks, reads and counts every .go file of $GOROOT/src the simplest
// way (floor): what BenchmarkGatherCountGoroot is compared with.
func BenchmarkFloorGoroot(b *testing.B) {
	root := gorootTree(b)
	benchCount(b, func() (int, int64) { return floor(b, root) })
}

// BenchmarkGatherCountOverFloor runs floor and gatherCount on $GOROOT/src one after the
// other in each iteration and reports the ratio of their times (x-floor): on a shared
// machine, the two runs of an iteration see about the same load, so the ratio holds
// where each time alone does not.
func BenchmarkGatherCountOverFloor(b *testing.B) {
	root := gorootTree(b)
	floor(b, root) // loads the vocabulary and grows the heap
	gatherCount(b, root)
	var tFloor, tGather time.Duration
	for b.Loop() {
		start := time.Now()
		floor(b, root)
		mid := time.Now()
		gatherCount(b, root)
		tFloor, tGather = tFloor+mid.Sub(start), tGather+time.Since(mid)
	}
	b.ReportMetric(float64(tGather)/float64(tFloor), "x-floor")
}

// benchCount times run, which reads and counts a tree, after one untimed run that loads
// the vocabulary and grows the heap.
func benchCount(b *testing.B, run func() (files int, size int64)) {
	b.Helper()
	files, size := run()
	for b.Loop() {
		run()
	}
	b.SetBytes(size)
	b.ReportMetric(float64(files), "files")
}

// BenchmarkGatherGorootDefault is the call a user makes: "**/*.go" with the default
// exclusions (vendor/ is left out: about 6,800 files, 68 MB) and caps raised.
func BenchmarkGatherGorootDefault(b *testing.B) {
	benchGather(b, noCaps(testrun.GOROOTSrc(b), "**/*.go"))
}

// BenchmarkGatherGorootCapped is the same call with the default caps (16 MiB, 1 MiB per
// file): the walk goes on to count what is over the cap but reads no more.
func BenchmarkGatherGorootCapped(b *testing.B) {
	benchGather(b, Options{Root: testrun.GOROOTSrc(b), Pattern: "**/*.go"})
}

// BenchmarkGatherGenerated gathers a generated tree of 2,000 files of 4 KiB under 200
// directories, with a .gitignore in each directory.
func BenchmarkGatherGenerated(b *testing.B) {
	root := b.TempDir()
	line := strings.Repeat("x", 63) + "\n"
	for d := range 200 {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d/10), fmt.Sprintf("sub%d", d%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.tmp\n/generated/\n!keep.tmp\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(strings.Repeat(line, 64)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchGather(b, noCaps(root, "**/*.go"))
}
