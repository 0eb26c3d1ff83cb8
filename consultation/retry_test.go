package consultation

import (
	"context"
	"strings"
	"testing"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers/fake"
)

func noJitter(time.Duration) time.Duration { return 0 }

func TestBackoff(t *testing.T) {
	full := func(d time.Duration) time.Duration { return d - 1 }
	for _, tc := range []struct {
		n          int
		retryAfter time.Duration
		rnd        func(time.Duration) time.Duration
		want       time.Duration
	}{
		{1, 0, full, consult.RetryBase - 1},
		{2, 0, full, 2*consult.RetryBase - 1},
		{10, 0, full, consult.RetryCap - 1},
		{1, 0, noJitter, 0},
		{1, 3 * time.Second, noJitter, 3 * time.Second},
		{3, 100 * time.Millisecond, full, 4*consult.RetryBase - 1},
	} {
		if got := backoff(tc.n, tc.retryAfter, tc.rnd); got != tc.want {
			t.Errorf("backoff(%d, %v) = %v, want %v", tc.n, tc.retryAfter, got, tc.want)
		}
	}
	for range 1000 {
		if d := jitter(time.Second); d < 0 || d >= time.Second {
			t.Fatalf("jitter(1s) = %v, outside [0, 1s)", d)
		}
	}
}

func TestRetries(t *testing.T) {
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
			5, true, 1, []string{"gave up after 1 attempt", "provider asked to wait 30s", "Attempts:\n  1) ", "rate limited"}, 2 * time.Second},
		{"at most MaxAttempts",
			[]fake.Script{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, fake.Answer("never")},
			20, true, consult.MaxAttempts, []string{"gave up after 4 attempts", "  4) "}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, svc := upstream(t, 0)
			svc.jitter = noJitter
			srv.Push(tc.scripts...)
			start := time.Now()
			res := svc.Consult(context.Background(), goArgs(sampleTree(t), "timeout", tc.timeout), nil)
			if el := time.Since(start); el > tc.maxTime {
				t.Errorf("took %v, want under %v", el, tc.maxTime)
			}
			if res.IsError != tc.wantErr {
				t.Fatalf("isError = %v, want %v:\n%s", res.IsError, tc.wantErr, res.Text)
			}
			if got := srv.Count("chat/completions"); got != tc.requests {
				t.Errorf("%d requests sent, want %d", got, tc.requests)
			}
			if got := summaryOf(t, res).Attempts; got != tc.requests {
				t.Errorf("summary attempts = %d, want %d", got, tc.requests)
			}
			for _, frag := range tc.text {
				if !strings.Contains(res.Text, frag) {
					t.Errorf("result lacks %q:\n%s", frag, res.Text)
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
	}
}

func TestRetryNoticeToClient(t *testing.T) {
	srv, svc := upstream(t, 0)
	svc.jitter = noJitter
	srv.Push(fake.Script{Status: 503}, fake.Answer("fine"))
	rec := &recorder{}
	res := svc.Consult(context.Background(), goArgs(sampleTree(t)), rec)
	if res.IsError {
		t.Fatal(res.Text)
	}
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "warning: attempt 1 failed") || !strings.Contains(rec.logs[0], "retrying in") {
		t.Errorf("client log = %q, want one retry notice", rec.logs)
	}
}
