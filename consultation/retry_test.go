package consultation

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

func noJitter(time.Duration) time.Duration { return 0 }

func TestBackoff(t *testing.T) {
	t.Parallel()
	full := func(d time.Duration) time.Duration { return d - 1 }
	server := &providers.Error{Kind: providers.Server, Status: 500}
	limited := &providers.Error{Kind: providers.RateLimited, Status: 429}
	told := &providers.Error{Kind: providers.RateLimited, Status: 429, RetryAfter: 3 * time.Second}
	for _, tc := range []struct {
		n    int
		err  error
		left time.Duration
		rnd  func(time.Duration) time.Duration
		want time.Duration
	}{
		{1, server, 20 * time.Second, full, retryBase - 1},
		{2, server, 20 * time.Second, full, 2*retryBase - 1},
		{10, server, 20 * time.Second, full, retryCap - 1},
		{1, server, 20 * time.Second, noJitter, 0},
		{1, told, 20 * time.Second, noJitter, 3 * time.Second},
		{3, told, 20 * time.Second, full, 3 * time.Second},
		// A rate limit without a delay spreads the attempts left over the time left: 22 s
		// left, 3 attempts to go, each needing 2 s: waits of about 6.7 s, in [w/2, w).
		{1, limited, 22 * time.Second, full, 20*time.Second/3 - 1},
		{1, limited, 22 * time.Second, noJitter, 10 * time.Second / 3},
		{3, limited, 10 * time.Second, full, 8*time.Second - 1},
		// Little time left: no less than the exponential step.
		{1, limited, 3 * time.Second, full, retryBase - 1},
	} {
		if got := backoff(tc.n, tc.err, tc.left, tc.rnd); got != tc.want {
			t.Errorf("backoff(%d, %v, %v) = %v, want %v", tc.n, tc.err, tc.left, got, tc.want)
		}
	}
	for range 1000 {
		if d := jitter(time.Second); d < 0 || d >= time.Second {
			t.Fatalf("jitter(1s) = %v, outside [0, 1s)", d)
		}
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		scripts  []fake.Script
		timeout  float64
		wantErr  bool
		requests int
		text     []string
		maxTime  time.Duration
	}{
		{"429 with retry-after-ms then answer",
			[]fake.Script{{Status: 429, Header: map[string]string{"retry-after-ms": "300"}}, fake.Answer("second time lucky")},
			10, false, 2, []string{"second time lucky", "2 attempts"}, 3 * time.Second},
		{"two 503s then answer",
			[]fake.Script{{Status: 503}, {Status: 503}, fake.Answer("third")},
			10, false, 3, []string{"third", "3 attempts"}, 3 * time.Second},
		{"reset before the answer is retried",
			[]fake.Script{{Steps: []fake.Step{fake.Reset()}}, fake.Answer("after reset")},
			10, false, 2, []string{"after reset", "2 attempts"}, 3 * time.Second},
		{"in-band overload before text is retried",
			[]fake.Script{{Steps: []fake.Step{fake.Fail(503, "model overloaded")}}, fake.Answer("ok now")},
			10, false, 2, []string{"ok now", "2 attempts"}, 3 * time.Second},
		{"401 is not retried",
			[]fake.Script{{Status: 401}, fake.Answer("never")},
			10, true, 1, []string{"rejected the API key"}, 3 * time.Second},
		{"400 is not retried",
			[]fake.Script{{Status: 400}, fake.Answer("never")},
			10, true, 1, []string{"bad request"}, 3 * time.Second},
		{"context length is not retried",
			[]fake.Script{{Status: 400, ErrorMessage: "This endpoint's maximum context length is 1000 tokens", ErrorCode: "context_length_exceeded"}, fake.Answer("never")},
			10, true, 1, []string{"larger than its context window"}, 3 * time.Second},
		{"text then failure is not re-sent",
			[]fake.Script{{Steps: []fake.Step{fake.Text("half"), fake.Fail(502, "upstream died")}}, fake.Answer("never")},
			10, true, 1, []string{"Partial answer (cut off by the failure):\nhalf"}, 3 * time.Second},
		{"retry-after beyond the deadline gives up at once",
			[]fake.Script{{Status: 429, Header: map[string]string{"Retry-After": "30"}}, fake.Answer("never")},
			5, true, 1, []string{"gave up after 1 attempt", "provider asked to wait 30 seconds", "Attempts:\n  1) ", "rate limited"}, 2 * time.Second},
		{"at most MaxAttempts",
			[]fake.Script{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, fake.Answer("never")},
			20, true, maxAttempts, []string{"gave up after 4 attempts", "  4) "}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := sampleTree(t)
			synctest.Test(t, func(t *testing.T) { // the fake clock: maxTime is exact, whatever the machine's load
				srv, svc := bubbleUpstream(t, 0)
				svc.jitter = noJitter
				srv.Push(tc.scripts...)
				start := time.Now()
				res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: time.Duration(tc.timeout) * time.Second}), nil)
				if el := time.Since(start); el > tc.maxTime {
					t.Errorf("took %v, want under %v", el, tc.maxTime)
				}
				if res.IsError != tc.wantErr {
					t.Fatalf("isError = %v, want %v:\n%s", res.IsError, tc.wantErr, res.Text())
				}
				if got := srv.Count("chat/completions"); got != tc.requests {
					t.Errorf("%d requests sent, want %d", got, tc.requests)
				}
				if got := summaryOf(t, res).Attempts; got != tc.requests {
					t.Errorf("summary attempts = %d, want %d", got, tc.requests)
				}
				for _, frag := range tc.text {
					if !strings.Contains(res.Text(), frag) {
						t.Errorf("result lacks %q:\n%s", frag, res.Text())
					}
				}
				reqs := srv.Requests()
				var first string
				for _, r := range reqs {
					if !strings.Contains(r.Path, "chat/completions") {
						continue
					}
					if first == "" {
						first = string(r.Body)
					} else if string(r.Body) != first {
						t.Error("a retry sent a different request body")
					}
				}
			})
		})
	}
}

