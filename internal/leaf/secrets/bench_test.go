package secrets

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/testrun"
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
			_, kinds, held := Scan(f.content)
			switch {
			case held != 0:
				keys++
			case kinds != nil:
				redacted++
			}
		}
	}
	b.ReportMetric(float64(keys), "keys")
	b.ReportMetric(float64(redacted), "redacted")
}

// BenchmarkScanNetHTTP runs Scan over the .go files of $GOROOT/src/net/http (2.26 MB), what
// each of consultation.TestLoadNetHTTP's 64 calls gathers: HTTP code names Authorization
// headers and URLs with credentials more than most, which the scan's expressions decide.
func BenchmarkScanNetHTTP(b *testing.B) {
	var files []gorootFile
	var size int64
	for _, f := range goroot(b) {
		if strings.HasPrefix(filepath.ToSlash(f.path), "net/http/") {
			files = append(files, f)
			size += int64(len(f.content))
		}
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			Scan(f.content)
		}
	}
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

// TestGOROOTFindings scans every .go file of $GOROOT/src and checks what Scan holds back
// and redacts against the findings checked by eye (see the package documentation): two
// files held back, for the EC key of crypto/tls/example_test.go and the bare RSA key of
// crypto/x509/x509_test.go, and one redacted,
// cmd/go/internal/auth/gitauth_test.go, whose git credential helper fixtures hold
// "password=secr3t". Run with -v to read them.
func TestGOROOTFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("reads $GOROOT/src")
	}
	var held, redacted []string
	for _, f := range goroot(t) {
		_, kinds, h := Scan(f.content)
		switch {
		case h != 0:
			t.Logf("held back (%v): %s", h, f.path)
			held = append(held, filepath.ToSlash(f.path))
		case kinds != nil:
			t.Logf("redacted %v: %s", kinds, f.path)
			redacted = append(redacted, filepath.ToSlash(f.path))
		}
	}
	// A file not in these lists is a finding no one has looked at: a false positive to fix,
	// or a real secret to add once read. (Another Go release may lack one of these files.)
	checked := map[string][]string{
		// x509_test.go holds a PKCS #8 RSA key's body in base64, without a PEM block
		// (utf8KeyStr).
		"held back": {"crypto/tls/example_test.go", "crypto/x509/x509_test.go"},
		"redacted":  {"cmd/go/internal/auth/gitauth_test.go"},
	}
	for what, got := range map[string][]string{"held back": held, "redacted": redacted} {
		for _, p := range got {
			if !slices.Contains(checked[what], p) {
				t.Errorf("%s %s, not among the findings checked by eye %q", what, p, checked[what])
			}
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
