package consultation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// Retries.
const (
	// maxAttempts bounds the requests one call sends: beyond four, a failing provider is
	// down, and the caller is better told so than kept waiting.
	maxAttempts = 4
	// retryBase and retryCap shape the full-jitter exponential backoff between attempts:
	// the n-th wait is uniform in [0, min(retryCap, retryBase·2^n)).
	retryBase = 500 * time.Millisecond
	retryCap  = 8 * time.Second
)

// backoff returns the wait before attempt n+1 (n ≥ 1 attempts made), with left the time to
// the deadline and err why attempt n failed:
//   - the provider's own delay when it gave one (Retry-After and the like);
//   - for a rate limit without one, the time left spread over the attempts left, so that
//     they use the budget instead of failing again within a second or two (rate limits
//     reset over seconds to a minute), jittered in [w/2, w), and never less than the
//     exponential step below;
//   - otherwise full jitter over an exponential ceiling: transient failures clear fast.
func backoff(n int, err error, left time.Duration, rnd func(time.Duration) time.Duration) time.Duration {
	if ra := retryAfterOf(err); ra > 0 {
		return ra
	}
	ceiling := min(retryCap, retryBase<<(n-1))
	if errors.Is(err, providers.RateLimited) && n < maxAttempts {
		w := (left - minAttemptTime) / time.Duration(maxAttempts-n)
		if w > ceiling {
			return w/2 + rnd(w/2)
		}
	}
	return rnd(ceiling)
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

// streamWithRetries sends the request to m, again after a transient failure, while the
// deadline allows, telling t of each attempt; rnd draws the backoffs (nil: jitter). It returns
// the last response, the failed attempts before it, why it gave up retrying (nil when it did
// not) and the last error. It never re-sends once any answer text has arrived, and never
// sleeps past the deadline.
func streamWithRetries(ctx context.Context, m Model, preq providers.Request, t *tracker, rnd func(time.Duration) time.Duration) (*providers.Response, []Attempt, *GaveUp, error) {
	var failed []Attempt
	if rnd == nil {
		rnd = jitter
	}
	for n := 1; ; n++ {
		t.attempts.Store(int32(n))
		live := &stream{onFirst: func() { t.setPhase(PhaseReceiving) }}
		t.live.Store(live)
		t.setPhase(PhaseWaiting)
		if n == 1 {
			t.launching()
		}
		t.alive.resume()
		t0 := time.Now()
		resp, err := m.Stream(ctx, preq, live)
		if err == nil || ctx.Err() != nil {
			return resp, failed, nil, err
		}
		if _, _, started := live.snapshot(); started || !providers.Retryable(err) {
			return resp, failed, nil, err
		}
		failed = append(failed, Attempt{Err: err.Error(), Elapsed: time.Since(t0)})
		if n >= maxAttempts {
			return resp, failed, &GaveUp{Attempts: n, Max: true}, err
		}
		b := budgetOf(ctx)
		left := b.left()
		wait := backoff(n, err, left, rnd)
		if !b.roomForAttempt(wait) {
			return resp, failed, &GaveUp{Attempts: n, Left: left, RetryAfter: retryAfterOf(err)}, err
		}
		failed[len(failed)-1].Wait = wait
		// The phase first: the notice below sends a progress report at once, which must say so.
		t.live.Store(nil) // the failed attempt's stream says nothing of the wait
		t.setPhase(Phase(fmt.Sprintf("waiting to retry (attempt %d of %d in %s)", n+1, maxAttempts, consult.FormatDuration(wait))))
		t.log(LevelWarning, fmt.Sprintf("attempt %d of %d failed (%v); retrying in %s", n, maxAttempts, err, consult.FormatDuration(wait)))
		t.alive.pause()
		select {
		case <-ctx.Done():
			return resp, failed, nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
