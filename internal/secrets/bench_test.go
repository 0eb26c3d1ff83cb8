package secrets

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/consultmcp/consult/internal/testrun"
)

type gorootFile struct {
	path    string
	content []byte
}

var (
	gorootOnce  sync.Once
	gorootFiles []gorootFile
	gorootBytes int64
)

// goroot reads every .go file of $GOROOT/src once (about 7,700 files, 90 MB: the tree
// files.BenchmarkGatherGoroot gathers).
func goroot(tb testing.TB) []gorootFile {
	tb.Helper()
	root := testrun.GOROOTSrc(tb)
	gorootOnce.Do(func() {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				rel, _ := filepath.Rel(root, p)
				gorootFiles = append(gorootFiles, gorootFile{rel, b})
				gorootBytes += int64(len(b))
			}
			return nil
		})
	})
	if len(gorootFiles) == 0 {
		tb.Skip("no $GOROOT/src")
	}
	return gorootFiles
}

// BenchmarkScanGOROOT runs what the gatherer runs on each file, Scan, over $GOROOT/src held
// in memory, and reports how many files it holds back and how many it redacts.
func BenchmarkScanGOROOT(b *testing.B) {
	files := goroot(b)
	var keys, redacted int
	b.SetBytes(gorootBytes)
	b.ReportAllocs()
	for b.Loop() {
		keys, redacted = 0, 0
		for _, f := range files {
			_, kinds, key := Scan(f.content)
			switch {
			case key:
				keys++
			case kinds != nil:
				redacted++
			}
		}
	}
	b.ReportMetric(float64(keys), "keys")
	b.ReportMetric(float64(redacted), "redacted")
}

// BenchmarkRedactGOROOT and BenchmarkPrivateKeyGOROOT time each half alone.
func BenchmarkRedactGOROOT(b *testing.B) {
	benchEach(b, func(c []byte) { Redact(c) })
}

func BenchmarkPrivateKeyGOROOT(b *testing.B) {
	benchEach(b, func(c []byte) { PrivateKey(c) })
}

// benchEach runs scan over every file of $GOROOT/src held in memory, reporting throughput,
// allocations and CPU time.
func benchEach(b *testing.B, scan func([]byte)) {
	files := goroot(b)
	b.SetBytes(gorootBytes)
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			scan(f.content)
		}
	}
}

// TestGOROOTFindings lists the files of $GOROOT/src that PrivateKey holds back and those
// Redact changes, with what it found; run with -v to read them. The expected lists were
// checked by eye: see the package documentation.
func TestGOROOTFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("reads $GOROOT/src")
	}
	for _, f := range goroot(t) {
		if PrivateKey(f.content) {
			t.Logf("private key: %s", f.path)
			continue
		}
		if _, kinds := Redact(f.content); kinds != nil {
			t.Logf("redacted %v: %s", kinds, f.path)
		}
	}
}

// BenchmarkReadScanGOROOT copies each file into a buffer before the scan, as the gatherer's
// read does, so that the scan finds the file in the cache as it does there;
// BenchmarkReadGOROOT is the copy alone. The difference is the scan's cost in the gatherer.
func BenchmarkReadScanGOROOT(b *testing.B) { benchRead(b, true) }

func BenchmarkReadGOROOT(b *testing.B) { benchRead(b, false) }

func benchRead(b *testing.B, scan bool) {
	files := goroot(b)
	buf := make([]byte, 0, 1<<20)
	b.SetBytes(gorootBytes)
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			buf = append(buf[:0], f.content...)
			if scan && !PrivateKey(buf) {
				Redact(buf)
			}
		}
	}
}
