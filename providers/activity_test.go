package providers

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// activityLog records what an ActivityTransport reports.
type activityLog struct {
	mu     sync.Mutex
	events []activityEvent
}

type activityEvent struct {
	at time.Time
	n  int
}

func (a *activityLog) note(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, activityEvent{time.Now(), n})
}

// before counts reads with n > 0, and their bytes, before t.
func (a *activityLog) before(t time.Time) (reads, bytes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.events {
		if e.n > 0 && e.at.Before(t) {
			reads++
			bytes += e.n
		}
	}
	return reads, bytes
}

// firstAnswer is an Observer that notes when the first answer text arrived and whether any
// reasoning was reported before it.
type firstAnswer struct {
	mu        sync.Mutex
	at        time.Time
	reasoning int
}

func (f *firstAnswer) Reasoning(consult.Tokens, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reasoning++
}

func (f *firstAnswer) Answer(string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() {
		f.at = time.Now()
	}
}

// TestActivityTransportSeesKeepAlives: upstream life is seen, keep-alive comments
// included, whether the caller's client wraps its transport already or not at all (the
// providers wrap it then, once: a byte is reported once). In a synctest bubble, so that each
// comment is read apart however busy the machine.
func TestActivityTransportSeesKeepAlives(t *testing.T) {
	t.Parallel()
	for _, fc := range flavors {
		for _, wrapped := range []bool{true, false} {
			name := fc.name + "/plain"
			if wrapped {
				name = fc.name + "/wrapped"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { activitySeesKeepAlives(t, fc, wrapped) })
			})
		}
	}
}

func activitySeesKeepAlives(t *testing.T, fc flavorCase, wrapped bool) {
	srv := fake.NewInMemory(t, fc.flavor)
	// Nothing but keep-alive comments for 250 ms, then the answer.
	srv.Push(fake.Script{KeepAlive: 25 * time.Millisecond,
		Steps: []fake.Step{fake.Sleep(250 * time.Millisecond), fake.Text("done")}})
	hc := srv.Client()
	if wrapped {
		hc.Transport = ActivityTransport(hc.Transport)
	}
	p := newProviderFor(t, fc, srv.BaseURL(), hc)

	var act activityLog
	obs := &firstAnswer{}
	ctx := WithActivity(context.Background(), act.note)
	resp, err := p.Stream(ctx, Request{Model: fc.model, Prompt: "q"}, obs)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Text != "done" {
		t.Errorf("Text = %q, want done", resp.Text)
	}
	if obs.reasoning != 0 {
		t.Errorf("the observer saw %d reasoning events, want none (only comments were sent)", obs.reasoning)
	}
	reads, n := act.before(obs.at)
	if reads < 4 || n < 4*len(": keep-alive\n\n") {
		t.Errorf("before the first answer the transport saw %d reads, %d bytes; want the keep-alive comments (>= 4)", reads, n)
	}
	act.mu.Lock()
	first := act.events[0]
	act.mu.Unlock()
	if first.n != 0 {
		t.Errorf("first activity event n = %d, want 0 for the response headers", first.n)
	}
	heads := 0
	act.mu.Lock()
	for _, e := range act.events {
		if e.n == 0 {
			heads++
		}
	}
	act.mu.Unlock()
	if heads != 1 {
		t.Errorf("the response headers were reported %d times, want once (one wrapping)", heads)
	}
}

func TestActivityTransportPassThrough(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenAI)
	hc := &http.Client{Transport: ActivityTransport(http.DefaultTransport)}
	p := newProviderFor(t, flavorFor(fake.OpenAI), srv.BaseURL(), hc)
	// No WithActivity in the context: the transport must not get in the way.
	resp, err := p.Stream(context.Background(), Request{Model: "o3", Prompt: "q"}, nil)
	if err != nil || resp.Text != "ok" {
		t.Fatalf("Stream = %+v, %v; want ok", resp, err)
	}
	if ctx := WithActivity(context.Background(), nil); ctx.Value(activityKey{}) != nil {
		t.Error("WithActivity(ctx, nil) installed a callback")
	}
}

func TestReplayRecordedStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		flavor    fake.Flavor
		model     string
		text      string
		reasoning string
		usage     Usage
		kind      Kind // expected error kind, "" for none
	}{
		{"openrouter_reasoning.sse", fake.OpenRouter, "google/gemini-2.5-pro",
			"Build a map first; then one pass is enough.",
			"**Reading the loop**\n\nThe function walks the slice twice, so it is O(n²).",
			Usage{Reported: true, Input: 15234, Output: 22, Reasoning: 790, Cached: 12000, CostUSD: 0.02716, CostKnown: true}, ""},
		{"openrouter_midstream_error.sse", fake.OpenRouter, "anthropic/claude-sonnet-4",
			"The first half of", "", Usage{}, Overloaded},
		{"openai_reasoning.sse", fake.OpenAI, "o3", "Use a map.", "",
			Usage{Reported: true, Input: 20480, Output: 4, Reasoning: 1600, Cached: 19968}, ""},
		{"gemini_thinking.sse", fake.Gemini, "gemini-2.5-pro",
			"Build a map first; then one pass is enough.",
			"**Planning the answer**\n\nI will check the loop first.",
			Usage{Reported: true, Input: 9000, Output: 12, Reasoning: 640, Cached: 8192}, ""},
		{"gemini_midstream_error.sse", fake.Gemini, "gemini-2.5-pro", "Partial", "", Usage{}, Overloaded},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("..", "testdata", "upstream", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			fc := flavorFor(tt.flavor)
			p, srv := setup(t, fc)
			srv.Push(fake.Script{Body: string(raw)})
			rec := newRecorder()
			resp, err := p.Stream(context.Background(), Request{Model: tt.model, Prompt: "q"}, rec)
			if tt.kind != "" {
				e := asError(t, err)
				if e.Kind != tt.kind || !e.Partial || !e.InBand {
					t.Errorf("error = %v (kind %q, partial %v, in band %v), want partial in-band %q", e, e.Kind, e.Partial, e.InBand, tt.kind)
				}
			} else if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != tt.text {
				t.Errorf("Text = %q, want %q", resp.Text, tt.text)
			}
			if got := rec.reasoningText(); got != tt.reasoning {
				t.Errorf("reasoning = %q, want %q", got, tt.reasoning)
			}
			if tt.kind == "" && resp.Usage != tt.usage {
				t.Errorf("Usage = %+v, want %+v", resp.Usage, tt.usage)
			}
			if bytes.Contains([]byte(resp.Text), []byte("Reading the loop")) {
				t.Error("reasoning leaked into the answer")
			}
		})
	}
}
