package consultation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/results"
)

// Causes of a background consultation's end other than its answer.
var (
	// ErrBackgroundLimit ends a consultation that ran past the server's background limit.
	ErrBackgroundLimit = errors.New("background limit reached")
	// ErrShutdown ends the consultations still running when the shutdown grace is over.
	ErrShutdown = errors.New("server shut down")
	// ErrCancelledByTool ends a consultation stopped with consultation_cancel.
	ErrCancelledByTool = errors.New("cancelled with consultation_cancel")
)

// keptInMemory bounds the finished consultations a server keeps an index entry for: enough
// for a session's worth of ids. A finished consultation whose result was saved is read back
// from the results directory; one that was not (no directory, or it could not be written)
// keeps its result in memory, within keptBytes for all of them, the oldest forgotten first.
const (
	keptInMemory = 200
	keptBytes    = 64 << 20
)

// Jobs runs consultations that may outlive their call (on_timeout "continue") and keeps
// their results: in memory while the server runs and, once a consultation has gone to the
// background, in the results directory, so they survive a restart. Create it with NewJobs;
// one per process.
type Jobs struct {
	store  *results.Store // nil: memory only
	limit  time.Duration
	ttl    time.Duration
	logger *slog.Logger
	pid    int

	launch     Launcher // nil: continue-mode consultations run in this process
	maxWorkers int
	instance   string // this server process, in the records it starts

	announce map[string]bool // workers whose call returned "still running"; guarded by mu

	base      context.Context // parent of every job's context; cancelled by Shutdown
	cancelAll context.CancelCauseFunc
	closing   atomic.Bool
	wg        sync.WaitGroup // one per job goroutine

	mu       sync.Mutex
	jobs     map[string]*job // running, and finished ones not yet forgotten
	done     []string        // finished ids, oldest first, for forgetting
	kept     int             // bytes of the results finished jobs keep in memory
	keptMax  int             // bound on kept: keptBytes; tests lower it
	keptMaxN int             // bound on len(done): keptInMemory; tests lower it
}

// JobsConfig configures NewJobs.
type JobsConfig struct {
	// Store is the results directory; nil keeps results in memory only (lost on restart).
	Store *results.Store
	// Limit is how long a consultation may run in all (consult.DefaultBackgroundLimit if 0).
	Limit time.Duration
	// TTL is how long a finished result is kept: the store's TTL when there is a store, else
	// this (consult.DefaultResultsTTL if 0).
	TTL time.Duration
	// Logger receives a line per background event; nil discards.
	Logger *slog.Logger
	// Launcher starts a detached worker process for each consultation that may go on in
	// the background. Nil, or no Store, runs them in this server process instead: they then
	// end with it (after the shutdown grace).
	Launcher Launcher
	// MaxWorkers bounds the workers running at once over every server sharing Store
	// (consult.DefaultBackgroundWorkers if 0).
	MaxWorkers int
}

// NewJobs returns a job manager ready to run background consultations.
func NewJobs(cfg JobsConfig) *Jobs {
	j := &Jobs{store: cfg.Store, limit: cfg.Limit, logger: cfg.Logger, pid: os.Getpid(), jobs: map[string]*job{},
		keptMax: keptBytes, keptMaxN: keptInMemory, launch: cfg.Launcher, maxWorkers: cfg.MaxWorkers, instance: newInstance()}
	if j.maxWorkers <= 0 {
		j.maxWorkers = consult.DefaultBackgroundWorkers
	}
	if j.limit <= 0 {
		j.limit = consult.DefaultBackgroundLimit
	}
	switch {
	case j.store != nil:
		j.ttl = j.store.TTL()
	case cfg.TTL > 0:
		j.ttl = cfg.TTL
	default:
		j.ttl = consult.DefaultResultsTTL
	}
	if j.logger == nil {
		j.logger = slog.New(slog.DiscardHandler)
	}
	j.base, j.cancelAll = context.WithCancelCause(context.Background())
	return j
}

// Limit is the longest a consultation may run, from its start.
func (j *Jobs) Limit() time.Duration { return j.limit }

// Store is the results directory (nil when results are kept in memory only).
func (j *Jobs) Store() *results.Store { return j.store }

