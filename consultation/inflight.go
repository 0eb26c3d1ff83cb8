package consultation

import (
	"context"
	"errors"

	"golang.org/x/sync/semaphore"

	consult "github.com/consultmcp/consult"
)

// Admission: a server-wide bound on the memory the calls in flight hold (--max-inflight).
//
// What a call reserves, and when: before it gathers, memoryPerByte times the total cap on
// gathered bytes (it cannot know its size before it has gathered), at most the whole bound;
// once gathered, memoryPerByte times the bytes it gathered, and it is refused (too_large)
// if that is more than the whole bound, since it could never run. It holds the reservation
// until it ends, whatever the end (answer, failure, timeout, cancellation), in its call or in
// the background (on_timeout "continue" inside the server). A background worker process
// holds its call's memory in its own process; the worker count (--background-workers)
// bounds those.
//
// A call that does not fit waits in line, first come first served (semaphore.Weighted
// admits in order: a large call is never overtaken by smaller ones that keep arriving). The
// wait counts against its deadline; its progress says it is queued for room under the
// bound, and if its deadline passes while it waits it ends with a timeout in phase "queued",
// having read nothing and sent nothing upstream.

// memoryPerByte is the memory a call in flight holds per gathered byte: the files until the
// request body holds them, then the body (one encoded copy of the prompt, see
// providers.Body). Measured by TestInflightBoundsMemory (cmd/consult, make bench): peak RSS
// over idle per call divided by the bytes it gathered (docs/performance.md); 4 leaves room
// for the collector, which the server also holds to the bound (debug.SetMemoryLimit).
const memoryPerByte = 4

// maxDefaultInflight is the default bound: enough for a dozen calls at the 16 MiB cap at once.
const maxDefaultInflight consult.Bytes = 2 << 30

// ErrOverInflight is the cause of a refusal of a call that needs more memory in flight than
// the server's whole bound: waiting would never let it run.
var ErrOverInflight = errors.New("larger than the server's bound on bytes in flight")

// Inflight bounds the bytes the calls in flight hold, server-wide; one per server process,
// shared by its calls. Create it with NewInflight.
type Inflight struct {
	limit int64
	sem   *semaphore.Weighted
}

// NewInflight returns a bound of limit bytes in flight.
func NewInflight(limit consult.Bytes) *Inflight {
	return &Inflight{limit: int64(limit), sem: semaphore.NewWeighted(int64(limit))}
}

// Limit is the bound.
func (f *Inflight) Limit() consult.Bytes { return consult.Bytes(f.limit) }

// reserve waits until need bytes fit under the bound with every call that came first
// admitted, and reserves them. queued, when not nil, is called before waiting if the call
// has to wait. It returns ctx's cause if ctx ends first, and ErrOverInflight at once if need
// is more than the whole bound.
func (f *Inflight) reserve(ctx context.Context, need int64, queued func()) (*reservation, error) {
	if need > f.limit {
		return nil, ErrOverInflight
	}
	if !f.sem.TryAcquire(need) {
		if queued != nil {
			queued()
		}
		if f.sem.Acquire(ctx, need) != nil {
			return nil, context.Cause(ctx)
		}
	}
	return &reservation{sem: f.sem, n: need}, nil
}

// reservation is the bytes one admitted call holds; it belongs to the call's goroutine. A
// nil reservation (no bound) does nothing.
type reservation struct {
	sem *semaphore.Weighted
	n   int64
}

// shrink lowers the reservation to n bytes when it holds more, which admits the calls that
// fit now.
func (r *reservation) shrink(n int64) {
	if r != nil && n < r.n {
		r.sem.Release(r.n - n)
		r.n = n
	}
}

// release gives all of the reservation back; it may be called more than once.
func (r *reservation) release() { r.shrink(0) }

// DefaultInflight is the default bound on bytes in flight: room for a dozen calls at the
// 16 MiB cap at once. A machine with less than about 8 GiB of memory to spare should set
// --max-inflight lower.
func DefaultInflight() consult.Bytes { return maxDefaultInflight }
