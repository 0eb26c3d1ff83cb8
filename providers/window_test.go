package providers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/fake"
)

func TestContextWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flavor fake.Flavor
		model  string
		want   consult.Tokens
		ok     bool
		kind   Kind // expected error kind, "" for none
	}{
		{fake.OpenRouter, "anthropic/claude-sonnet-4", 200_000, true, ""},
		{fake.OpenRouter, "openai/gpt-4o:nitro", 128_000, true, ""},
		{fake.OpenRouter, "nope/nothing", 0, false, NotFound},
		{fake.Gemini, "gemini-2.5-pro", 1_048_576, true, ""},
		{fake.Gemini, "gemini-0-nothing", 0, false, NotFound},
		// OpenAI publishes no window: the caller's table (models.KnownWindow) answers.
		{fake.OpenAI, "gpt-4.1-mini-2025-04-14", 0, false, ""},
		{fake.OpenAI, "my-local-model", 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.flavor.String()+"/"+tt.model, func(t *testing.T) {
			t.Parallel()
			fc := flavorFor(tt.flavor)
			p, _ := setup(t, fc)
			got, ok, err := p.ContextWindow(context.Background(), tt.model)
			if tt.kind != "" {
				if e := asError(t, err); e.Kind != tt.kind {
					t.Errorf("Kind = %q, want %q", e.Kind, tt.kind)
				}
			} else if err != nil {
				t.Fatalf("ContextWindow: %v", err)
			}
			if got != tt.want || ok != tt.ok {
				t.Errorf("ContextWindow = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func flavorFor(f fake.Flavor) flavorCase {
	for _, fc := range flavors {
		if fc.flavor == f {
			return fc
		}
	}
	panic("no flavor")
}

func TestOpenRouterModelsCached(t *testing.T) {
	t.Parallel()
	p, srv := setup(t, flavorFor(fake.OpenRouter))
	for i := range 3 {
		if _, ok, err := p.ContextWindow(context.Background(), "openai/gpt-4o"); err != nil || !ok {
			t.Fatalf("call %d: ContextWindow: %v, %v", i, ok, err)
		}
	}
	if got := srv.Count("/models"); got != 1 {
		t.Errorf("%d GET /models for 3 calls within the TTL, want 1 (expiry: TestModelsTTLSynctest)", got)
	}
	if r := srv.Requests()[0]; r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("GET /models sent Authorization %q, want the bearer key", r.Header.Get("Authorization"))
	}
}

func TestOpenRouterModelsSharedFetch(t *testing.T) {
	t.Parallel()
	p, srv := setup(t, flavorFor(fake.OpenRouter))
	srv.PushModels(fake.Script{HeaderDelay: 100 * time.Millisecond})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, ok, err := p.ContextWindow(context.Background(), "fake/small"); err != nil || !ok {
				t.Errorf("ContextWindow: %v, %v", ok, err)
			}
		})
	}
	wg.Wait()
	if got := srv.Count("/models"); got != 1 {
		t.Errorf("%d GET /models for 8 concurrent calls, want 1", got)
	}
}

// TestContextWindowBoundedByCtx: a model look-up that gets no answer returns at the caller's
// deadline, to the instant (in a synctest bubble), with a Canceled error.
func TestContextWindowBoundedByCtx(t *testing.T) {
	t.Parallel()
	for _, fc := range []flavorCase{flavorFor(fake.OpenRouter), flavorFor(fake.Gemini)} {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				p, srv := setupInMemory(t, fc)
				srv.PushModels(fake.Script{HeaderDelay: time.Hour})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				deadline, _ := ctx.Deadline()
				_, ok, err := p.ContextWindow(ctx, fc.model)
				if returned := time.Now(); !returned.Equal(deadline) {
					t.Errorf("ContextWindow returned %v from the deadline, want at it", returned.Sub(deadline))
				}
				if ok || !errors.Is(err, Canceled) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("ContextWindow = %v, %v; want a Canceled error", ok, err)
				}
			})
		})
	}
}

func TestContextWindowErrors(t *testing.T) {
	t.Parallel()
	for _, fc := range []flavorCase{flavorFor(fake.OpenRouter), flavorFor(fake.Gemini)} {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.PushModels(fake.Script{Status: 503, Header: map[string]string{"Retry-After": "1"}},
				fake.Script{Status: 401})
			_, _, err := p.ContextWindow(context.Background(), fc.model)
			if e := asError(t, err); e.Kind != Overloaded || e.RetryAfter != time.Second || !Retryable(err) {
				t.Errorf("503: error = %v, want retryable Overloaded with RetryAfter 1s", err)
			}
			_, _, err = p.ContextWindow(context.Background(), fc.model)
			if e := asError(t, err); e.Kind != Auth {
				t.Errorf("401: error = %v, want Auth", err)
			}
			// A failed fetch is not cached.
			if w, ok, err := p.ContextWindow(context.Background(), fc.model); err != nil || !ok || w == 0 {
				t.Errorf("third call = %d, %v, %v; want the window", w, ok, err)
			}
		})
	}
}
