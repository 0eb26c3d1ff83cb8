// Package background runs consultations that go on past their call (on_timeout "continue"):
// one engine, a record plus a runner. Each such consultation runs in a worker (a process of
// its own in the binary, detached from the server and its client) that writes its progress
// and its result into its record in the results directory; collecting, cancelling, listing
// and peeking read the record. The engine imports the one-call core (package consultation),
// which knows nothing of it.
//
// What lives in the results directory for a consultation id:
//
//   - id.json, its record (package results);
//   - .id.lock, locked by the worker for as long as it runs: a running record whose lock
//     nobody holds is a worker that died;
//   - .id.cancel, written by a cancel: the worker stops when it sees it, even one that has
//     not started yet, so a cancel is never lost;
//   - .id.log, the worker's log while it runs;
//   - .slot-N.lock, one per worker allowed at once (--background-workers), each held by a
//     running worker: the bound holds across every server sharing the directory.
package background

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
)

// Timing of workers.
const (
	// poll is how often a call waiting for a worker it did not start reads its record: a
	// small file, and an answer should be returned soon after it lands.
	poll = 100 * time.Millisecond
	// cancelPoll is how often a worker looks for a cancel marker it was not told of (a
	// cancel is told with a signal, see wake_unix.go; this catches one whose signal could
	// not be sent, as before the worker's record named its process).
	cancelPoll = 2 * time.Second
	// writeMax bounds the interval between a worker's progress writes, so a caller relays
	// fresh progress even with a long heartbeat.
	writeMax = 2 * time.Second
	// stopWait bounds how long a cancel waits for the worker to save what it had.
	stopWait = 5 * time.Second
	// deadAfter is how long past its background limit a running record counts as running on
	// a system where the worker's lock cannot be probed.
	deadAfter = time.Minute
)

