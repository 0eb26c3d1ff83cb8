package providers

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// testKey deliberately does not look like any provider's key, so only exact-key redaction
// can keep it out of messages.
const testKey = "test-key-Zq9xV7uR2mN4pL8w"

// flavorCase is one provider under test and the fake that speaks its wire format.
type flavorCase struct {
	name   string
	flavor fake.Flavor
	model  string
	newP   func(Config) (Provider, error)
}

// testModels is the model each provider's tests ask for: one its fake lists, and a
// reasoning model where the provider has them.
var testModels = map[string]string{
	NameOpenRouter: "anthropic/claude-sonnet-4",
	NameOpenAI:     "o3",
	NameGemini:     "gemini-2.5-pro",
}

// flavors is every provider in the registry that has a fake and a test model (
// TestRegistryComplete fails for one that lacks either).
var flavors = func() []flavorCase {
	var out []flavorCase
	for _, s := range Registry() {
		f, ok := fake.ForProvider(s.Name)
		if model := testModels[s.Name]; ok && model != "" {
			out = append(out, flavorCase{s.Name, f, model, s.New})
		}
	}
	return out
}()

// eachFlavor runs f for every provider in flavors, each in a parallel subtest, t in parallel
// too.
func eachFlavor(t *testing.T, f func(t *testing.T, fc flavorCase)) {
	t.Parallel()
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			f(t, fc)
		})
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// setup starts a fake for fc and a provider pointed at it. At the end of the test it checks
// that the key never reached the debug log.
func setup(t *testing.T, fc flavorCase) (Provider, *fake.Server) {
	t.Helper()
	srv := fake.New(t, fc.flavor)
	p := newProviderFor(t, fc, srv.BaseURL(), nil)
	return p, srv
}

// setupInMemory is setup with a fake that serves in memory, for a test in a synctest bubble.
func setupInMemory(t *testing.T, fc flavorCase) (Provider, *fake.Server) {
	t.Helper()
	srv := fake.NewInMemory(t, fc.flavor)
	return newProviderFor(t, fc, srv.BaseURL(), srv.Client()), srv
}

func newProviderFor(t *testing.T, fc flavorCase, baseURL string, hc *http.Client) Provider {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := fc.newP(Config{APIKey: testKey, BaseURL: baseURL, HTTPClient: hc, Logger: logger})
	if err != nil {
		t.Fatalf("new %s: %v", fc.name, err)
	}
	t.Cleanup(func() { assertNoKey(t, "log", logs.String()) })
	return p
}

// assertNoKey fails the test if s contains the API key.
func assertNoKey(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, testKey) {
		t.Errorf("%s contains the API key: %q", what, s)
	}
}

// recorder is an Observer that keeps everything it is told.
type recorder struct {
	mu        sync.Mutex
	reasoning []string
	tokens    []consult.Tokens
	answer    []string
	first     chan struct{} // closed at the first answer delta
	once      sync.Once
}

func newRecorder() *recorder { return &recorder{first: make(chan struct{})} }

func (r *recorder) Reasoning(n consult.Tokens, delta string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens = append(r.tokens, n)
	if delta != "" {
		r.reasoning = append(r.reasoning, delta)
	}
}

func (r *recorder) Answer(delta string) {
	r.mu.Lock()
	r.answer = append(r.answer, delta)
	r.mu.Unlock()
	r.once.Do(func() { close(r.first) })
}

func (r *recorder) answerText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.answer, "")
}

func (r *recorder) reasoningText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.reasoning, "")
}

func (r *recorder) lastTokens() consult.Tokens {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tokens) == 0 {
		return 0
	}
	return r.tokens[len(r.tokens)-1]
}

// asError unwraps err into an *Error or fails the test.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("got nil error, want an *Error")
	}
	assertNoKey(t, "error", err.Error())
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("got error %T (%v), want *Error", err, err)
	}
	return e
}
