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

// recorder is a Reporter that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	progress []float64
	messages []string
	at       []time.Time
	logs     []string
}

func (r *recorder) Progress(p float64, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, p)
	r.messages = append(r.messages, msg)
	r.at = append(r.at, time.Now())
}

func (r *recorder) Log(level Level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, string(level)+": "+msg)
}

func (r *recorder) snapshot() ([]float64, []string, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]float64(nil), r.progress...), append([]string(nil), r.messages...), append([]time.Time(nil), r.at...)
}

// slowModel thinks for think, reporting reasoning tokens every second, then answers.
type slowModel struct{ think time.Duration }

func (m slowModel) Stream(ctx context.Context, req providers.Request, obs providers.Observer) (*providers.Response, error) {
	start := time.Now()
	next := 500 * time.Millisecond // half a second off the heartbeat's ticks
	for reports := 1; time.Since(start) < m.think; reports++ {
		select {
		case <-ctx.Done():
			return &providers.Response{}, &providers.Error{Kind: providers.Canceled, Err: ctx.Err()}
		case <-time.After(next):
			obs.Reasoning(consult.Tokens(reports*30), "")
		}
		next = time.Second
	}
	obs.Answer("done")
	return &providers.Response{Text: "done", Model: req.Model}, nil
}

func (slowModel) ContextWindow(context.Context, string) (consult.Tokens, bool, error) {
	return 1_000_000, true, nil
}

func TestHeartbeatWhileModelThinks(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		svc := &Service{Counter: counter, Model: slowModel{think: 35 * time.Second}, DefaultModel: "m", Heartbeat: 10 * time.Second}
		start := time.Now()
		res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 60 * time.Second}), rec)
		end := time.Now()
		if res.IsError {
			t.Fatal(res.Text())
		}
		synctest.Wait()
		progress, msgs, at := rec.snapshot()
		if len(progress) != 4 {
			t.Fatalf("got %d heartbeats %q in a 35 s call with a 10 s heartbeat, want 4 (one at once)", len(progress), msgs)
		}
		for i := range progress {
			if i > 0 && progress[i] <= progress[i-1] {
				t.Errorf("progress not strictly increasing: %v", progress)
			}
			if len(msgs[i]) > consult.MaxProgressMessage {
				t.Errorf("message %d is %d chars, limit %d", i, len(msgs[i]), consult.MaxProgressMessage)
			}
			if got, want := at[i].Sub(start), time.Duration(i)*10*time.Second; got != want {
				t.Errorf("heartbeat %d at %v, want %v", i, got, want)
			}
			if !at[i].Before(end) {
				t.Errorf("heartbeat %d sent after the result", i)
			}
		}
		if want := "model thinking, 20 seconds, 600 reasoning tokens"; !strings.HasPrefix(msgs[2], want) {
			t.Errorf("third message = %q, want it to start %q", msgs[2], want)
		}
	})
}

func TestNoHeartbeatNearDeadline(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		svc := &Service{Counter: counter, Model: slowModel{think: time.Hour}, DefaultModel: "m", Heartbeat: 5 * time.Second}
		res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 10200 * time.Millisecond}), rec)
		if !res.IsError || !strings.Contains(res.Text(), "Request timed out after 10.2 seconds") {
			t.Fatalf("want a timeout, got %s", res.Text())
		}
		progress, _, _ := rec.snapshot()
		if len(progress) != 2 {
			t.Errorf("got %d heartbeats, want 2 (at once and at 5 s): the tick at 10 s is within %v of the 10.2 s deadline", len(progress), quietBeforeEnd)
		}
	})
}

func TestLivenessClamps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		heartbeat, idle, timeout time.Duration
		wantIdle, wantHeartbeat  time.Duration
	}{
		{"off", 0, 0, 22 * time.Second, 0, consult.DefaultHeartbeat},
		{"negative idle is off", 10 * time.Second, -time.Second, 22 * time.Second, 0, 10 * time.Second},
		{"heartbeat at most half the idle", 10 * time.Second, 6 * time.Second, 22 * time.Second, 6 * time.Second, 3 * time.Second},
		{"idle clamped to timeout", 10 * time.Second, time.Minute, 22 * time.Second, 22 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := liveRulesOf(tc.idle, tc.heartbeat, tc.timeout)
			idle, hb := l.idle, l.interval
			if l.clamped != (tc.idle > tc.timeout) {
				t.Errorf("clamped = %v, want %v", l.clamped, tc.idle > tc.timeout)
			}
			if idle != tc.wantIdle || hb != tc.wantHeartbeat {
				t.Errorf("liveness = idle %v heartbeat %v, want %v %v", idle, hb, tc.wantIdle, tc.wantHeartbeat)
			}
		})
	}
}

// TestIdleTimeout runs against the real OpenRouter client and a fake upstream in memory,
// on the fake clock of testing/synctest: keep-alive comments keep a slow call alive;
// silence kills it at the idle timeout.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	newSvc := func(t *testing.T) (*fake.Server, *Service) {
		srv, svc := bubbleUpstream(t, 0)
		svc.IdleTimeout = 800 * time.Millisecond
		return srv, svc
	}
	t.Run("keep-alives keep it alive", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			srv, svc := newSvc(t)
			// Silent but for keep-alives for 1.5 times the idle timeout.
			srv.Push(fake.Script{KeepAlive: 200 * time.Millisecond, Steps: []fake.Step{fake.Sleep(1200 * time.Millisecond), fake.Text("finally")}})
			res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 10 * time.Second}), nil)
			if res.IsError || !strings.HasPrefix(res.Text(), "finally") {
				t.Errorf("a call with keep-alives was cut: %s", res.Text())
			}
		})
	})
	t.Run("silence is cut", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			srv, svc := newSvc(t)
			srv.Push(fake.Script{HeaderDelay: time.Hour})
			start := time.Now()
			res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 10 * time.Second}), nil)
			el := time.Since(start)
			if !res.IsError || !strings.Contains(res.Text(), "No progress for 0.8 seconds (idle timeout) while waiting for the first token") {
				t.Fatalf("want an idle timeout, got %s", res.Text())
			}
			if el != 800*time.Millisecond {
				t.Errorf("cut after %v, want at the idle timeout, 800ms", el)
			}
			if !strings.Contains(res.Text(), "3 files") {
				t.Errorf("idle timeout should carry the size report:\n%s", res.Text())
			}
			req := completionRequest(t, srv)
			select {
			case <-req.Ended():
			case <-time.After(time.Second):
				t.Error("upstream request still open after the idle timeout")
			}
		})
	})
}

func TestIdleClampNoticeToClient(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	svc := &Service{Counter: counter, IdleTimeout: time.Minute}
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, DryRun: true}), rec)
	if res.IsError {
		t.Fatal(res.Text())
	}
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "idle timeout (60 seconds) is longer than this call's timeout; it is clamped to 5 seconds") {
		t.Errorf("client log = %q, want the idle clamp notice", rec.logs)
	}
}
