// Package tokens counts tokens exactly with OpenAI's o200k_base encoding, offline.
//
// The vocabulary is embedded in the binary (tiktoken's o200k_base.tiktoken, the only one
// embedded, checked against tiktoken's SHA-256; see vocabData) and loaded once per
// process, in the background after [Preload] or by the first count: nothing is downloaded
// or read from disk, at start-up or ever, and the package has no network code. The
// tokenizer itself is in this package (o200k.go says why, and how it is checked).
//
// Every model's tokens are counted with o200k_base ([Encoding]): exact for OpenAI's
// models that use it, an estimate for a model with a tokenizer of its own.
package tokens

import (
	"context"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/consultmcp/consult"
)

// Encoding names the tokenizer used: "o200k_base".
const Encoding = "o200k_base"

// NotCounted marks, in the result of [Counter.CountAll], a text that was not counted
// because the context ended first. It is negative so that it can never pass for a count.
const NotCounted consult.Tokens = -1

// cacheGeneration is the number of entries in one generation of a Counter's cache; the
// cache holds at most two generations. 32,768 is above consult.MaxFiles, so every file of
// the largest call fits in one generation, and two generations cost about 3 MB.
const cacheGeneration = 1 << 15

// vocabulary loads the o200k_base vocabulary once per process, however many Counters
// exist: it hashes and parses 200k base64 lines embedded in the binary and fills a
// character-class table (BenchmarkLoadVocabulary), leaving about 10 MB on the heap.
// [Preload] starts it in the background; otherwise the first count does.
var vocabulary = sync.OnceValue(func() *bpe {
	if loadHold != nil {
		loadHold()
	}
	start := time.Now()
	fillClassTable()
	b, err := loadBPE()
	if err != nil {
		// The data is compiled in and its hash checked by the tests: this is a broken build.
		panic(err)
	}
	loadTime = time.Since(start)
	close(vocabularyReady)
	return b
})

// loadHold, set by a test, runs before the vocabulary loads: the test holds the load there
// to look at what happens while it runs, however fast the machine loads it.
var loadHold func()

// vocabularyReady is closed once the vocabulary is loaded.
var vocabularyReady = make(chan struct{})

// loadStarted is set by the first [Preload].
var loadStarted atomic.Bool

// Preload starts loading the vocabulary in the background, unless that has started
// already, and returns at once. A server calls it once it has answered its first
// requests, so that its first consultation finds the vocabulary ready without the load
// slowing those answers; a command that is about to count calls it before gathering the
// files, to load while they are read. Without Preload, the first count loads it.
func Preload() {
	if loadStarted.CompareAndSwap(false, true) {
		go vocabulary()
	}
}

