package consultation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// attemptRecord is one failed attempt, for the final message.
type attemptRecord struct {
	err     error
	elapsed time.Duration
}

// backoff returns the wait before attempt n+1 (n ≥ 1 attempts made): full jitter over an
// exponential ceiling, or the provider's Retry-After when it asked for longer.
func backoff(n int, retryAfter time.Duration, rnd func(time.Duration) time.Duration) time.Duration {
	ceiling := min(consult.RetryCap, consult.RetryBase<<(n-1))
	d := rnd(ceiling)
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

// jitter is uniform in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// retryAfterOf returns how long the provider asked us to wait, 0 if it did not say.
func retryAfterOf(err error) time.Duration {
	var pe *providers.Error
	if errors.As(err, &pe) {
		return pe.RetryAfter
	}
	return 0
}

// streamWithRetries sends the request, again after a transient failure, while the deadline
// allows. It returns the last response and error, and the failed attempts before it. It never
// re-sends once any answer text has arrived, and never sleeps past the deadline.
func (c *call) streamWithRetries(ctx context.Context, preq providers.Request) (*providers.Response, error, []attemptRecord, string) {
	var failed []attemptRecord
	rnd := c.svc.jitter
	if rnd == nil {
		rnd = jitter
	}
	for n := 1; ; n++ {
		c.attempts.Store(int32(n))
		live := &stream{onFirst: func() { c.setPhase(PhaseReceiving) }}
		c.setLiveStream(live)
		c.setPhase(PhaseWaiting)
		c.alive.resume()
		t0 := time.Now()
		resp, err := c.svc.Model.Stream(ctx, preq, live)
		if err == nil || ctx.Err() != nil {
			return resp, err, failed, ""
		}
		if _, _, started := live.snapshot(); started || !providers.Retryable(err) {
			return resp, err, failed, ""
		}
		failed = append(failed, attemptRecord{err: err, elapsed: time.Since(t0)})
		if n >= consult.MaxAttempts {
			return resp, err, failed, fmt.Sprintf("gave up after %d attempts, the most one call makes", n)
		}
		wait := backoff(n, retryAfterOf(err), rnd)
		left := time.Until(deadlineOf(ctx))
		if wait+consult.MinAttemptTime > left {
			why := fmt.Sprintf("gave up after %d %s: %s left before the deadline", n, plural(n, "attempt", "attempts"), left.Round(100*time.Millisecond))
			if ra := retryAfterOf(err); ra > 0 {
				why += fmt.Sprintf(", and the provider asked to wait %s", ra.Round(100*time.Millisecond))
			}
			why += fmt.Sprintf("; another attempt needs at least %s", consult.MinAttemptTime)
			return resp, err, failed, why
		}
		c.log(LevelWarning, fmt.Sprintf("attempt %d failed (%v); retrying in %s", n, err, wait.Round(10*time.Millisecond)))
		c.alive.pause()
		select {
		case <-ctx.Done():
			return resp, ctx.Err(), failed, ""
		case <-time.After(wait):
		}
	}
}

// deadlineOf is ctx's deadline, or far in the future.
func deadlineOf(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(24 * time.Hour)
}

// describeAttempts lists failed attempts: "1) openrouter: rate limited (429) after 0.2 s".
func describeAttempts(failed []attemptRecord) string {
	var b strings.Builder
	for i, a := range failed {
		fmt.Fprintf(&b, "\n  %d) %v (after %s)", i+1, a.err, a.elapsed.Round(10*time.Millisecond))
	}
	return b.String()
}
