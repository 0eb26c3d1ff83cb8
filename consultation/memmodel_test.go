package consultation

import (
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/fake"
	"github.com/consultmcp/consult/internal/results"
	"github.com/consultmcp/consult/providers"
)

// memModel is the model of the tests of background consultations that run under
// testing/synctest: the real OpenRouter client talking to the fake upstream in memory
// (fake.NewInMemory; sockets cannot run in a bubble). Its scripts are written in steps of
// their own, kept short for the many tests that use them: each stream plays the next
// pushed script, or the one setFunc makes of the prompt, or the default.
type memModel struct {
	srv *fake.Server
}

// memScript is what one stream sends, step by step.
type memScript []fake.Step

func memThink(s string) fake.Step        { return fake.Think(s) }
func memText(s string) fake.Step         { return fake.Text(s) }
func memSleep(d time.Duration) fake.Step { return fake.Sleep(d) }
func memHang() fake.Step                 { return fake.Hang() }
func memAnswer(s string) memScript       { return memScript{memText(s)} }

func (s memScript) script() fake.Script { return fake.Script{Steps: s} }

func (m *memModel) push(scripts ...memScript) {
	for _, sc := range scripts {
		m.srv.Push(sc.script())
	}
}

func (m *memModel) setDefault(s memScript) { m.srv.SetDefault(s.script()) }

// setFunc makes each stream's script of its prompt (the request body, which holds it).
func (m *memModel) setFunc(fn func(prompt string) memScript) {
	m.srv.SetFunc(func(r *fake.Request) fake.Script { return fn(string(r.Body)).script() })
}

// count is how many streams were started.
func (m *memModel) count() int { return m.srv.Count("/chat/completions") }

// stream returns the n-th model request (from 1), waiting for it.
func (m *memModel) stream(t *testing.T, n int) *fake.Request {
	t.Helper()
	for seq := 1; ; seq++ {
		r, err := m.srv.Await(seq, time.Minute)
		if err != nil {
			t.Fatalf("no stream %d: %v", n, err)
		}
		if strings.Contains(r.Path, "/chat/completions") {
			if n--; n == 0 {
				return r
			}
		}
	}
}

// memUpstream is upstream with the fake in memory, for tests that run under
// testing/synctest (call it inside the bubble).
func memUpstream(t *testing.T) (*memModel, *Service) {
	t.Helper()
	srv := fake.NewInMemory(t, fake.OpenRouter)
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-123", BaseURL: srv.BaseURL(), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return &memModel{srv}, &Service{Counter: counter, Model: p, DefaultModel: "google/gemini-2.5-pro", KeyHint: "OPENROUTER_API_KEY"}
}

// memJobs is memUpstream with background jobs configured by cfg, stopped when the test ends.
func memJobs(t *testing.T, cfg JobsConfig) (*memModel, *Service) {
	t.Helper()
	m, svc := memUpstream(t)
	svc.Jobs = NewJobs(cfg)
	t.Cleanup(func() { shutdownNow(svc.Jobs) })
	return m, svc
}

// memBackground is background with the fake in memory: a service with background jobs
// saving to a new results directory, for tests that run under testing/synctest.
func memBackground(t *testing.T) (*memModel, *Service, *results.Store) {
	t.Helper()
	store := results.Open(t.TempDir(), 0, 0, 0)
	m, svc := memJobs(t, JobsConfig{Store: store})
	return m, svc, store
}
