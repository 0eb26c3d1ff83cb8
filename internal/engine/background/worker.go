package background

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
)

// Causes of a background consultation's end other than its answer; each says how it is
// worded and classed (consultation.Stop). by is what its cancel marker holds.
var (
	causeTool = &stopCause{by: "tool", err: "cancelled with consultation_cancel", words: "Cancelled with consultation_cancel"}
	causeUser = &stopCause{by: "user", err: "cancelled by the user", words: "Cancelled by the user (the client aborted the call)"}
	causeTask = &stopCause{by: "task", err: "cancelled with tasks/cancel", words: "Cancelled by the client (tasks/cancel)"}
)

// stopCause is a cancel of a background consultation: by consultation_cancel (or
// `consult results --cancel`), or by the user aborting the call that started it.
type stopCause struct{ by, err, words string }

func (c *stopCause) Error() string { return c.err }

func (c *stopCause) Class() consultation.ErrorClass { return consultation.ClassCancelled }

func (c *stopCause) Words(phase, elapsed string) (string, string, string) {
	return fmt.Sprintf("%s while %s, after %s.", c.words, phase, elapsed), "cut off by the cancellation", ""
}

// limitCause ends a consultation that ran past the background limit.
type limitCause struct{ limit time.Duration }

func (c *limitCause) Error() string { return "background limit reached" }

func (c *limitCause) Class() consultation.ErrorClass { return consultation.ClassTimeout }

func (c *limitCause) Words(phase, _ string) (string, string, string) {
	return fmt.Sprintf("Stopped at the server's background limit (%s) while %s.", consult.FormatDuration(c.limit), phase),
		"cut off at the background limit",
		fmt.Sprintf("The limit is the server's --background-limit (now %s): raise it where the server is started, or make the request smaller (a narrower pattern, or exclude_pattern).\n", consult.FormatDuration(c.limit))
}

// readCancel reads the cancel marker of id: the cause, or nil when there is none.
func (e *Engine) readCancel(id string) error {
	why, ok := e.store.ReadCancel(id)
	switch {
	case !ok:
		return nil
	case why == causeUser.by:
		return causeUser
	case why == causeTask.by:
		return causeTask
	}
	return causeTool
}