// Job is one background consultation as its worker receives it.
type Job struct {
	// ID names the consultation and its record.
	ID string `json:"id"`
	// Owner, Session and Instance are who started it (see results.Record).
	Owner    string `json:"owner,omitempty"`
	Session  string `json:"session,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Created is when the call started: the background limit runs from it.
	Created time.Time `json:"created"`
	// Request is the consultation as the caller asked for it; the worker validates it again.
	Request consultation.Request `json:"request"`
}

// A Runner starts the worker of job: in the binary, a process of its own, detached from the
// server; in tests, a goroutine running Work. The worker keeps held open while it runs (its
// record's lock and its worker slot) and writes its final result to out. The runner owns
// held and out from the call on, whether it fails or not: it closes the server's copies once
// the worker has its own.
type Runner func(job Job, held []*os.File, out *os.File) error

// Config configures an Engine.
type Config struct {
	// Service validates consultations before a worker is started, with the rules the worker
	// applies again.
	Service *consultation.Service
	// Store is the results directory: required.
	Store *results.Store
	// Run starts workers; nil runs each as a goroutine of this process (Work), which ends
	// with it: for tests, and for a process that cannot start itself again.
	Run Runner
	// Limit is how long a consultation may run in all (consult.DefaultBackgroundLimit if 0).
	Limit time.Duration
	// MaxWorkers bounds the workers running at once over every server sharing Store
	// (consult.DefaultBackgroundWorkers if 0).
	MaxWorkers int
	// Heartbeat is the interval of the progress relayed while a call waits on a worker
	// (consult.DefaultHeartbeat if 0).
	Heartbeat time.Duration
	// Logger receives a line per background event; nil discards.
	Logger *slog.Logger
}

// Engine runs and keeps background consultations. Create it with New; one per process.
type Engine struct {
	svc        *consultation.Service
	store      *results.Store
	run        Runner
	limit      time.Duration
	maxWorkers int
	heartbeat  time.Duration
	logger     *slog.Logger
	instance   string // this server process, in the records it starts
	cancelPoll time.Duration

	announce sync.Map // ids of the consultations whose call returned "still running": their end is announced

	inProcess sync.WaitGroup // workers run as goroutines (Run nil)
}

// New returns an engine for cfg.
func New(cfg Config) *Engine {
	e := &Engine{svc: cfg.Service, store: cfg.Store, run: cfg.Run, limit: cfg.Limit, maxWorkers: cfg.MaxWorkers,
		heartbeat: cfg.Heartbeat, logger: cfg.Logger, cancelPoll: cancelPoll,
		instance: strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(os.Getpid())}
	if e.limit <= 0 {
		e.limit = consult.DefaultBackgroundLimit
	}
	if e.maxWorkers <= 0 {
		e.maxWorkers = consult.DefaultBackgroundWorkers
	}
	if e.heartbeat <= 0 {
		e.heartbeat = consult.DefaultHeartbeat
	}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	if e.run == nil {
		e.run = e.runInProcess
	}
	return e
}

// runInProcess is the Runner of an engine configured without one.
func (e *Engine) runInProcess(job Job, held []*os.File, out *os.File) error {
	e.inProcess.Go(func() {
		if err := e.Work(context.Background(), job, held, out); err != nil {
			e.logger.Error("background worker failed", "id", job.ID, "error", err)
		}
	})
	return nil
}

// Wait waits for the workers this engine runs in its own process (Config.Run nil).
func (e *Engine) Wait() { e.inProcess.Wait() }

// Store is the results directory.
func (e *Engine) Store() *results.Store { return e.store }

// slot takes a free worker slot, or returns nil when all are held.
func (e *Engine) slot() (*results.Lock, error) {
	for n := range e.maxWorkers {
		l, ok, err := e.store.TrySlot(n)
		if err != nil || ok {
			return l, err
		}
	}
	return nil, nil
}

// Start runs a continue-mode call: it validates in, starts a worker that runs the
// consultation under the background limit, and waits for it until the call's timeout: the
// result if it lands first, else "still running" with the id and where the worker is. The
// first progress notification goes out at once and carries the id. A client that stops
// waiting stops the worker only when its user explicitly aborted the call
// (consultation.ErrUserCancelled); a client's own timeout, a cancel without a reason, or the
// client quitting leave it running, to be collected later, and the next result the same
// owner gets names it (Orphans).
func (e *Engine) Start(ctx context.Context, in consultation.Request, r consultation.Reporter) consultation.Result {
	w, fail := e.launch(ctx, in, r)
	if fail != nil {
		return *fail
	}
	defer w.stop()
	fg, cancel := context.WithDeadline(ctx, w.start.Add(w.timeout))
	defer cancel()
	res, end, _ := e.follow(fg, w.job.ID, w.start.Add(w.timeout-quiet), w.relay, w.events, false)
	switch {
	case end == followDone:
		return withWarnings(res, w.warnings)
	case ctx.Err() != nil && userAborted(ctx):
		// The user stopped the call: stop the worker too, and keep what it had.
		return e.stop(w.job.ID, causeUser)
	}
	return withWarnings(e.goesOn(ctx, w), w.warnings)
}

// goesOn is "still running" for worker w whose call stops waiting: at its timeout, or because
// its client stopped waiting without saying the user wanted it stopped. The end of the
// latter is not announced to the session (it is gone); the owner's next result names it.
func (e *Engine) goesOn(ctx context.Context, w *worker) consultation.Result {
	why := fmt.Sprintf("timeout %s reached", consult.FormatDuration(w.timeout))
	if ctx.Err() != nil {
		why = "the client stopped waiting"
		e.orphaned(w.job)
	} else {
		e.announce.Store(w.job.ID, true)
	}
	next, _ := e.store.Load(w.job.ID)
	if next.ID == "" {
		next = w.rec
	}
	return e.running(next, why)
}

// worker is a background consultation's worker as the call that started it sees it.
type worker struct {
	job      Job
	rec      results.Record // its first record
	start    time.Time      // when the call arrived
	timeout  time.Duration  // the call's timeout
	warnings []string       // the call's warnings
	relay    *relay
	events   <-chan workerEvent // what the worker tells; closed when it ends
	stop     func()             // stops listening to the worker (which goes on)
}

// launch validates in and starts its worker, telling r (the first progress notification,
// at once, carries the id); the failure to return instead when it cannot.
func (e *Engine) launch(ctx context.Context, in consultation.Request, r consultation.Reporter) (*worker, *consultation.Result) {
	start := consultation.Arrival(ctx)
	fail := func(res consultation.Result) (*worker, *consultation.Result) { return nil, &res }
	warnings, err := e.svc.Validate(in)
	if err != nil {
		return fail(consultation.FailureOf(err))
	}
	if _, _, res := e.prepare(OwnerFrom(ctx), in); res != nil {
		return nil, res
	}
	if ctx.Err() != nil {
		return fail(consultation.Failure(consultation.ClassCancelled, "Cancelled by the client before the consultation started; nothing was read or sent."))
	}
	timeout := cmp.Or(in.Timeout, e.svc.TimeoutRule().Default)
	job := e.job(ctx, in, start)
	id := job.ID
	for _, w := range warnings {
		if r != nil {
			r.Log(consultation.LevelWarning, w)
		}
	}
	slot, err := e.slot()
	switch {
	case err != nil:
		return fail(consultation.Failure(consultation.ClassInternal, fmt.Sprintf("Cannot start a background consultation: the results directory %s cannot be used (%v). Call again without on_timeout \"continue\".", e.store.Dir(), err)))
	case slot == nil:
		return fail(consultation.Failure(consultation.ClassOverloaded, fmt.Sprintf("Too many background consultations are running: %d, the most the server allows (--background-workers). Wait for one to finish (consultation_result), cancel one (consultation_cancel), or call without on_timeout \"continue\".", e.maxWorkers)))
	}
	lock, ok, err := e.store.TryLock(id)
	if err == nil && !ok {
		err = errors.New("its lock is held")
	}
	if err != nil {
		slot.Close()
		return fail(consultation.Failure(consultation.ClassInternal, fmt.Sprintf("Cannot start a background consultation: %v", err)))
	}
	rec := jobRecord(job)
	rec.Note = "starting"
	if err := e.store.Save(rec); err != nil {
		lock.Close()
		slot.Close()
		_ = e.store.RemoveLock(id)
		return fail(e.notStarted(err))
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		lock.Close()
		slot.Close()
	} else if err = e.run(job, []*os.File{lock.File(), slot.File()}, pw); err != nil {
		pr.Close()
	}
	if err != nil {
		res := consultation.Failure(consultation.ClassInternal, fmt.Sprintf("Could not start the background worker: %v", err))
		rec.Note = ""
		if rec, err := doneRecord(rec, res, nil); err == nil {
			_ = e.store.Save(rec)
		}
		return fail(res)
	}
	e.logger.Info("background worker started", "id", id)
	events, done := make(chan workerEvent, 8), make(chan struct{})
	go listen(pr, events, done)
	w := &worker{job: job, rec: rec, start: start, timeout: timeout, warnings: warnings, relay: &relay{r: r, id: id}, events: events,
		stop: sync.OnceFunc(func() { close(done); pr.Close() })}
	w.relay.send("starting a background worker")
	return w, nil
}

// quiet is how long before a wait ends no progress is relayed: a notification sent just
// before the result can reach the client after it.
const quiet = 500 * time.Millisecond

// withWarnings adds a call's warnings to its result.
func withWarnings(res consultation.Result, warnings []string) consultation.Result {
	if res.Summary != nil && len(warnings) > 0 {
		sum := *res.Summary
		sum.Warnings = append(slices.Clip(sum.Warnings), warnings...)
		res.Summary = &sum
	}
	return res
}

// listen reads what a worker tells on its pipe r and passes it on to events until the
// worker ends (events is then closed) or done is closed (its call stopped listening).
func listen(r io.Reader, events chan<- workerEvent, done <-chan struct{}) {
	defer close(events) // the worker has ended: there is nothing more to wait for
	dec := json.NewDecoder(io.LimitReader(r, maxInBand))
	for {
		var ev workerEvent
		if err := dec.Decode(&ev); err != nil {
			return
		}
		select {
		case events <- ev:
		case <-done:
			return
		}
	}
}

// maxInBand bounds what is read from a worker's pipe: its result (the answer cap and room
// for the rest) and its states, a few hundred bytes each.
const maxInBand = 96 << 20

// userAborted reports whether ctx ended because the client's user explicitly stopped the
// call. A client's own timeout, a cancel with no reason (an HTTP stream closed, a client
// quitting) are not: a consultation that may continue goes on.
func userAborted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), consultation.ErrUserCancelled)
}

// relay sends a call's progress notifications, numbered from 1, each naming the id.
type relay struct {
	r  consultation.Reporter
	id string
	n  int
}

func (rl *relay) send(msg string) {
	if rl.r == nil {
		return
	}
	rl.n++
	if tail := ", id " + rl.id; len(msg)+len(tail) <= consult.MaxProgressMessage {
		msg += tail
	}
	rl.r.Progress(float64(rl.n), msg)
}

// How a follow ended.
type followEnd int

const (
	followDone     followEnd = iota // the consultation is done: its result is returned
	followStopped                   // ctx ended first
	followLaunched                  // its first model request went out (untilLaunch)
)

// follow waits for consultation id until it is done, its worker is gone, or ctx ends (with
// untilLaunch, also until its first model request goes out), relaying its progress every
// heartbeat (none from quietFrom on; zero: never quiet). With events (the worker's pipe,
// from the call that started it) the worker tells its state and its result; without, its
// record is read every poll, and whether it is done. It also returns the worker's latest
// state as it told it (nil when it told none).
func (e *Engine) follow(ctx context.Context, id string, quietFrom time.Time, rel *relay, events <-chan workerEvent, untilLaunch bool) (consultation.Result, followEnd, *consultation.State) {
	var tick <-chan time.Time
	if events == nil {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	beat := time.NewTicker(e.heartbeat)
	defer beat.Stop()
	var rec results.Record
	var latest *consultation.State // the worker's latest state, from its pipe
	if events != nil {
		rec, _ = e.store.Load(id) // for its start, until the worker tells
	}
	for {
		if events == nil {
			if next, err := e.store.Load(id); err == nil {
				rec = next
			}
			if rec.ID != "" && !e.alive(rec) { // done, or its worker is gone
				return e.fromRecord(e.settled(rec)), followDone, latest
			}
		}
		select {
		case <-ctx.Done():
			return consultation.Result{}, followStopped, latest
		case ev, ok := <-events:
			switch {
			case !ok: // the worker ended without telling its result: its record says how
				if rec, err := e.store.Load(id); err == nil {
					return e.fromRecord(e.settled(rec)), followDone, latest
				}
				return e.fromRecord(e.finishDead(id)), followDone, latest
			case ev.Result != nil:
				return *ev.Result, followDone, latest
			case ev.State != nil:
				latest = ev.State
				if ev.Launched && untilLaunch {
					return consultation.Result{}, followLaunched, latest
				}
			}
		case now := <-beat.C:
			if !quietFrom.IsZero() && !now.Before(quietFrom) {
				continue
			}
			if latest != nil && latest.Message != "" {
				rel.send(latest.Message)
			} else {
				rel.send(progressLine(rec))
			}
		case <-tick:
		}
	}
}

// alive reports whether rec's worker still runs: its lock is held, and, where locks cannot
// be probed, its background limit has not long passed.
func (e *Engine) alive(rec results.Record) bool {
	if rec.Status != results.Running {
		return false
	}
	return e.store.LockHeld(rec.ID) && time.Since(rec.Created) < e.limit+deadAfter
}

// settled is rec, finished first as stopped before finishing (finishDead) when it is
// running and its worker is gone.
func (e *Engine) settled(rec results.Record) results.Record {
	if rec.Status == results.Running && !e.alive(rec) {
		return e.finishDead(rec.ID)
	}
	return rec
}

// view is what a record says: its result once done, "still running" (because of why) with
// its progress while it runs.
func (e *Engine) view(rec results.Record, why string) consultation.Result {
	if rec.Status == results.Done {
		return e.fromRecord(rec)
	}
	return e.running(rec, why)
}

// fromRecord is the result a saved consultation returns.
func (e *Engine) fromRecord(rec results.Record) consultation.Result {
	res := consultation.Result{IsError: rec.IsError, Answer: rec.Answer, Digests: rec.Digests}
	var f consultation.Facts
	if len(rec.Facts) > 0 && json.Unmarshal(rec.Facts, &f) == nil {
		res.Facts = &f
	}
	var sum consultation.Summary
	if err := json.Unmarshal(rec.Summary, &sum); err != nil { // none, or unreadable: made from the record's fields
		sum = consultation.Summary{Kind: consultation.KindAnswer, Model: rec.Model, Answer: rec.Answer}
		if rec.IsError {
			sum.Kind = consultation.KindError
		}
	}
	sum.ID = rec.ID
	res.Summary = &sum
	return res
}

// doneRecord is base finished with res, as data, and a follow-up's thread.
func doneRecord(base results.Record, res consultation.Result, th *thread) (rec results.Record, err error) {
	rec = base
	rec.Status, rec.IsError, rec.Answer, rec.Digests, rec.Facts = results.Done, res.IsError, res.Answer, res.Digests, nil
	if th != nil {
		rec.Thread = th.turns
	}
	if rec.Summary, err = json.Marshal(res.Summary); err == nil && res.Facts != nil {
		rec.Facts, err = json.Marshal(res.Facts)
	}
	return rec, err
}

// finishDead finishes the record of a consultation whose worker is gone without saving a
// result: it becomes a failure that says so, with the progress and partial answer the worker
// last wrote. A result the worker saved in the meantime is kept.
func (e *Engine) finishDead(id string) results.Record {
	rec, err := e.store.Load(id)
	if err != nil || rec.Status == results.Done {
		return rec
	}
	sum := &consultation.Summary{Kind: consultation.KindError, ID: id, Model: rec.Model, Answer: rec.Answer,
		Error: &consultation.ErrorInfo{Class: consultation.ClassInternal, Message: "the worker ended without saving a result"}}
	text := fmt.Sprintf("Consultation %s stopped before finishing: the process running it ended without saving a result (it was killed or crashed, the machine restarted, or its record could not be written).", id)
	if p := rec.Progress; p != nil {
		sum.Phase, sum.Files, sum.Bytes, sum.PromptTokens, sum.Attempts = p.Phase, p.Files, p.Bytes, p.PromptTokens, p.Attempts
		sum.ElapsedSeconds = p.ElapsedSeconds
		text += fmt.Sprintf(" It had run %s, %s%s.", consult.FormatDuration(time.Duration(p.ElapsedSeconds*float64(time.Second))), p.Phase, sizes(p))
	}
	res := consultation.Said(sum, text+" Run the consultation again.")
	res.IsError, res.Answer, res.Digests = true, rec.Answer, rec.Digests
	res.Facts.PartialWhy = "cut off when the worker stopped"
	rec.Note = "stopped before finishing"
	rec, err = doneRecord(rec, res, nil)
	if err != nil {
		return rec
	}
	if err := e.store.Save(rec); err != nil {
		e.logger.Warn("cannot finish the record of a stopped worker", "id", id, "error", err)
	}
	return rec
}

// sizes is what a worker had gathered by its progress p, as a clause: "" before it had.
func sizes(p *results.Progress) string {
	if p.Files == 0 {
		return ""
	}
	files := consult.Thousands(int64(p.Files)) + " files"
	if p.Files == 1 {
		files = "1 file"
	}
	return fmt.Sprintf("; %s, %s, %s prompt tokens", files, p.Bytes, p.PromptTokens)
}

// progressLine is the progress message of a record.
func progressLine(rec results.Record) string {
	if p := rec.Progress; p != nil && p.Message != "" {
		return p.Message
	}
	return fmt.Sprintf("starting, %s", consult.FormatDuration(time.Since(rec.Created).Truncate(time.Second)))
}

// job is the consultation in, asked by ctx's caller at created, under a new id.
func (e *Engine) job(ctx context.Context, in consultation.Request, created time.Time) Job {
	return Job{ID: results.NewID(created), Owner: OwnerFrom(ctx), Session: SessionFrom(ctx), Instance: e.instance, Created: created, Request: in}
}

// jobRecord is the running record of a job, before its progress.
func jobRecord(job Job) results.Record {
	return results.Record{
		ID: job.ID, Status: results.Running, Worker: true, Owner: job.Owner, Session: job.Session, Instance: job.Instance,
		Created: job.Created, Path: job.Request.Path, Pattern: job.Request.Pattern, Model: job.Request.Model, Query: job.Request.Query,
		Exclude: job.Request.Exclude, Question: job.Request.Query,
	}
}

// phaseStarting is the phase of a consultation whose worker has not reported yet.
const phaseStarting = "starting the background worker"

// running is "still running" for a consultation known from its record: where its worker is,
// and the next step as data.
func (e *Engine) running(rec results.Record, why string) consultation.Result {
	sum := &consultation.Summary{Kind: consultation.KindRunning, ID: rec.ID, Model: rec.Model,
		ElapsedSeconds: time.Since(rec.Created).Round(time.Millisecond).Seconds(), Phase: phaseStarting,
		Streamed: &consultation.StreamedSummary{}}
	var gathered, streamed string
	if p := rec.Progress; p != nil {
		sum.Phase = cmp.Or(p.Phase, sum.Phase)
		sum.Attempts = p.Attempts
		if gathered = sizes(p); gathered != "" {
			sum.Files, sum.Bytes, sum.PromptTokens = p.Files, p.Bytes, p.PromptTokens
		}
		if p.ReasoningTokens > 0 || p.AnswerTokens > 0 {
			sum.Streamed = &consultation.StreamedSummary{Reasoning: p.ReasoningTokens, Answer: p.AnswerTokens}
			streamed = fmt.Sprintf("; streamed so far: %s reasoning, %s answer tokens", p.ReasoningTokens, p.AnswerTokens)
		}
		switch p.Cost {
		case "":
		case consultation.PriceUnknown:
			streamed += "; " + p.Cost
		default:
			streamed += "; price " + p.Cost // "expected $…, at most $…"
		}
	}
	until := rec.Created.Add(e.limit).UTC()
	sum.Next = &consultation.NextStep{
		Tool: "consultation_result", Arguments: map[string]any{"id": rec.ID},
		MaxWaitSeconds: consult.MaxWait.Seconds(), RunsUntil: until, KeptSeconds: e.store.TTL().Seconds(),
		Cancel: "consultation_cancel",
	}
	text := fmt.Sprintf("Still running in the background (%s): id %s.\n", why, rec.ID)
	text += fmt.Sprintf("So far: %s%s%s.\n", progressLine(rec), gathered, streamed)
	text += fmt.Sprintf(`Collect it with consultation_result {"id": %q} (waits up to %s per call; set "wait" up to %g); stop it with consultation_cancel. `,
		rec.ID, consult.FormatDuration(consult.DefaultWait), consult.MaxWait.Seconds())
	text += fmt.Sprintf("It may run until %s (background limit %s) in a worker process of its own; its result is kept for %s, across server restarts.",
		until.Format("15:04:05 UTC"), consult.FormatDuration(e.limit), consult.FormatDuration(e.store.TTL()))
	return consultation.Said(sum, text)
}
