// Package consult holds the defaults, limits and unit types shared by every part of the
// consult MCP server. Each constant carries the reason for its value.
package consult

import "time"

// Version is the release of this build; `consult version` prints it.
var Version = "0.1.0-dev"

// Call deadlines.
const (
	// DefaultTimeout is the deadline of a call that names none: long enough for a small
	// consultation, short enough to answer before MCP clients that give up near 25-30 s.
	DefaultTimeout = 22 * time.Second
	// MinTimeout is the shortest deadline a caller may set: below a second nothing useful finishes.
	MinTimeout = 1 * time.Second
	// MaxTimeout is the longest deadline a caller may set: ten minutes covers the slowest
	// thinking models on a full context; beyond that a client is better served by a retry.
	MaxTimeout = 600 * time.Second
	// TimeoutWarnAt is the deadline from which the result carries a warning: many MCP clients
	// abandon a call after about 25-60 s unless they reset their clock on progress.
	TimeoutWarnAt = 25 * time.Second
)

// Liveness.
const (
	// DefaultHeartbeat is the interval between progress notifications: well under the
	// 25-60 s after which clients give up, and rare enough not to flood the transport.
	DefaultHeartbeat = 10 * time.Second
	// MaxProgressMessage is the longest progress message we send, in characters: clients
	// show it in one status line.
	MaxProgressMessage = 200
)

// Gathering limits.
const (
	// MaxFileBytes is the per-file cap: a text file larger than 1 MiB (about 250k tokens) is
	// almost always generated code, data or a bundle, not something to reason over.
	MaxFileBytes Bytes = 1 << 20
	// MaxTotalBytes is the cap on all gathered bytes: 16 MiB is about 4M tokens, above every
	// model's context window, so the model's limit decides before this does; it bounds memory.
	MaxTotalBytes Bytes = 16 << 20
	// MaxFiles is the cap on the number of gathered files: beyond 20,000 the per-file headers
	// alone crowd the context and the pattern is almost certainly too broad.
	MaxFiles = 20000
)

// Background consultations (on_timeout "continue").
const (
	// DefaultBackgroundLimit is how long a consultation may run on after its call returned:
	// the slowest thinking models finish a full context in well under half an hour, and a
	// bound keeps a forgotten call from running up a bill.
	DefaultBackgroundLimit = 30 * time.Minute
	// DefaultResultsTTL is how long a finished background answer is kept: a working day is
	// enough to come back for it, and old answers describe code that has since changed.
	DefaultResultsTTL = 24 * time.Hour
	// DefaultBackgroundWorkers is how many background consultations may run at once on
	// one machine (counted over every server sharing the results directory): each is a
	// worker process holding an upstream request, and a runaway agent must not start
	// hundreds.
	DefaultBackgroundWorkers = 8
	// DefaultWait is how long consultation_result waits for an answer when the caller sets
	// no wait: under the ~25 s after which many clients give up on a call.
	DefaultWait = 20 * time.Second
	// MinWait and MaxWait bound consultation_result's wait, like a call's timeout.
	MinWait = 1 * time.Second
	MaxWait = 600 * time.Second
)
