package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/cputime"
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
	// calls of a fresh process pay for growing its heap (first-touch page faults, which cost
	// about 11 µs per 4 KiB page on the 2-core VM this was tuned on: ~150 ms per 100 MB).
	// The loop measures the steady state.
	g, err := Gather(context.Background(), opt)
	if err != nil {
		b.Fatal(err)
	}
	cpu := cputime.Now()
	for b.Loop() {
		g, err = Gather(context.Background(), opt)
		if err != nil {
			b.Fatal(err)
		}
	}
	cputime.Report(b, cpu)
	b.SetBytes(int64(g.Bytes))
	b.ReportMetric(float64(len(g.Files)), "files")
}

// BenchmarkGatherGoroot reads every .go file of $GOROOT/src (about 7,700 files, 90 MB). The
// second alternative names "vendor" so that the vendored packages, default-excluded
// otherwise, are read too.
func BenchmarkGatherGoroot(b *testing.B) {
	benchGather(b, noCaps(filepath.Join(runtime.GOROOT(), "src"), "{**/*.go,**/vendor/**/*.go}"))
}

// BenchmarkGatherGorootNoScan is BenchmarkGatherGoroot without the secrets scan (private
// keys, tokens): the difference is what the scan costs a gathering.
func BenchmarkGatherGorootNoScan(b *testing.B) {
	scanSecrets = false
	defer func() { scanSecrets = true }()
	benchGather(b, noCaps(filepath.Join(runtime.GOROOT(), "src"), "{**/*.go,**/vendor/**/*.go}"))
}

// BenchmarkGatherGorootDefault is the call a user makes: "**/*.go" with the default
// exclusions (vendor/ is left out: about 6,800 files, 68 MB) and caps raised.
func BenchmarkGatherGorootDefault(b *testing.B) {
	benchGather(b, noCaps(filepath.Join(runtime.GOROOT(), "src"), "**/*.go"))
}

// BenchmarkGatherGorootCapped is the same call with the default caps (16 MiB, 1 MiB per
// file): the walk goes on to count what is over the cap but reads no more.
func BenchmarkGatherGorootCapped(b *testing.B) {
	benchGather(b, Options{Root: filepath.Join(runtime.GOROOT(), "src"), Pattern: "**/*.go"})
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
