package consultation

import (
	"context"
	"time"

	consult "github.com/consultmcp/consult"
)

// The timing rules that follow from a call's deadline live here, and only here reads it.

// quietBeforeEnd is how close to the deadline no heartbeat is sent: a notification sent just
// before the result can reach the client after it.
const quietBeforeEnd = 500 * time.Millisecond

// windowLookupMax bounds the context-window look-up: it is a convenience, and must never
// eat the time the model needs.
const windowLookupMax = 5 * time.Second

// budget is the time rules of one call, from its context's deadline.
type budget struct {
	deadline time.Time // zero: none
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
// attempt needs (consult.MinAttemptTime) before the deadline.
func (b budget) roomForAttempt(w time.Duration) bool {
	return w+consult.MinAttemptTime <= b.left()
}
