package consultation

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
	"github.com/consultmcp/consult/results"
)

// memModel is a model in memory, for the tests of background consultations that run under
// testing/synctest (a fake upstream's sockets cannot run in a bubble): each Stream plays
// the next pushed script, or the one fn makes of the request, or def. It answers as the
// provider's contract says (see providers.Provider): what arrived is returned on failure,
// and a context that ends ends the stream at once with a Canceled error. The wire itself is
// proved against the fake upstream (TestAnswerEachProvider, TestDeadlineClosesUpstream).
type memModel struct {
	mu      sync.Mutex
	scripts []memScript
	fn      func(prompt string) memScript
	def     memScript
	streams []*memStream
	changed chan struct{}
}

// memScript is what one stream sends, step by step.
type memScript []memStep

// memStep is reasoning, answer text, or a pause (hang: until the context ends).
type memStep struct {
	think, text string
	pause       time.Duration
}

func memThink(s string) memStep                  { return memStep{think: s} }
func memText(s string) memStep                   { return memStep{text: s} }
func memSleep(d time.Duration) memStep           { return memStep{pause: d} }
func memHang() memStep                           { return memStep{pause: 24 * time.Hour} }
func memAnswer(s string) memScript               { return memScript{memText(s)} }
func (s memScript) then(st ...memStep) memScript { return append(append(memScript(nil), s...), st...) }

// memStream is one Stream call, as the model saw it.
type memStream struct {
	Model   string // what it was asked for; the request itself is not kept, as a provider keeps none
	ended   chan struct{}
	endedAt time.Time // set before ended is closed
	gone    bool      // the context ended before the script did
}

// Ended is closed when the stream has returned.
func (s *memStream) Ended() <-chan struct{} { return s.ended }

// EndedAt is when the stream returned (valid once Ended is closed).
func (s *memStream) EndedAt() time.Time { <-s.ended; return s.endedAt }

// ClientGone reports whether the stream ended because its context did (valid once ended).
func (s *memStream) ClientGone() bool {
	select {
	case <-s.ended:
		return s.gone
	default:
		return false
	}
}

func newMemModel() *memModel { return &memModel{changed: make(chan struct{})} }

func (m *memModel) push(scripts ...memScript) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scripts = append(m.scripts, scripts...)
}

func (m *memModel) setDefault(s memScript) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.def = s
}

// setFunc makes each stream's script of its prompt (the user message).
func (m *memModel) setFunc(fn func(prompt string) memScript) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fn = fn
}

// count is how many streams were started.
func (m *memModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.streams)
}

// stream returns the n-th stream (from 1), waiting for it.
func (m *memModel) stream(t *testing.T, n int) *memStream {
	t.Helper()
	for {
		m.mu.Lock()
		if len(m.streams) >= n {
			s := m.streams[n-1]
			m.mu.Unlock()
			return s
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("no stream %d within a minute", n)
		}
	}
}

func (m *memModel) Stream(ctx context.Context, req providers.Request, obs providers.Observer) (*providers.Response, error) {
	st := &memStream{Model: req.Model, ended: make(chan struct{})}
	m.mu.Lock()
	var sc memScript
	switch {
	case len(m.scripts) > 0:
		sc, m.scripts = m.scripts[0], m.scripts[1:]
	case m.fn != nil:
		sc = m.fn(memPrompt(req))
	default:
		sc = m.def
	}
	m.streams = append(m.streams, st)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	defer func() { st.endedAt = time.Now(); close(st.ended) }()

	resp := &providers.Response{Model: req.Model}
	var answer strings.Builder
	var reasoning consult.Tokens
	for _, step := range sc {
		if ctx.Err() != nil {
			break
		}
		switch {
		case step.pause > 0:
			timer := time.NewTimer(step.pause)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
			timer.Stop()
		case step.think != "":
			reasoning += consult.Tokens(len(strings.Fields(step.think)))
			resp.Usage.Reasoning = reasoning
			if obs != nil {
				obs.Reasoning(reasoning, step.think)
			}
		default:
			answer.WriteString(step.text)
			resp.Text = answer.String()
			if obs != nil {
				obs.Answer(step.text)
			}
		}
	}
	if ctx.Err() != nil {
		st.gone = true
		return resp, &providers.Error{Provider: "mem", Kind: providers.Canceled, Partial: resp.Text != "", Err: ctx.Err()}
	}
	resp.Finish = "stop"
	return resp, nil
}

func (m *memModel) ContextWindow(context.Context, string) (consult.Tokens, bool, error) {
	return 1_000_000, true, nil
}

// memUpstream is upstream with the model in memory, for tests that run under
// testing/synctest.
func memUpstream() (*memModel, *Service) {
	m := newMemModel()
	return m, &Service{Counter: counter, Model: m, DefaultModel: "google/gemini-2.5-pro", KeyHint: "OPENROUTER_API_KEY"}
}

// memJobs is memUpstream with background jobs configured by cfg, stopped when the test ends.
func memJobs(t *testing.T, cfg JobsConfig) (*memModel, *Service) {
	t.Helper()
	m, svc := memUpstream()
	svc.Jobs = NewJobs(cfg)
	t.Cleanup(func() { shutdownNow(svc.Jobs) })
	return m, svc
}

// memBackground is background with the model in memory: a service with background jobs
// saving to a new results directory, for tests that run under testing/synctest.
func memBackground(t *testing.T) (*memModel, *Service, *results.Store) {
	t.Helper()
	store := results.Open(t.TempDir(), 0, 0, 0)
	m, svc := memJobs(t, JobsConfig{Store: store})
	return m, svc, store
}

// memPrompt is req's user message.
func memPrompt(req providers.Request) string {
	if req.Text == nil {
		return req.Prompt
	}
	var b strings.Builder
	for piece := range req.Text {
		b.Write(piece)
	}
	return b.String()
}