// job is one consultation started with on_timeout "continue". Once finished it is an index
// entry: its call (with the gathered files) is dropped, and its result is either in the
// results directory (saved) or, when it could not be saved, in res.
type job struct {
	id      string
	owner   string                  // who started it: only the same owner may list, collect or cancel it
	session string                  // the client session that started it
	query   string                  // the head of the question, for listings
	cancel  context.CancelCauseFunc // the call's (kept once the call is dropped)
	created time.Time

	mu        sync.Mutex
	c         *call         // nil once finished
	detached  bool          // its call returned "still running": the result must be kept
	recordErr error         // why the running record could not be written when it detached
	finished  chan struct{} // closed when the fields below are set
	saved     bool          // the result is in the results directory; res is empty
	res       Result
	size      int       // bytes res counts against the memory bound
	isError   bool      // the result is an error
	endCause  error     // the cause of its context when it ended (nil: it finished on its own)
	ended     time.Time // when it finished
}

// call returns the job's call while it runs, nil once it has finished.
func (jb *job) call() *call {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.c
}

// durable returns nil when the running record was written when the job detached (its
// result will survive a restart), else why not.
func (jb *job) durable() error {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.recordErr
}

// cause is why the job's context ended, once it has finished.
func (jb *job) cause() error {
	<-jb.finished
	return jb.endCause
}

// isDone reports whether the job has finished.
func (jb *job) isDone() bool {
	select {
	case <-jb.finished:
		return true
	default:
		return false
	}
}

// start registers c as a job and runs it in the background under the server's limit.
// It fails only when the server is shutting down.
func (j *Jobs) start(c *call, owner, session string) (*job, error) {
	if j.closing.Load() {
		return nil, ErrShutdown
	}
	ctx := c.cancellable(j.base)
	ctx, stop := withBackgroundLimit(ctx, c.start, j.limit)
	jb := &job{id: c.id, owner: owner, session: session, query: shortQuery(c.req.Query), c: c, cancel: c.cancel, created: c.start, finished: make(chan struct{})}
	j.mu.Lock()
	j.jobs[jb.id] = jb
	j.mu.Unlock()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer stop()
		defer c.cancel(nil)
		res := c.run(ctx)
		var cause error
		if ctx.Err() != nil {
			cause = context.Cause(ctx)
		}
		j.finish(jb, res, cause)
	}()
	return jb, nil
}

// detach marks the job as going on without its call. It returns false when the job has
// already finished (the call should return its result instead). The job is recorded as
// running in the results directory, so another server process can tell it exists; when
// that fails (or there is no results directory), durable says so.
func (j *Jobs) detach(jb *job) bool {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	if jb.isDone() {
		return false
	}
	jb.detached = true
	jb.c.setReporter(nil)
	j.logger.Info("consultation continues in the background", "id", jb.id, "phase", jb.c.currentPhase())
	if j.store == nil {
		jb.recordErr = errNoStore
		return true
	}
	if err := j.store.Save(j.record(jb, results.Running, Result{}, "", "")); err != nil {
		jb.recordErr = err
		j.logger.Warn("cannot record a background consultation; its result is kept in memory only", "id", jb.id, "error", err)
	}
	return true
}

// errNoStore is why a result is kept in memory only when the server has no results directory.
var errNoStore = errors.New("this server keeps no results directory")

// finish keeps a job's result: written to the results directory first when the job went to
// the background (or the server is stopping), then made visible to waiters. The job then
// drops its call; a result that was saved is read back from the directory when collected,
// one that was not stays in memory within the server's bound.
func (j *Jobs) finish(jb *job, res Result, cause error) {
	if sum := res.Summary; sum != nil {
		sum.ID = jb.id
	}
	jb.mu.Lock()
	defer jb.mu.Unlock()
	if (jb.detached || j.closing.Load()) && j.store != nil {
		note := ""
		if errors.Is(cause, ErrShutdown) {
			note = "saved at shutdown"
		}
		if err := j.store.Save(j.record(jb, results.Done, res, jb.c.fullAnswer(), note)); err != nil {
			j.logger.Error("cannot save a background consultation's result; it is kept in memory only", "id", jb.id, "error", err)
		} else {
			jb.saved = true
		}
	}
	if !jb.saved {
		jb.res = res
		jb.size = resultSize(res)
	}
	jb.c = nil
	jb.isError = res.IsError
	jb.endCause = cause
	jb.ended = time.Now()
	close(jb.finished)
	j.logger.Info("background consultation finished", "id", jb.id, "error", res.IsError, "detached", jb.detached,
		"elapsed", time.Since(jb.created).Round(time.Millisecond))
	j.mu.Lock()
	j.done = append(j.done, jb.id)
	j.kept += jb.size
	j.forget()
	j.mu.Unlock()
}

