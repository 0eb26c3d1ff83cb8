package consultation

import (
	"context"
	"errors"
)

// Causes of a call's context ending because of its client. The MCP face sets them as the
// context's cause from the reason of the client's notifications/cancelled; a context that
// ends with neither (the client went away, or sent no reason it could read) is treated as
// ErrUserCancelled.
var (
	// ErrUserCancelled: the client cancelled the call because its user asked to stop. A
	// consultation stops, even one that would go on in the background.
	ErrUserCancelled = errors.New("cancelled by the client")
	// ErrClientGaveUp: the client cancelled the call because its own time limit passed
	// (its reason said "timed out", "timeout", -32001, or "deadline exceeded" as the Go
	// SDKs send it). A consultation with
	// on_timeout "continue" goes on in the background, to be collected later.
	ErrClientGaveUp = errors.New("the client gave up waiting")
)

// userStopped reports whether ctx ended because the user stopped the call: its cause is
// ErrUserCancelled or a plain cancellation. A client that gave up waiting (ErrClientGaveUp,
// or a deadline of its own) did not: a consultation that may continue goes on.
func userStopped(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, ErrUserCancelled) || (errors.Is(cause, context.Canceled) && !errors.Is(cause, ErrClientGaveUp))
}
