package consultation

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// admitted reports whether ch (a reservation's result channel) has delivered.
func admitted[T any](ch chan T) bool {
	select {
	case v := <-ch:
		ch <- v
		return true
	default:
		return false
	}
}

// TestInflightFirstComeFirstServed: a call that does not fit waits, and a smaller call that
// arrives after it waits behind it even though it would fit: the large call is not starved.
// Shrinking or releasing a reservation admits the calls that fit now, in order.
func TestInflightFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := NewInflight(100)
		ctx := context.Background()
		a, err := f.reserve(ctx, 60, nil)
		if err != nil {
			t.Fatal(err)
		}
		big, small := make(chan *reservation, 1), make(chan *reservation, 1)
		go func() { r, _ := f.reserve(ctx, 50, nil); big <- r }()
		synctest.Wait()
		go func() { r, _ := f.reserve(ctx, 10, nil); small <- r }()
		synctest.Wait()
		if admitted(big) || admitted(small) {
			t.Fatalf("admitted with 60 of 100 held: big %v, small %v; want both waiting, small behind big", admitted(big), admitted(small))
		}
		a.shrink(40) // 40 + 50 fits: big goes; 40 + 50 + 10 fits: small too
		synctest.Wait()
		if !admitted(big) || !admitted(small) {
			t.Fatalf("after shrinking to 40: big %v, small %v; want both admitted", admitted(big), admitted(small))
		}
		if f.sem.TryAcquire(1) {
			t.Error("a byte was free with 40 + 50 + 10 of 100 reserved")
		}
		a.release()
		(<-big).release()
		(<-small).release()
		a.release() // twice is harmless
		allReleased(t, f, "every release")
	})
}

// TestInflightWaiterLeavesLine: a waiting call whose context ends leaves the line with the
// context's cause, and the call behind it moves up.
func TestInflightWaiterLeavesLine(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := NewInflight(100)
		a, _ := f.reserve(context.Background(), 90, nil)
		why := errors.New("gave up")
		ctx, cancel := context.WithCancelCause(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := f.reserve(ctx, 50, nil); errc <- err }()
		synctest.Wait()
		behind := make(chan *reservation, 1)
		go func() { r, _ := f.reserve(context.Background(), 10, nil); behind <- r }()
		synctest.Wait()
		if admitted(behind) {
			t.Fatal("the 10-byte call overtook the 50-byte call ahead of it")
		}
		cancel(why)
		synctest.Wait()
		if err := <-errc; !errors.Is(err, why) {
			t.Errorf("reserve = %v, want the context's cause", err)
		}
		if !admitted(behind) {
			t.Error("the call behind was not admitted once the one ahead left")
		}
		(<-behind).release()
		a.release()
		allReleased(t, f, "the calls")
	})
}

// TestInflightMoreThanBound: a reservation larger than the whole bound is refused at once.
func TestInflightMoreThanBound(t *testing.T) {
	t.Parallel()
	f := NewInflight(100)
	if _, err := f.reserve(context.Background(), 101, nil); !errors.Is(err, ErrOverInflight) {
		t.Errorf("reserve 101 of 100 = %v, want ErrOverInflight", err)
	}
}

// holdAll reserves all of f, as calls running would.
func holdAll(t *testing.T, f *Inflight) *reservation {
	t.Helper()
	r, err := f.reserve(context.Background(), int64(f.Limit()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTimeoutWhileQueued: a call that waits for room under the bound until its deadline
// ends with a timeout in phase "queued" at the deadline, says it waited behind the bytes in
// under --max-inflight in its progress, gathers nothing, sends nothing upstream, and leaves
// the line.
func TestTimeoutWhileQueued(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	dir := sampleTree(t)
	var gathers atomic.Int32
	svc.gather = countingGather(&gathers)
	svc.Heartbeat = time.Second
	synctest.Test(t, func(t *testing.T) {
		svc.Inflight = NewInflight(64 << 20)
		held := holdAll(t, svc.Inflight)
		rec := &recorder{}
		start := time.Now()
		res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 3 * time.Second}), rec)
		if got, want := time.Since(start), 3*time.Second; got != want {
			t.Errorf("returned after %v, want %v", got, want)
		}
		sum := summaryOf(t, res)
		if got, want := sum.Phase, "queued"; got != want {
			t.Errorf("phase = %q, want %q", got, want)
		}
		if sum.Error == nil || sum.Error.Class != ClassTimeout {
			t.Errorf("error = %+v, want class timeout", sum.Error)
		}
		for _, frag := range []string{"Request timed out after 3 seconds while queued", "never started", "sent nothing to the model"} {
			if !strings.Contains(res.Text(), frag) {
				t.Errorf("result lacks %q:\n%s", frag, res.Text())
			}
		}
		_, msgs, _ := rec.snapshot()
		if len(msgs) == 0 || !strings.HasPrefix(msgs[len(msgs)-1], "queued for room under --max-inflight (64.0 MiB), ") {
			t.Errorf("progress = %q, want \"queued for room under --max-inflight (64.0 MiB), ...\"", msgs)
		}
		held.release() // were the call still in line, it would take the room now
		allReleased(t, svc.Inflight, "the timeout")
	})
	if n := gathers.Load(); n != 0 {
		t.Errorf("gathered %d times while queued, want 0", n)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d upstream requests from a call that never left the queue, want 0", n)
	}
}

