package consultation

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/results"
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

// keptInMemory bounds the finished consultations a server remembers without the results
// directory: enough for a session's worth of ids, a fallback when the disk cannot be written.
const keptInMemory = 200

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

	base      context.Context // parent of every job's context; cancelled by Shutdown
	cancelAll context.CancelCauseFunc
	closing   atomic.Bool
	wg        sync.WaitGroup // one per job goroutine

	mu   sync.Mutex
	jobs map[string]*job // running, and finished ones not yet forgotten
	done []string        // finished ids, oldest first, for forgetting
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
}

// NewJobs returns a job manager ready to run background consultations.
func NewJobs(cfg JobsConfig) *Jobs {
	j := &Jobs{store: cfg.Store, limit: cfg.Limit, logger: cfg.Logger, pid: os.Getpid(), jobs: map[string]*job{}}
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

// job is one consultation started with on_timeout "continue".
type job struct {
	id      string
	c       *call
	cancel  context.CancelCauseFunc
	created time.Time

	mu       sync.Mutex
	detached bool          // its call returned "still running": the result must be kept
	finished chan struct{} // closed when res is set
	res      Result
	endCause error     // the cause of its context when it ended (nil: it finished on its own)
	ended    time.Time // when it finished
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
func (j *Jobs) start(c *call) (*job, error) {
	if j.closing.Load() {
		return nil, ErrShutdown
	}
	ctx, cancel := context.WithCancelCause(j.base)
	ctx, stop := context.WithDeadlineCause(ctx, c.start.Add(j.limit), ErrBackgroundLimit)
	c.cancel = cancel
	jb := &job{id: c.id, c: c, cancel: cancel, created: c.start, finished: make(chan struct{})}
	j.mu.Lock()
	j.jobs[jb.id] = jb
	j.mu.Unlock()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer stop()
		defer cancel(nil)
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
// running in the results directory, so another server process can tell it exists.
func (j *Jobs) detach(jb *job) bool {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	if jb.isDone() {
		return false
	}
	jb.detached = true
	jb.c.setReporter(nil)
	j.logger.Info("consultation continues in the background", "id", jb.id, "phase", jb.c.currentPhase())
	if j.store != nil {
		if err := j.store.Save(j.record(jb, results.Running, Result{}, "", "")); err != nil {
			j.logger.Warn("cannot record a background consultation", "id", jb.id, "error", err)
		}
	}
	return true
}

// finish keeps a job's result: written to the results directory first when the job went to
// the background (or the server is stopping), then made visible to waiters.
func (j *Jobs) finish(jb *job, res Result, cause error) {
	if sum, ok := res.Structured.(*Summary); ok {
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
		}
	}
	jb.res = res
	jb.endCause = cause
	jb.ended = time.Now()
	close(jb.finished)
	j.logger.Info("background consultation finished", "id", jb.id, "error", res.IsError, "detached", jb.detached,
		"elapsed", time.Since(jb.created).Round(time.Millisecond))
	j.mu.Lock()
	j.done = append(j.done, jb.id)
	if len(j.done) > keptInMemory {
		delete(j.jobs, j.done[0])
		j.done = j.done[1:]
	}
	j.mu.Unlock()
}

// record is the results-directory form of a job.
func (j *Jobs) record(jb *job, status results.Status, res Result, answer, note string) results.Record {
	c := jb.c
	r := results.Record{
		ID: jb.id, Status: status, PID: j.pid, Created: jb.created,
		Path: c.req.Path, Pattern: c.req.Pattern, Model: c.req.Model.ID, Query: c.req.Query,
		Text: res.Text, IsError: res.IsError, Answer: answer, Note: note,
	}
	if res.Structured != nil {
		if b, err := json.Marshal(res.Structured); err == nil {
			r.Summary = b
		}
	}
	return r
}

// get returns the job with this id, if this process has it; expired reports one that
// finished longer than the TTL ago.
func (j *Jobs) get(id string) (jb *job, ok, expired bool) {
	j.mu.Lock()
	jb, ok = j.jobs[id]
	j.mu.Unlock()
	if ok && jb.isDone() && time.Since(jb.ended) > j.ttl {
		return nil, false, true
	}
	return jb, ok, false
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
