package consultation

import "errors"

// Causes of a call's context ending because of its client. The MCP face sets them as the
// context's cause from the reason of the client's notifications/cancelled; a context that
// ends with none of them (the client went away, or sent no reason) is treated as
// ErrClientCancelled.
var (
	// ErrUserCancelled: the client cancelled the call because its user asked to stop. A
	// consultation stops, even one that would go on in the background.
	ErrUserCancelled = errors.New("cancelled by the user")
	// ErrClientGaveUp: the client cancelled the call because its own time limit passed
	// (its reason said "timed out", "timeout", -32001, or "deadline exceeded" as the Go
	// SDKs send it). A consultation with
	// on_timeout "continue" goes on in the background, to be collected later.
	ErrClientGaveUp = errors.New("the client gave up waiting")
	// ErrClientCancelled: the client cancelled the call without saying that its user asked
	// to (no reason, or one that could be either). A call stops; a consultation with
	// on_timeout "continue" goes on.
	ErrClientCancelled = errors.New("cancelled by the client")
)
