package consultation

import (
	"context"
	"errors"
	"time"

	consult "github.com/consultmcp/consult"
)

// The timing rules that follow from a call's deadline live here, and only here reads it.

// quietBeforeEnd is how close to the deadline no heartbeat is sent: a notification sent just
// before the result can reach the client after it.
const quietBeforeEnd = 500 * time.Millisecond

// minAttemptTime is the least time left that makes another attempt worth sending: a
// large prompt takes seconds just to upload and prefill.
const minAttemptTime = 2 * time.Second

// windowLookupMax bounds the context-window look-up: it is a convenience, and must never
// eat the time the model needs.
const windowLookupMax = 5 * time.Second

// budget is the time rules of one call, from its context's deadline.
type budget struct {
	deadline time.Time // zero: none
}

// ErrCallTimeout is the cause of a call's context when its own deadline passes.
var ErrCallTimeout = errors.New("consultation deadline passed")

// withCallDeadline bounds ctx by a call's timeout, counted from its arrival at start; past
// it, the cause is ErrCallTimeout.
func withCallDeadline(ctx context.Context, start time.Time, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithDeadlineCause(ctx, start.Add(timeout), ErrCallTimeout)
}

// budgetOf reads ctx's deadline.
func budgetOf(ctx context.Context) budget {
	dl, _ := ctx.Deadline()
	return budget{deadline: dl}
}

// left is the time until the deadline; a day when there is none.
func (b budget) left() time.Duration {
	if b.deadline.IsZero() {
		return 24 * time.Hour
	}
	return time.Until(b.deadline)
}

// quiet reports whether now is within quietBeforeEnd of the deadline, when no progress is
// sent any more.
func (b budget) quiet(now time.Time) bool {
	return !b.deadline.IsZero() && b.deadline.Sub(now) < quietBeforeEnd
}

// lookup is how long the model look-up may take: a quarter of what is left, at most
// windowLookupMax.
func (b budget) lookup() time.Duration {
	return min(windowLookupMax, b.left()/4)
}

// roomForAttempt reports whether an attempt after a wait of w still has the least time an
// attempt needs (minAttemptTime) before the deadline.
func (b budget) roomForAttempt(w time.Duration) bool {
	return w+minAttemptTime <= b.left()
}

// liveRules are a call's idle timeout and heartbeat interval.
type liveRules struct {
	idle     time.Duration // 0: off
	interval time.Duration
	clamped  bool // the server's idle timeout was longer than the call's time, and cut to it
}

// liveRulesOf returns the rules for a call that may run for d (its timeout, or the
// background limit; 0 for a wait that has no idle rule) on a server whose idle timeout is
// idle and heartbeat interval heartbeat: the idle timeout, clamped to d; the heartbeat
// (consult.DefaultHeartbeat unless set), clamped to at most half the idle timeout.
func liveRulesOf(idle, heartbeat, d time.Duration) liveRules {
	l := liveRules{idle: max(idle, 0), interval: heartbeat}
	if d > 0 && l.idle > d {
		l.idle, l.clamped = d, true
	}
	if l.interval <= 0 {
		l.interval = consult.DefaultHeartbeat
	}
	if l.idle > 0 {
		l.interval = min(l.interval, l.idle/2)
	}
	return l
}