// TestQueuedWaitCountsAgainstDeadline: a call that waited 1.5 s for room has 1.5 s left of a
// 3 s timeout, not 3 s.
func TestQueuedWaitCountsAgainstDeadline(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		var gatherAt time.Duration
		start := time.Now()
		svc := &Service{Counter: counter, Inflight: NewInflight(64 << 20), gather: func(ctx context.Context, o files.Options) (*files.Gathered, error) {
			gatherAt = time.Since(start)
			<-ctx.Done() // a slow tree: the deadline passes while gathering
			return nil, ctx.Err()
		}}
		held := holdAll(t, svc.Inflight)
		time.AfterFunc(1500*time.Millisecond, held.release)
		res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 3 * time.Second, DryRun: true}), nil)
		if got, want := time.Since(start), 3*time.Second; got != want {
			t.Errorf("returned after %v, want %v from the start", got, want)
		}
		if got, want := gatherAt, 1500*time.Millisecond; got != want {
			t.Errorf("gathering began at %v, want %v (when room was made)", got, want)
		}
		if !strings.Contains(res.Text(), "while gathering files") {
			t.Errorf("result: %s", res.Text())
		}
		allReleased(t, svc.Inflight, "the call")
	})
}

// TestCallLargerThanBoundRefused: a call whose gathered files need more memory in flight than
// the whole bound is refused with too_large and the flag to raise, not left waiting.
func TestCallLargerThanBoundRefused(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	svc := &Service{Counter: counter, Inflight: NewInflight(1 << 10)}
	res := svc.Consult(context.Background(), goReq(Request{Path: dir, DryRun: true}), nil)
	sum := summaryOf(t, res)
	if !res.IsError || sum.Error == nil || sum.Error.Class != ClassTooLarge {
		t.Fatalf("result = %+v, want a too_large error:\n%s", sum.Error, res.Text())
	}
	if !strings.Contains(res.Text(), "--max-inflight 1.0 KiB") || !strings.Contains(res.Text(), "could never run") {
		t.Errorf("text does not name the bound: %s", res.Text())
	}
	allReleased(t, svc.Inflight, "the refusal")
}

// TestReservationReleasedOnEveryPath: whatever way a call ends, the bytes it reserved are
// given back and nobody is left waiting.
func TestReservationReleasedOnEveryPath(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	tests := []struct {
		name   string
		args   Request
		script fake.Script
		gather func(context.Context, files.Options) (*files.Gathered, error)
		cancel time.Duration // cancel the call's context after this long; 0 never
	}{
		{name: "answer", args: goReq(Request{Path: dir}), script: fake.Answer("fine")},
		{name: "dry run", args: goReq(Request{Path: dir, DryRun: true})},
		{name: "upstream failure", args: goReq(Request{Path: dir}), script: fake.Script{Steps: []fake.Step{fake.Fail(400, "bad request")}}},
		{name: "gathering fails", args: goReq(Request{Path: dir}), gather: func(context.Context, files.Options) (*files.Gathered, error) {
			return nil, errors.New("disk on fire")
		}},
		{name: "no files matched", args: goReq(Request{Path: dir, Pattern: "**/*.nothing"})},
		{name: "timeout while answering", args: goReq(Request{Path: dir, Timeout: 1 * time.Second}), script: fake.Script{Steps: []fake.Step{fake.Hang()}}},
		{name: "client cancels while answering", args: goReq(Request{Path: dir}), script: fake.Script{Steps: []fake.Step{fake.Hang()}}, cancel: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, 0)
			if len(tt.script.Steps) > 0 {
				srv.Push(tt.script)
			}
			svc.gather = tt.gather
			svc.Inflight = NewInflight(1 << 30)
			ctx := context.Background()
			if tt.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.cancel)
				defer cancel()
			}
			svc.Consult(ctx, tt.args, nil)
			allReleased(t, svc.Inflight, "the call")
		})
	}
}

// TestArrivalIsStart: the deadline runs from the arrival WithArrival records, not from when
// Consult runs; a call whose deadline passed before it ran ends at once in phase "queued",
// having gathered nothing.
func TestArrivalIsStart(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		var gathers atomic.Int32
		svc := &Service{Counter: counter, gather: func(ctx context.Context, o files.Options) (*files.Gathered, error) {
			gathers.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		start := time.Now()
		ctx := WithArrival(context.Background(), start.Add(-1500*time.Millisecond))
		svc.Consult(ctx, goReq(Request{Path: dir, Timeout: 2 * time.Second, DryRun: true}), nil)
		if got, want := time.Since(start), 500*time.Millisecond; got != want {
			t.Errorf("a call that arrived 1.5 s ago with timeout 2 returned after %v, want %v", got, want)
		}

		start = time.Now()
		ctx = WithArrival(context.Background(), start.Add(-3*time.Second))
		res := svc.Consult(ctx, goReq(Request{Path: dir, Timeout: 2 * time.Second, DryRun: true}), nil)
		if got := time.Since(start); got != 0 {
			t.Errorf("a call past its deadline on arrival took %v, want 0", got)
		}
		if got, want := summaryOf(t, res).Phase, "queued"; got != want {
			t.Errorf("phase = %q, want %q:\n%s", got, want, res.Text())
		}
		if got, want := gathers.Load(), int32(1); got != want {
			t.Errorf("gathered %d times, want %d (only the first call)", got, want)
		}
	})
}

// allReleased checks that nothing is reserved in in and nobody waits for it, after what:
// the whole bound can be taken at once, which it cannot while a byte is held or a call
// waits in line.
func allReleased(t *testing.T, in *Inflight, after string) {
	t.Helper()
	if !in.sem.TryAcquire(in.limit) {
		t.Errorf("after %s, something is still reserved or waiting", after)
		return
	}
	in.sem.Release(in.limit)
}