func TestRetryNoticeToClient(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	svc.jitter = noJitter
	srv.Push(fake.Script{Status: 503}, fake.Answer("fine"))
	rec := &recorder{}
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), rec)
	if res.IsError {
		t.Fatal(res.Text())
	}
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "warning: attempt 1 of 4 failed") || !strings.Contains(rec.logs[0], "retrying in") {
		t.Errorf("client log = %q, want one retry notice", rec.logs)
	}
}

// limitedModel answers every request with a 429 that names no delay, noting when each came.
type limitedModel struct {
	mu   sync.Mutex
	sent []time.Time
}

func (m *limitedModel) Stream(ctx context.Context, req providers.Request, obs providers.Observer) (*providers.Response, error) {
	m.mu.Lock()
	m.sent = append(m.sent, time.Now())
	m.mu.Unlock()
	return &providers.Response{}, &providers.Error{Provider: "openai", Kind: providers.RateLimited, Status: 429,
		Code: "rate_limit_exceeded", Message: "Rate limit reached for requests"}
}

func (*limitedModel) ContextWindow(context.Context, string) (consult.Tokens, bool, error) {
	return 1_000_000, true, nil
}

// TestRateLimitUsesTheBudget: a 429 with no delay is retried across the call's budget, not
// four times in two seconds; while it waits the heartbeat says so; the final message names
// each attempt once, with its wait.
func TestRateLimitUsesTheBudget(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		m := &limitedModel{}
		svc := &Service{Counter: counter, Model: m, DefaultModel: "gpt-4.1", Heartbeat: time.Second, jitter: noJitter}
		rec := &recorder{}
		start := time.Now()
		res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 22 * time.Second}), rec)
		if !res.IsError {
			t.Fatalf("want an error, got %s", res.Text())
		}
		if len(m.sent) != maxAttempts {
			t.Fatalf("%d attempts, want %d", len(m.sent), maxAttempts)
		}
		if last := m.sent[len(m.sent)-1].Sub(start); last < 12*time.Second {
			t.Errorf("the last attempt went at %v: the attempts did not use the 22 s budget", last)
		}
		if n := strings.Count(res.Text(), "Rate limit reached for requests"); n != 1 {
			t.Errorf("the upstream's message appears %d times, want once:\n%s", n, res.Text())
		}
		if n := strings.Count(res.Text(), ": the same as 1)"); n != 3 {
			t.Errorf("%d attempts refer to the first, want 3:\n%s", n, res.Text())
		}
		for _, w := range []string{"\n  4) after ", "; waited "} {
			if !strings.Contains(res.Text(), w) {
				t.Errorf("result lacks %q:\n%s", w, res.Text())
			}
		}
		_, msgs, _ := rec.snapshot()
		waiting := false
		for _, msg := range msgs {
			if strings.HasPrefix(msg, "waiting to retry (attempt 2 of 4") {
				waiting = true
			}
			if strings.Contains(msg, "first token") && strings.Contains(msg, "attempt") {
				t.Errorf("heartbeat %q during a retry wait", msg)
			}
		}
		if !waiting {
			t.Errorf("no heartbeat said the call was waiting to retry: %q", msgs)
		}
	})
}
