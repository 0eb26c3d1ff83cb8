package background

import (
	"context"
	"errors"
	"fmt"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
)

// Tasks: a client that declares the MCP tasks extension gets a consultation that will reach
// a model as a task. A task is the same consultation as any other, run by a worker with the
// same deadline (its timeout, or the background limit with on_timeout "continue"), and its
// state is its record: any server process sharing the results directory answers for it,
// across restarts.

// TaskStatus is a task's status, as the tasks extension names it.
type TaskStatus string

// The statuses a consultation's task can have.
const (
	TaskWorking   TaskStatus = "working"
	TaskCompleted TaskStatus = "completed"
	TaskCancelled TaskStatus = "cancelled"
)

// Task is a consultation as a task: its status and, once completed, its result (a timeout
// or an upstream failure completes with an error result).
type Task struct {
	ID      string
	Status  TaskStatus
	Message string // what the heartbeat says while it works; what ended it otherwise
	Created time.Time
	Updated time.Time
	// TTL is how long after Created its record may be kept at most.
	TTL time.Duration
	// Result is the consultation's result once completed.
	Result consultation.Result
	// Launch is the consultation's state when its first model request went out (at
	// creation only; nil otherwise).
	Launch *consultation.State
	// Deadline is when the consultation stops (at creation only).
	Deadline time.Time
}

// ErrNoTask is the error of a task id the caller cannot use: malformed, unknown, another
// owner's, or expired. Its message says which, naming the id.
var ErrNoTask = errors.New("no such task")

// taskError is ErrNoTask with its words.
type taskError struct{ msg string }

func (e *taskError) Error() string   { return e.msg }
func (e *taskError) Is(t error) bool { return t == ErrNoTask }

// creationGrace is how long past a task's own deadline its creation waits for the worker to
// report (it stops at its deadline and says so) before the task is created anyway.
const creationGrace = 5 * time.Second

// StartTask starts a consultation for a client that takes tasks. It validates in and starts
// its worker like Start, then waits until the consultation either ends (an argument refused,
// no file matched, over budget, too large: the result, returned as for any call, with a nil
// task) or sends its first model request: then it returns the task, which goes on. A call
// that continues past its timeout (on_timeout "continue") becomes a task at its timeout if
// it has not reached the model by then.
func (e *Engine) StartTask(ctx context.Context, in consultation.Request, r consultation.Reporter) (consultation.Result, *Task) {
	w, fail := e.launch(ctx, in, r)
	if fail != nil {
		return *fail, nil
	}
	defer w.stop()
	deadline := w.start.Add(w.timeout)
	wait := deadline.Add(creationGrace)
	if in.OnTimeout == consultation.OnTimeoutContinue {
		wait = deadline
		deadline = w.job.Created.Add(e.limit)
	}
	fg, cancel := context.WithDeadline(ctx, wait)
	defer cancel()
	res, how, st := e.follow(fg, w.job.ID, time.Time{}, w.relay, w.events, true)
	switch {
	case how == followDone:
		return withWarnings(res, w.warnings), nil
	case ctx.Err() != nil && userAborted(ctx):
		return e.stop(w.job.ID, causeUser), nil
	case ctx.Err() != nil: // the client is gone; the response will reach nobody
		return e.goesOn(ctx, w), nil
	}
	now := time.Now()
	t := &Task{ID: w.job.ID, Status: TaskWorking, Created: w.job.Created, Updated: now, Launch: st, Deadline: deadline,
		TTL: deadline.Sub(w.job.Created) + e.store.TTL()}
	if st != nil {
		t.Message = st.Message
	} else {
		t.Message = fmt.Sprintf("%s, %s", phaseStarting, consult.FormatDuration(now.Sub(w.start).Truncate(time.Second)))
	}
	e.logger.Info("task created", "id", t.ID)
	return consultation.Result{}, t
}