// forget drops the oldest finished jobs until at most keptMaxN remain and their results in
// memory take at most keptMax bytes (the newest is always kept). A waiter holding a
// forgotten job still gets its result; a later collection does not find it. Called with
// j.mu held.
func (j *Jobs) forget() {
	for len(j.done) > 1 && (len(j.done) > j.keptMaxN || j.kept > j.keptMax) {
		if old, ok := j.jobs[j.done[0]]; ok {
			j.kept -= old.size
			delete(j.jobs, j.done[0])
		}
		j.done = j.done[1:]
	}
}

// resultSize is what a result kept in memory counts against keptBytes: its text, the answer
// in its summary, and a little for the rest.
func resultSize(res Result) int {
	n := len(res.Text) + 1024
	if sum := res.Summary; sum != nil {
		n += len(sum.Answer)
	}
	return n
}

// result is the result of a finished job: read back from the results directory when it was
// saved there, else the one kept in memory.
func (j *Jobs) result(jb *job) Result {
	<-jb.finished
	jb.mu.Lock()
	saved, res := jb.saved, jb.res
	jb.mu.Unlock()
	if !saved {
		return res
	}
	rec, err := j.store.Load(jb.id)
	if err != nil {
		return Failure(ClassInternal, fmt.Sprintf("The result of consultation %s was saved in %s but cannot be read back: %v", jb.id, j.store.Dir(), err))
	}
	return fromRecord(rec)
}

// record is the results-directory form of a job.
func (j *Jobs) record(jb *job, status results.Status, res Result, answer, note string) results.Record {
	c := jb.c
	r := results.Record{
		ID: jb.id, Status: status, PID: j.pid, PIDStart: processStart(j.pid), Owner: jb.owner, Created: jb.created,
		Session: jb.session, Instance: j.instance,
		Path: c.req.Path, Pattern: c.req.Pattern, Model: c.req.Model.ID, Query: c.req.Query,
		Text: res.Text, IsError: res.IsError, Answer: answer, Note: note,
	}
	if res.Summary != nil {
		if b, err := json.Marshal(res.Summary); err == nil {
			r.Summary = b
		}
	}
	return r
}

// get returns the job with this id, if this process has it and it belongs to owner;
// expired reports one of owner's that finished longer than the TTL ago. Another owner's job
// is reported exactly as an id this process does not have.
func (j *Jobs) get(id, owner string) (jb *job, ok, expired bool) {
	j.mu.Lock()
	jb, ok = j.jobs[id]
	j.mu.Unlock()
	if !ok || jb.owner != owner {
		return nil, false, false
	}
	if jb.isDone() && time.Since(jb.ended) > j.ttl {
		return nil, false, true
	}
	return jb, ok, false
}

// listed is one consultation in a listing; own marks one the listing session started.
type listed struct {
	ListEntry
	own bool
}

// listing returns owner's consultations of this process: those running and those finished
// within the TTL.
func (j *Jobs) listing(owner, session string) []listed {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []listed
	for id, jb := range j.jobs {
		if jb.owner != owner {
			continue
		}
		status := "running"
		if jb.isDone() {
			if time.Since(jb.ended) > j.ttl {
				continue
			}
			status = statusOf(jb.isError)
		}
		out = append(out, listed{ListEntry{ID: id, Status: status, Created: jb.created, Query: jb.query}, jb.session == session})
	}
	return out
}

// Running counts the consultations this process is running.
func (j *Jobs) Running() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, jb := range j.jobs {
		if !jb.isDone() {
			n++
		}
	}
	return n
}

// Shutdown stops taking background consultations, gives the running ones until ctx ends
// (the shutdown grace) to finish, then cancels the rest; every one that went to the
// background is saved, finished or with its partial state and a note. It returns when all
// are saved, or when the saving itself outlasts saveMax.
func (j *Jobs) Shutdown(ctx context.Context) {
	j.closing.Store(true)
	all := make(chan struct{})
	go func() {
		j.wg.Wait()
		close(all)
	}()
	n := j.Running()
	if n > 0 {
		j.logger.Info("waiting for background consultations to finish", "running", n)
	}
	select {
	case <-all:
		return
	case <-ctx.Done():
	}
	j.logger.Warn("shutdown grace over: stopping background consultations and saving what they have", "running", j.Running())
	j.cancelAll(ErrShutdown)
	t := time.NewTimer(saveMax)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
		j.logger.Error("background consultations did not stop in time", "running", j.Running())
	}
}

// saveMax bounds how long Shutdown waits for cancelled consultations to save their state:
// cancelling closes the upstream at once, so this is only a guard against a stuck disk.
const saveMax = 5 * time.Second
