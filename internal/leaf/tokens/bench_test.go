package tokens

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The benchmarks count real Go source: every *.go file under $(go env GOROOT)/src (about
// 7,700 files) for BenchmarkCountAll*, and under GOROOT/src/net (about 3 MB) for
// the quick ones. Files are read once, outside the timer; MB/s is source bytes per second.
//
//	go test -run '^$' -bench 'CountAll' -benchtime=1x -count=3 ./internal/leaf/tokens/   # full tree
//	go test -run '^$' -bench 'Count$|CountCached|Pkoukk' -benchmem ./internal/leaf/tokens/

var corpora sync.Map // dir -> [][]byte

// goFiles returns the contents of every *.go file under GOROOT/src/sub.
func goFiles(b *testing.B, sub string) (files [][]byte, size int64) {
	b.Helper()
	dir := filepath.Join(goroot(b), "src", sub)
	if v, ok := corpora.Load(dir); ok {
		files = v.([][]byte)
	} else {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			data, err := os.ReadFile(path)
			files = append(files, data)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		corpora.Store(dir, files)
	}
	for _, f := range files {
		size += int64(len(f))
	}
	return files, size
}

// benchCold counts files with a new Counter each iteration: an empty cache.
func benchCold(b *testing.B, sub string) {
	files, size := goFiles(b, sub)
	vocabulary() // load the vocabulary outside the timer
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewCounter().CountAll(context.Background(), files); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(files)), "files")
}

// benchWarm counts files that one Counter has counted already.
func benchWarm(b *testing.B, sub string) {
	files, size := goFiles(b, sub)
	c := NewCounter()
	if _, err := c.CountAll(context.Background(), files); err != nil {
		b.Fatal(err)
	}
	before := c.tokenized.Load()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CountAll(context.Background(), files); err != nil {
			b.Fatal(err)
		}
	}
	if n := c.tokenized.Load() - before; n != 0 {
		b.Fatalf("%d files tokenized again; want all from the cache", n)
	}
}

// BenchmarkCountAll counts GOROOT/src with a cold cache. Target: >= 5 MiB/s.
func BenchmarkCountAll(b *testing.B) { benchCold(b, "") }

// BenchmarkCountAllCached counts GOROOT/src again on a warm Counter. Target: >= 20x cold.
func BenchmarkCountAllCached(b *testing.B) { benchWarm(b, "") }

// BenchmarkCount is BenchmarkCountAll on GOROOT/src/net, for quick runs, and the
// production side of the comparison with BenchmarkCountPkoukk.
func BenchmarkCount(b *testing.B) { benchCold(b, "net") }

// BenchmarkCountCached is BenchmarkCountAllCached on GOROOT/src/net.
func BenchmarkCountCached(b *testing.B) { benchWarm(b, "net") }

// parallel counts files on GOMAXPROCS goroutines, as CountAll does, without a cache.
func parallel(files [][]byte, count func(string) int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				count(string(files[i]))
			}
		})
	}
	wg.Wait()
}

// BenchmarkCountPkoukk counts GOROOT/src/net with github.com/pkoukk/tiktoken-go (offline
// loader), in parallel like CountAll: the reference the counts are checked against.
func BenchmarkCountPkoukk(b *testing.B) {
	files, size := goFiles(b, "net")
	enc, err := pkoukk()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		parallel(files, func(s string) int { return len(enc.EncodeOrdinary(s)) })
	}
}

// BenchmarkLoadVocabulary is the work of the vocabulary's one load per process (which a
// server does in the background at start): the character-class table, the SHA-256 check
// and the parse, each alone and all together.
func BenchmarkLoadVocabulary(b *testing.B) {
	b.Run("classTable", func(b *testing.B) {
		for b.Loop() {
			fillClassTable()
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(vocabData)))
		for b.Loop() {
			sha256.Sum256(vocabData)
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(vocabData)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseVocab(vocabData, vocabSize); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fillClassTable()
			if _, err := loadBPE(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