// Work is the body of a worker: it runs job's consultation under the background limit with
// svc (built from the same configuration as the server's, which validates the request
// again), rewrites the job's record with its progress, and saves the final result; it also
// writes the result to out, so the call waiting for it gets it even when the record cannot
// be written. It stops, saving what it had, when the job is cancelled (its cancel marker),
// before it sends anything if the cancel came first. held (the record's lock and the worker
// slot) and out are closed when it returns.
func (e *Engine) Work(ctx context.Context, job Job, held []*os.File, out io.WriteCloser) error {
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	defer out.Close()
	defer e.store.RemoveCancel(job.ID)
	defer e.store.RemoveLock(job.ID) // after the final record: a free lock then reads as done
	base := jobRecord(job)
	base.PID = os.Getpid()
	var mu sync.Mutex // orders the record's writes: progress never overwrites the result
	finished := false
	save := func(rec results.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if finished && rec.Status != results.Done {
			return nil
		}
		finished = finished || rec.Status == results.Done
		return e.store.Save(rec)
	}
	ctx, stop := context.WithDeadlineCause(ctx, job.Created.Add(e.limit), &limitCause{e.limit})
	defer stop()
	if job.Request.OnTimeout != consultation.OnTimeoutContinue {
		// A task that is to stop at its timeout (on_timeout "fail") keeps the call's deadline.
		timeout := cmp.Or(job.Request.Timeout, e.svc.TimeoutRule().Default)
		ctx, stop = context.WithDeadlineCause(ctx, job.Created.Add(timeout), consultation.ErrCallTimeout)
		defer stop()
	}
	tell := &teller{w: out}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var res consultation.Result
	if cause := e.readCancel(job.ID); cause != nil {
		cancel(cause) // cancelled before it started: nothing is read or sent
	}
	var wg sync.WaitGroup
	wg.Go(func() { // a cancel reaches the worker through its marker, which a signal says to read
		wake := make(chan os.Signal, 1)
		notifyWake(wake)
		defer stopWake(wake)
		t := time.NewTicker(e.cancelPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-t.C:
			}
			if cause := e.readCancel(job.ID); cause != nil {
				cancel(cause)
				return
			}
		}
	})
	rep := recorder{tell: tell, record: func(st consultation.State) {
		rec := base
		rec.Progress = &results.Progress{Phase: string(st.Phase), Message: st.Message,
			ElapsedSeconds: st.Elapsed.Round(time.Millisecond).Seconds(), Attempts: st.Attempts,
			Files: st.Files, Bytes: st.Bytes, PromptTokens: st.PromptTokens,
			ReasoningTokens: st.Reasoning, AnswerTokens: st.AnswerTokens, Cost: st.Estimate}
		rec.Answer = st.Partial
		if err := save(rec); err != nil {
			e.logger.Warn("cannot write the progress of a background consultation", "id", job.ID, "error", err)
		}
	}}
	run, th, fail := e.prepare(job.Owner, job.Request)
	switch {
	case fail != nil:
		res = *fail
	case ctx.Err() != nil:
		res = e.svc.Run(ctx, run, job.Created, nil)
	default:
		res = th.settle(e.svc.Run(ctx, run, job.Created, rep))
	}
	cancel(nil)
	wg.Wait()
	if res.Summary != nil {
		res.Summary.ID = job.ID
	}
	rec, err := doneRecord(base, res, th)
	var sc *stopCause
	if errors.As(context.Cause(ctx), &sc) && res.IsError {
		rec.Note = "cancelled"
	}
	if err == nil {
		err = save(rec)
	}
	if err != nil {
		// The answer is paid for: it goes to the waiting call in band, and the failure to
		// keep it names the directory.
		e.logger.Error("cannot save the result of a background consultation", "id", job.ID, "dir", e.store.Dir(), "error", err)
		note := fmt.Sprintf("This result could not be saved in the results directory %s (%v): it is returned only here, and consultation_result cannot return it again.", e.store.Dir(), err)
		res = withWarnings(res, []string{note})
	}
	tell.send(workerEvent{Result: &res})
	e.logger.Info("background consultation finished", "id", job.ID, "error", res.IsError, "elapsed", time.Since(job.Created).Round(time.Millisecond))
	return nil
}

// recorder receives a worker's progress: it writes it to the record at the heartbeat's pace
// (see WorkerHeartbeat) for other readers and restarts, and tells the call waiting on the
// worker at once; notices go to the worker's log only.
type recorder struct {
	tell   *teller
	record func(consultation.State)
}

func (recorder) Progress(float64, string)       {}
func (recorder) Log(consultation.Level, string) {}

func (r recorder) Record(st consultation.State) {
	r.record(st)
	st.Partial = "" // the record has it; the waiting call needs the figures
	r.tell.send(workerEvent{State: &st})
}

// Launching tells the waiting call that the consultation's first model request goes out.
func (r recorder) Launching(st consultation.State) {
	st.Partial = ""
	r.tell.send(workerEvent{State: &st, Launched: true})
}

// workerEvent is one message on a worker's pipe to the call that started it: its state, the
// moment it sends its first model request, or its result (the last message).
type workerEvent struct {
	State    *consultation.State  `json:"state,omitempty"`
	Launched bool                 `json:"launched,omitempty"`
	Result   *consultation.Result `json:"result,omitempty"`
}

// teller writes a worker's events to its pipe, one JSON line each. Once the reader has gone
// (its call returned), writes fail and are dropped: the record serves later readers.
type teller struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *teller) send(ev workerEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = json.NewEncoder(t.w).Encode(ev)
}

// WorkerHeartbeat is the heartbeat a worker's service runs with for a server heartbeat of
// d: a worker writes its record at each, at least every writeMax.
func WorkerHeartbeat(d time.Duration) time.Duration {
	if d <= 0 {
		d = consult.DefaultHeartbeat
	}
	return min(d, writeMax)
}
