package consultation

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

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
// A call that does not fit waits in line, first come first served: a large call is never
// overtaken by smaller ones that keep arriving. The wait counts against its deadline; its
// progress says "queued behind N" (the bytes held by running calls and wanted by calls ahead
// of it), and if its deadline passes while it waits it ends with a timeout in phase
// "queued", having read nothing and sent nothing upstream.

// memoryPerByte is the memory a call in flight holds per gathered byte: the files until the
// request body holds them, then the body (one encoded copy of the prompt, see
// providers.Body). Measured by TestInflightBoundsMemory (cmd/consult, make bench): peak RSS
// over idle per call divided by the bytes it gathered, 2.3-3.1 for a 16 MiB call; 4 leaves
// room for the collector, which the server also holds to the bound (debug.SetMemoryLimit).
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

	mu    sync.Mutex
	used  int64     // bytes reserved by admitted calls
	queue []*waiter // calls waiting, first come first
}

// waiter is one call waiting for admission.
type waiter struct {
	need     int64
	admitted chan struct{} // closed once admitted
	ok       bool          // admitted; guarded by Inflight.mu
}

// NewInflight returns a bound of limit bytes in flight.
func NewInflight(limit consult.Bytes) *Inflight {
	return &Inflight{limit: int64(limit)}
}

// Limit is the bound.
func (f *Inflight) Limit() consult.Bytes { return consult.Bytes(f.limit) }

// InUse is the bytes reserved by the calls admitted now.
func (f *Inflight) InUse() consult.Bytes {
	f.mu.Lock()
	defer f.mu.Unlock()
	return consult.Bytes(f.used)
}

// Waiting is how many calls wait for admission now.
func (f *Inflight) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// reserve waits until need bytes fit under the bound with every call that came first
// admitted, and reserves them. queued, when not nil, is called once if the call has to
// wait, with its place in line. It returns ctx's cause if ctx ends first, and
// ErrOverInflight at once if need is more than the whole bound.
func (f *Inflight) reserve(ctx context.Context, need int64, queued func(*waiter)) (*reservation, error) {
	if need > f.limit {
		return nil, ErrOverInflight
	}
	f.mu.Lock()
	if len(f.queue) == 0 && f.used+need <= f.limit {
		f.used += need
		f.mu.Unlock()
		return &reservation{f: f, n: need}, nil
	}
	w := &waiter{need: need, admitted: make(chan struct{})}
	f.queue = append(f.queue, w)
	f.mu.Unlock()
	if queued != nil {
		queued(w)
	}
	select {
	case <-w.admitted:
		return &reservation{f: f, n: need}, nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.ok { // admitted as ctx ended: give the bytes back
		f.used -= need
	} else {
		f.queue = slices.DeleteFunc(f.queue, func(x *waiter) bool { return x == w })
	}
	f.admitLocked() // the calls behind it may fit now
	return nil, context.Cause(ctx)
}

// admitLocked admits the calls at the head of the line while they fit.
func (f *Inflight) admitLocked() {
	for len(f.queue) > 0 && f.used+f.queue[0].need <= f.limit {
		w := f.queue[0]
		f.queue = f.queue[1:]
		f.used += w.need
		w.ok = true
		close(w.admitted)
	}
}

// ahead is what w waits behind: the bytes held by admitted calls and wanted by the calls
// ahead of it in line; 0 once it is admitted.
func (f *Inflight) ahead(w *waiter) consult.Bytes {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.ok {
		return 0
	}
	n := f.used
	for _, x := range f.queue {
		if x == w {
			break
		}
		n += x.need
	}
	return consult.Bytes(n)
}

// reservation is the bytes one admitted call holds. A nil reservation (no bound) does
// nothing.
type reservation struct {
	f *Inflight
	n int64 // guarded by f.mu
}

// shrink lowers the reservation to n bytes when it holds more, and admits the calls that
// fit now.
func (r *reservation) shrink(n int64) {
	if r == nil {
		return
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if n < r.n {
		r.f.used -= r.n - n
		r.n = n
		r.f.admitLocked()
	}
}

// release gives all of the reservation back; it may be called more than once.
func (r *reservation) release() { r.shrink(0) }

// DefaultInflight is the default bound on bytes in flight: room for a dozen calls at the
// 16 MiB cap at once. A machine with less than about 8 GiB of memory to spare should set
// --max-inflight lower.
func DefaultInflight() consult.Bytes { return maxDefaultInflight }

// admit reserves the call's bytes in flight before it gathers (see the top of this file),
// waiting in line if they do not fit; nil, nil without a bound. An error is ctx's end.
func (c *call) admit(ctx context.Context) (*reservation, error) {
	f := c.svc.Inflight
	if f == nil {
		return nil, nil
	}
	limit := cmp.Or(max(c.svc.Limits.MaxTotalBytes, 0), consult.MaxTotalBytes)
	need := min(memoryPerByte*int64(limit), f.limit)
	r, err := f.reserve(ctx, need, func(w *waiter) {
		c.queuedOn.Store(w)
		c.svc.logger().Info("call queued behind the bytes in flight", "ahead", f.ahead(w), "bound", f.Limit())
		c.mu.Lock()
		c.hb.poke() // the client hears at once that it waits
		c.mu.Unlock()
	})
	c.queuedOn.Store(nil)
	return r, err
}

// queuedBehind is what the call waits behind for admission, and whether it waits there.
func (c *call) queuedBehind() (consult.Bytes, bool) {
	w := c.queuedOn.Load()
	if w == nil || c.svc.Inflight == nil {
		return 0, false
	}
	return c.svc.Inflight.ahead(w), true
}