// TaskState is the task id of ctx's owner as it is now: working (with its progress),
// completed (with its result) or cancelled. An id the owner cannot use is ErrNoTask, with a
// message that names it.
func (e *Engine) TaskState(ctx context.Context, id string) (Task, error) {
	rec, err := e.taskRecord(ctx, id)
	if err != nil {
		return Task{}, err
	}
	rec = e.settled(rec)
	t := Task{ID: rec.ID, Created: rec.Created, Updated: rec.Updated, TTL: e.limit + e.store.TTL()}
	if !rec.Expires.IsZero() && rec.Status == results.Done {
		t.TTL = rec.Expires.Sub(rec.Created)
	}
	switch {
	case rec.Status == results.Running:
		t.Status, t.Message = TaskWorking, progressLine(rec)
	case rec.Note == "cancelled":
		t.Status, t.Message = TaskCancelled, "cancelled"
		if p := rec.Progress; p != nil && p.Phase != "" {
			t.Message = "cancelled while " + p.Phase
		}
	default:
		t.Status, t.Result = TaskCompleted, e.fromRecord(rec)
		t.Message = "finished"
		if rec.IsError {
			t.Message = "finished with an error"
		}
	}
	return t, nil
}

// CancelTask stops task id of ctx's owner, as consultation_cancel does, without waiting for
// its worker: the cancel is recorded at once and the worker stops within moments, keeping
// what it had. A task already finished, or already cancelled, is left as it is.
func (e *Engine) CancelTask(ctx context.Context, id string) error {
	rec, err := e.taskRecord(ctx, id)
	if err != nil {
		return err
	}
	if rec.Status == results.Done {
		return nil
	}
	e.announce.Delete(id)
	if err := e.store.WriteCancel(id, causeTask.by); err != nil {
		return fmt.Errorf("cannot cancel consultation %s: its cancel cannot be written in %s (%w)", id, e.store.Dir(), err)
	}
	e.wake(id)
	e.logger.Info("background consultation cancelled", "id", id, "why", causeTask)
	return nil
}

// taskRecord is the record of task id for ctx's owner, or ErrNoTask saying why not.
func (e *Engine) taskRecord(ctx context.Context, id string) (results.Record, error) {
	if _, err := results.ParseID(id); err != nil {
		return results.Record{}, &taskError{fmt.Sprintf("Unknown task %s: it is not a consultation id (ids look like %q).", consultation.Shown(id), results.IDExample)}
	}
	rec, failed := e.load(id, OwnerFrom(ctx))
	if failed != nil {
		return results.Record{}, &taskError{failed.Text()}
	}
	return rec, nil
}

// orphaned marks the consultation of job as going on with no client waiting for it: the next
// result its owner gets names it (WithOrphans), and `consult results` shows it.
func (e *Engine) orphaned(job Job) {
	if err := e.store.WriteOrphan(job.ID, job.Owner); err != nil {
		e.logger.Warn("cannot mark a consultation nobody waits for", "id", job.ID, "error", err)
		return
	}
	e.logger.Info("background consultation goes on with no client waiting", "id", job.ID)
}

// WithOrphans is res (a result with a summary; any other as it is) also warning, once each,
// of every consultation of ctx's owner that went on after its client stopped waiting without
// asking for it to stop (a cancel without a reason, a client that quit): its id, its state,
// and how to collect or stop it.
func (e *Engine) WithOrphans(ctx context.Context, res consultation.Result) consultation.Result {
	orphans, err := e.store.Orphans()
	if err != nil || res.Summary == nil {
		return res
	}
	owner := OwnerFrom(ctx)
	var out []string
	for _, o := range orphans {
		if o.Owner != owner {
			continue
		}
		rec, err := e.store.Load(o.ID)
		if err != nil || rec.Owner != owner {
			e.store.TakeOrphan(o.ID) // its record is gone (expired): nothing to name
			continue
		}
		if !e.store.TakeOrphan(o.ID) {
			continue // another server named it
		}
		out = append(out, OrphanWarning(rec, e.State(e.settled(rec))))
	}
	return withWarnings(res, out)
}

// OrphanWarning is the warning naming an orphaned consultation rec in state.
func OrphanWarning(rec results.Record, state string) string {
	q := consult.Printable(shortQuery(rec.Query))
	if state == "running" {
		return fmt.Sprintf(`consultation %s (%q, started %s ago) went on in the background after its client stopped waiting, and is still running: collect it with consultation_result {"id": %q}, or stop it with consultation_cancel {"id": %q}`,
			rec.ID, q, consult.FormatDuration(time.Since(rec.Created).Truncate(time.Second)), rec.ID, rec.ID)
	}
	return fmt.Sprintf(`consultation %s (%q, started %s ago) went on in the background after its client stopped waiting, and is %s: collect its result with consultation_result {"id": %q}`,
		rec.ID, q, consult.FormatDuration(time.Since(rec.Created).Truncate(time.Second)), state, rec.ID)
}