// awaitVocabulary waits until the vocabulary is loaded (starting the load if need be) or
// ctx ends, and returns ctx.Err() in the second case.
func awaitVocabulary(ctx context.Context) error {
	select {
	case <-vocabularyReady:
		return nil
	default:
	}
	Preload()
	select {
	case <-vocabularyReady:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadTime is how long the vocabulary took to load; tests log it once vocabulary returned.
var loadTime time.Duration

// Counter counts o200k_base tokens and remembers the counts of texts it has seen.
//
// A Counter is safe for concurrent use by any number of goroutines; one per process is
// enough. Create it with [NewCounter]: the zero value is not usable.
type Counter struct {
	seed  maphash.Seed
	cache cache
	// encode counts the tokens of valid UTF-8 text; tests wrap it.
	encode func(string) int
	// tokenized counts calls of encode, so tests can see cache hits.
	tokenized atomic.Int64
}

// NewCounter returns a Counter with an empty cache, at once: it does not load the
// vocabulary (once per process, shared by every Counter). [Preload] starts
// that in the background; a count that comes before the vocabulary is loaded waits for
// it, [Counter.CountAll] as long as its context allows, [Counter.Count] and
// [Counter.CountString] until it is done.
func NewCounter() *Counter {
	return newCounter(cacheGeneration)
}

func newCounter(generation int) *Counter {
	return &Counter{
		seed:   maphash.MakeSeed(),
		cache:  cache{limit: generation},
		encode: func(s string) int { return vocabulary().count(s) },
	}
}

// Count returns the exact number of o200k_base tokens in text.
//
// Text is counted as a provider receives it: the request is JSON, and encoding/json
// writes each byte that is not part of valid UTF-8 as U+FFFD, so Count counts each such
// byte as U+FFFD too. Special-token strings such as "<|endoftext|>" count as ordinary
// text, as tiktoken's encode_ordinary counts them. The empty text has 0 tokens.
//
// Counts are cached by content: counting the same bytes again costs one hash of text and
// no tokenization. Count does not keep text or modify it; the caller must not modify
// text while Count runs.
func (c *Counter) Count(text []byte) consult.Tokens {
	// The tokenizer only reads the string and keeps no part of it, so it can share
	// text's memory instead of copying up to a MiB per file.
	return c.CountString(unsafe.String(unsafe.SliceData(text), len(text)))
}

// CountString is [Counter.Count] for a string, for queries and headers. It shares the
// cache with Count: the same bytes as a string or a []byte have the same entry.
func (c *Counter) CountString(s string) consult.Tokens {
	if s == "" {
		return 0
	}
	k := cacheKey{sum: maphash.String(c.seed, s), n: len(s)}
	if n, ok := c.cache.get(k); ok {
		return n
	}
	c.tokenized.Add(1)
	n := consult.Tokens(c.encode(jsonText(s)))
	c.cache.put(k, n)
	return n
}

// jsonText returns s with every byte that is not part of valid UTF-8 replaced by U+FFFD,
// one replacement per byte, exactly as encoding/json writes s. (pkoukk/tiktoken-go does
// the same implicitly, since its regular expression engine works on runes.)
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s { // ranging over a string yields U+FFFD for each invalid byte
		b.WriteRune(r)
	}
	return b.String()
}

// CountAll counts every text, in parallel on runtime.GOMAXPROCS(0) goroutines, and
// returns the counts in the order of texts. Each count is the one [Counter.Count] gives.
//
// CountAll waits for the vocabulary if it is not loaded yet (see [NewCounter]), and checks
// ctx then and before each text. When ctx ends before every text is counted, it returns
// ctx.Err() as soon as the texts already being counted are done, together with a slice of
// len(texts) in which the texts that were counted hold their counts and the others hold
// [NotCounted]. When every text was counted the error is nil, even if ctx ended meanwhile.
// No goroutine outlives the call.
func (c *Counter) CountAll(ctx context.Context, texts [][]byte) ([]consult.Tokens, error) {
	out := slices.Repeat([]consult.Tokens{NotCounted}, len(texts))
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if err := awaitVocabulary(ctx); err != nil {
		return out, err
	}
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(texts)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(texts) {
					return
				}
				out[i] = c.Count(texts[i])
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if int(done.Load()) < len(texts) {
		return out, ctx.Err()
	}
	return out, nil
}

// Prefetch counts the texts handed to add in the background, on runtime.GOMAXPROCS(0)
// goroutines once the vocabulary is loaded, so that a later count of the same bytes finds
// them in the cache: a caller that collects texts over time (gathering files) hands each
// over as it comes, and counting overlaps collecting. add never blocks: a text it cannot
// queue (queue texts already wait) is left to the later count. stop ends it: queued texts
// are left, those being counted are finished, and no goroutine outlives it. add must not be
// called after stop, nor a text modified before stop returns.
func (c *Counter) Prefetch(queue int) (add func(text []byte), stop func()) {
	texts := make(chan []byte, queue)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			if awaitVocabulary(ctx) != nil {
				return
			}
			for text := range texts {
				if ctx.Err() != nil {
					return
				}
				c.Count(text)
			}
		})
	}
	add = func(text []byte) {
		select {
		case texts <- text:
		default:
		}
	}
	stop = func() {
		cancel()
		close(texts)
		wg.Wait()
	}
	return add, stop
}

// cacheKey identifies a text by a 64-bit maphash of its bytes and its length.
//
// Two different texts share a key only if they have the same length and their hashes
// collide. maphash is seeded at random per Counter, so inputs cannot be crafted to
// collide, and for texts of equal length a collision has probability 2^-64 per pair. With
// the cache full (65,536 entries) the chance that a new text meets any collision is below
// 65,536 * 2^-64 ≈ 4e-15, and over a billion lookups below 4e-6. A collision would give a
// wrong count, never a crash.
type cacheKey struct {
	sum uint64
	n   int
}

// cache maps text keys to counts. It keeps two generations, each of at most limit
// entries: when the current one is full it becomes the old one and the previous old one is
// dropped, and a hit in the old generation moves the entry to the current one. So the
// cache never holds more than 2*limit entries and keeps what was used recently.
type cache struct {
	mu       sync.Mutex
	limit    int
	cur, old map[cacheKey]consult.Tokens
}

func (c *cache) get(k cacheKey) (consult.Tokens, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.cur[k]; ok {
		return n, true
	}
	if n, ok := c.old[k]; ok {
		delete(c.old, k)
		c.putLocked(k, n)
		return n, true
	}
	return 0, false
}

func (c *cache) put(k cacheKey, n consult.Tokens) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, n)
}

func (c *cache) putLocked(k cacheKey, n consult.Tokens) {
	if c.cur == nil {
		c.cur = make(map[cacheKey]consult.Tokens)
	}
	if _, ok := c.cur[k]; !ok && len(c.cur) >= c.limit {
		c.old, c.cur = c.cur, make(map[cacheKey]consult.Tokens)
	}
	c.cur[k] = n
}
