package consultation

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/results"
)

// A consultation with on_timeout "continue", when the server has a results directory and a
// Launcher, runs in a worker: a process of its own, detached from the server and its
// client, that writes its progress and its result into its record. The server's call (and
// any later consultation_result, from any server process) reads the record; signals sent to
// the server do not reach the worker, so the answer being paid for survives the client
// quitting or killing the server.

// WorkerJob is what a worker is told to do: the consultation and who started it.
type WorkerJob struct {
	// ID names the consultation and its record.
	ID string `json:"id"`
	// Owner, Session and Instance are who started it (see results.Record).
	Owner    string `json:"owner,omitempty"`
	Session  string `json:"session,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Created is when the call started: the background limit runs from it.
	Created time.Time `json:"created"`
	// Request is the validated consultation.
	Request request `json:"request"`
	// Limit is the background limit.
	Limit time.Duration `json:"limit"`
}

// Launcher starts a detached worker process for job (see RunWorker) and returns its pid
// once it has started.
type Launcher func(job WorkerJob) (pid int, err error)

// ErrTooManyWorkers refuses a continue-mode consultation when the background workers
// already running number the server's --background-workers.
var ErrTooManyWorkers = errors.New("too many background consultations running")

// Timing of workers.
const (
	// workerPoll is how often a call waiting for a worker reads its record: a small file,
	// and an answer should be returned soon after it lands.
	workerPoll = 100 * time.Millisecond
	// workerWriteMax bounds the interval between a worker's progress writes, so a caller
	// relays fresh progress even with a long heartbeat.
	workerWriteMax = 2 * time.Second
	// startingGrace is how long a record whose worker has not yet written its pid counts
	// as starting: a process starts in milliseconds.
	startingGrace = 10 * time.Second
	// stopWait bounds how long a cancel waits for a signalled worker to save what it had.
	stopWait = 3 * time.Second
)

// newInstance names this server process in the records it starts.
func newInstance() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// useWorkers reports whether continue-mode consultations run in worker processes.
func (j *Jobs) useWorkers() bool { return j.launch != nil && j.store != nil }

// workerAlive reports whether the process recorded as running rec is still the one that
// started it: a dead worker, or a live process that reuses its pid, is not. On Linux the
// pid's start time must match the recorded one; elsewhere (or when either is unknown) the
// worker's lock must be held, when it has a lock file.
func (j *Jobs) workerAlive(rec results.Record) bool {
	if rec.PID <= 0 {
		return rec.Status == results.Running && time.Since(rec.Updated) < startingGrace
	}
	if !processAlive(rec.PID) {
		return false
	}
	if start := processStart(rec.PID); start != 0 && rec.PIDStart != 0 {
		return start == rec.PIDStart
	}
	if _, err := os.Lstat(j.store.LockPath(rec.ID)); err != nil {
		return true // no lock file: a consultation run inside a server, known by its pid
	}
	return lockHeld(j.store.LockPath(rec.ID))
}

// liveWorkers counts the running records of the results directory whose process is alive:
// every server's workers, not only this one's. Two servers starting a worker at the same
// moment may both see room for one: the bound is approximate by that much.
func (j *Jobs) liveWorkers() int {
	recs, _ := j.store.List(0)
	n := 0
	for _, r := range recs {
		if r.Status == results.Running && j.workerAlive(r) {
			n++
		}
	}
	return n
}

// consultInWorker runs a continue-mode call in a worker process and waits for its record
// until the call's timeout: the answer if it lands first, else "still running" with the
// id. The first progress notification goes out at once and carries the id.
func (s *Service) consultInWorker(ctx context.Context, req request, start time.Time, r Reporter) Result {
	j := s.Jobs
	id := results.NewID(start)
	if n := j.liveWorkers(); n >= j.maxWorkers {
		return Failure(ClassOverloaded, fmt.Sprintf("%v: %d of at most %d (the server's --background-workers); wait for one to finish (consultation_result), cancel one (consultation_cancel), or call without on_timeout \"continue\".", ErrTooManyWorkers, n, j.maxWorkers))
	}
	rel := &relay{r: r, id: id}
	rel.send("starting a background worker")
	job := WorkerJob{ID: id, Owner: OwnerFrom(ctx), Session: SessionFrom(ctx), Instance: j.instance, Created: start, Request: req, Limit: j.limit}
	rec := jobRecord(job)
	rec.Note = "starting"
	if err := j.store.Save(rec); err != nil {
		return Failure(ClassInternal, fmt.Sprintf("Cannot start a background consultation: the results directory %s cannot be written (%v). Call again without on_timeout \"continue\".", j.store.Dir(), err))
	}
	pid, err := j.launch(job)
	if err != nil {
		rec.Status, rec.IsError, rec.Note = results.Done, true, ""
		rec.Text = fmt.Sprintf("Could not start the background worker: %v", err)
		_ = j.store.Save(rec)
		return Failure(ClassInternal, rec.Text)
	}
	j.logger.Info("background worker started", "id", id, "pid", pid)
	fg, cancel := withCallDeadline(ctx, start, req.Timeout)
	defer cancel()
	rec, done := j.follow(fg, id, pid, s.heartbeat(), budgetOf(fg).quietFrom(), rel)
	if done {
		return fromRecord(rec)
	}
	if ctx.Err() == nil {
		j.markDetached(id)
		return runningFromRecord(j, rec, fmt.Sprintf("timeout %s reached", consult.FormatDuration(req.Timeout)))
	}
	if !userStopped(ctx) {
		j.markDetached(id)
		return runningFromRecord(j, rec, "the client cancelled the call")
	}
	// The user stopped the call: stop the worker too, and keep what it had.
	return j.stopWorker(id, pid, ErrUserCancelled)
}

// relay sends a call's progress notifications, numbered from 1, each naming the id.
type relay struct {
	r  Reporter
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

// follow reads the record of id until it is done, its worker is gone, or ctx ends, relaying
// its progress every interval. pid is the worker as launched (0: unknown), for the moment
// before it has written its own record. It returns the last record read and whether it is
// final; a worker found dead has its record finished with what it had. Like a heartbeat it
// sends nothing from quietFrom on (zero: never quiet), the last moments before the caller's
// deadline.
func (j *Jobs) follow(ctx context.Context, id string, pid int, interval time.Duration, quietFrom time.Time, rel *relay) (results.Record, bool) {
	poll := time.NewTicker(workerPoll)
	defer poll.Stop()
	beat := time.NewTicker(interval)
	defer beat.Stop()
	var rec results.Record
	for {
		next, err := j.store.Load(id)
		if err == nil {
			rec = next
		}
		if rec.Status == results.Done {
			return rec, true
		}
		if rec.ID != "" && !j.running(rec, pid) {
			return j.finishDead(id), true
		}
		select {
		case <-ctx.Done():
			return rec, false
		case now := <-beat.C:
			if !quietFrom.IsZero() && !now.Before(quietFrom) {
				continue // a notification now could reach the client after the result
			}
			rel.send(progressLine(rec))
		case <-poll.C:
		}
	}
}

// running reports whether rec's consultation is still running: its worker alive, or, before
// the worker has written its own record, the process launched for it (pid).
func (j *Jobs) running(rec results.Record, pid int) bool {
	if rec.PID <= 0 && pid > 0 {
		return processAlive(pid)
	}
	return j.workerAlive(rec)
}

// finishDead finishes the record of a consultation whose worker is gone without saving a
// result: it becomes a failure that says so, with the progress and partial answer the
// worker last wrote. A result the worker saved in the meantime is kept.
func (j *Jobs) finishDead(id string) results.Record {
	rec, err := j.store.Load(id)
	if err != nil || rec.Status == results.Done {
		return rec
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Consultation %s stopped before finishing: the process running it (pid %d) ended without saving a result (it was killed or crashed, or the machine restarted).", id, rec.PID)
	if p := rec.Progress; p != nil {
		fmt.Fprintf(&b, " It had run %s, %s", consult.FormatDuration(time.Duration(p.ElapsedSeconds*float64(time.Second))), p.Phase)
		if p.Files > 0 {
			fmt.Fprintf(&b, "; %s %s, %s, %s prompt tokens", consult.Thousands(int64(p.Files)), plural(p.Files, "file", "files"), p.Bytes, p.PromptTokens)
		}
		if p.ReasoningTokens > 0 || p.AnswerTokens > 0 {
			fmt.Fprintf(&b, "; streamed %s reasoning, %s answer tokens", p.ReasoningTokens, p.AnswerTokens)
		}
		b.WriteString(".")
	}
	b.WriteString(" Run the consultation again.")
	if rec.Answer != "" {
		fmt.Fprintf(&b, "\n\nPartial answer (cut off when the worker stopped):\n%s", rec.Answer)
	}
	rec.Status, rec.IsError, rec.Text, rec.Note = results.Done, true, b.String(), "worker stopped before finishing"
	sum := &Summary{Kind: KindError, ID: id, Model: rec.Model, Answer: rec.Answer}
	if p := rec.Progress; p != nil {
		sum.Phase, sum.Files, sum.Bytes, sum.PromptTokens, sum.Attempts = p.Phase, p.Files, p.Bytes, p.PromptTokens, p.Attempts
		sum.ElapsedSeconds = p.ElapsedSeconds
	}
	rec.Summary, _ = json.Marshal(sum)
	if err := j.store.Save(rec); err != nil {
		j.logger.Warn("cannot finish the record of a stopped worker", "id", id, "error", err)
	}
	return rec
}

// stopWorker signals the worker of id (pid when its record has none yet) to stop, waits up
// to stopWait for it to save what it had, and returns that final state.
func (j *Jobs) stopWorker(id string, pid int, why error) Result {
	rec, err := j.store.Load(id)
	if err == nil && rec.Status == results.Done {
		return fromRecord(rec)
	}
	if err == nil && rec.PID > 0 {
		if !j.workerAlive(rec) {
			return fromRecord(j.finishDead(id))
		}
		pid = rec.PID
	}
	if pid > 0 {
		if err := stopProcess(pid, why); err != nil {
			j.logger.Warn("cannot signal a background worker", "id", id, "pid", pid, "error", err)
		}
	}
	j.logger.Info("background worker stopped", "id", id, "pid", pid, "why", why)
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	rec, done := j.follow(ctx, id, pid, time.Hour, time.Time{}, &relay{})
	if !done {
		return Result{Text: fmt.Sprintf("Cancellation of %s requested; its worker (pid %d) is stopping.", id, pid)}
	}
	return fromRecord(rec)
}

// progressLine is the progress message of a worker's record.
func progressLine(rec results.Record) string {
	if p := rec.Progress; p != nil && p.Message != "" {
		return p.Message
	}
	return fmt.Sprintf("starting, %s", consult.FormatDuration(time.Since(rec.Created).Truncate(time.Second)))
}

// jobRecord is the running record of a worker's job, before its progress.
func jobRecord(job WorkerJob) results.Record {
	return results.Record{
		ID: job.ID, Status: results.Running, Worker: true, Owner: job.Owner, Session: job.Session, Instance: job.Instance,
		Created: job.Created, Path: job.Request.Path, Pattern: job.Request.Pattern, Model: job.Request.Model.ID, Query: job.Request.Query,
	}
}

// phaseStarting is the phase of a background consultation whose worker has not reported yet.
const phaseStarting = "starting the background worker"

// runningFromRecord is "still running" for a consultation known from its record.
func runningFromRecord(j *Jobs, rec results.Record, why string) Result {
	// Until the worker reports (it starts, gathers and counts first), it is starting, with
	// nothing streamed: the fields are there all the same.
	sum := &Summary{Kind: KindRunning, ID: rec.ID, Model: rec.Model, ElapsedSeconds: time.Since(rec.Created).Round(time.Millisecond).Seconds(),
		Phase: phaseStarting, Streamed: &StreamedSummary{}}
	var sizes, streamed string
	if p := rec.Progress; p != nil {
		sum.Phase, sum.Attempts = cmp.Or(p.Phase, phaseStarting), p.Attempts
		if p.Files > 0 {
			sum.Files, sum.Bytes, sum.PromptTokens = p.Files, p.Bytes, p.PromptTokens
			sizes = fmt.Sprintf("; %s %s, %s, %s prompt tokens", consult.Thousands(int64(p.Files)), plural(p.Files, "file", "files"), p.Bytes, p.PromptTokens)
		}
		if p.ReasoningTokens > 0 || p.AnswerTokens > 0 {
			sum.Streamed = &StreamedSummary{Reasoning: p.ReasoningTokens, Answer: p.AnswerTokens}
			streamed = fmt.Sprintf("; streamed so far: %s reasoning, %s answer tokens", p.ReasoningTokens, p.AnswerTokens)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Still running in the background (%s): id %s.\n", why, rec.ID)
	fmt.Fprintf(&b, "So far: %s%s%s.\n", progressLine(rec), sizes, streamed)
	fmt.Fprintf(&b, `Collect it with consultation_result {"id": %q} (waits up to %s per call; set "wait" up to %g); stop it with consultation_cancel. `,
		rec.ID, consult.FormatDuration(consult.DefaultWait), consult.MaxWait.Seconds())
	fmt.Fprintf(&b, "It may run until %s (background limit %s) in a worker process of its own; its result is kept for %s, across server restarts.",
		rec.Created.Add(j.limit).UTC().Format("15:04:05 UTC"), consult.FormatDuration(j.limit), consult.FormatDuration(j.store.TTL()))
	return Result{Text: b.String(), Summary: sum}
}

// RunWorker is the body of a worker process: it runs job's consultation under the
// background limit, rewrites the job's record with its progress every heartbeat (at most
// every workerWriteMax), and saves the final result. ctx ending (the worker was signalled:
// cause ErrCancelledByTool for consultation_cancel, ErrUserCancelled when the user stopped
// the call) stops the consultation at once and saves what it had. The
// worker holds the lock of its record while it runs and removes the lock and its job file
// when done, leaving only its record.
func (s *Service) RunWorker(ctx context.Context, job WorkerJob) error {
	st := s.Jobs.Store()
	if st == nil {
		return errNoStore
	}
	_ = os.Remove(st.JobPath(job.ID))
	lock, err := holdLock(st.LockPath(job.ID))
	if err != nil {
		return fmt.Errorf("cannot lock the record of %s: %w", job.ID, err)
	}
	defer func() {
		_ = os.Remove(st.LockPath(job.ID))
		lock.Close()
	}()
	ctx, stop := withBackgroundLimit(ctx, job.Created, job.Limit)
	defer stop()
	c := &call{svc: s, req: job.Request, start: job.Created, id: job.ID}
	ctx = c.cancellable(ctx)
	defer c.cancel(nil)
	c.idle, c.interval = s.liveRules(job.Limit).rules()
	base := jobRecord(job)
	base.PID = os.Getpid()
	base.PIDStart = processStart(base.PID)
	save := func(rec results.Record) {
		if err := st.Save(rec); err != nil {
			s.logger().Error("cannot write the record", "id", job.ID, "error", err)
		}
	}
	progress := func() {
		rec := base
		rec.Progress, rec.Answer = c.progressRecord(time.Now())
		save(rec)
	}
	progress()
	var wg sync.WaitGroup
	halt := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(min(c.interval, workerWriteMax))
		defer t.Stop()
		for {
			select {
			case <-halt:
				return
			case <-t.C:
				progress()
			}
		}
	}()
	res := c.run(ctx)
	close(halt)
	wg.Wait()
	rec := base
	rec.Status, rec.Text, rec.IsError, rec.Answer = results.Done, res.Text, res.IsError, c.fullAnswer()
	if res.Summary != nil {
		rec.Summary, _ = json.Marshal(res.Summary)
	}
	if cause := context.Cause(ctx); ctx.Err() != nil && (errors.Is(cause, ErrCancelledByTool) || errors.Is(cause, ErrUserCancelled)) {
		rec.Note = "cancelled"
	}
	save(rec)
	s.logger().Info("background consultation finished", "id", job.ID, "error", res.IsError, "elapsed", time.Since(job.Created).Round(time.Millisecond))
	return nil
}

// progressRecord is the call's progress for its record, and the answer streamed so far.
func (c *call) progressRecord(now time.Time) (*results.Progress, string) {
	p := &results.Progress{
		Phase: string(c.currentPhase()), Message: c.progressMessage(now),
		ElapsedSeconds: now.Sub(c.start).Round(time.Millisecond).Seconds(), Attempts: int(c.attempts.Load()),
	}
	if rep := c.sized.Load(); rep != nil {
		p.Files, p.Bytes, p.PromptTokens = rep.Files, rep.Bytes, rep.PromptTokens
	}
	var answer string
	if live := c.liveStream(); live != nil {
		answer, p.ReasoningTokens, _ = live.snapshot()
		p.AnswerTokens = c.svc.Counter.CountString(answer)
	}
	return p, answer
}

// Lookup returns the saved record of id for a person reading the results directory (consult
// results): every owner's, since the directory is theirs. A running record whose process
// is gone is first finished as stopped before finishing.
func (j *Jobs) Lookup(id string) (results.Record, error) {
	if j.store == nil {
		return results.Record{}, errNoStore
	}
	rec, err := j.store.Load(id)
	if err != nil {
		return rec, err
	}
	if rec.Status == results.Running && !j.workerAlive(rec) {
		rec = j.finishDead(id)
	}
	return rec, nil
}

// State names a record's state for a listing: "running", "finished", "failed", or
// "stopped before finishing" for a running record whose process is gone.
func (j *Jobs) State(rec results.Record) string {
	switch {
	case rec.Status == results.Done:
		return statusOf(rec.IsError)
	case j.workerAlive(rec):
		return "running"
	default:
		return "stopped before finishing"
	}
}

// Describe is what a record says to a person: the result's text once done, the progress
// while running.
func (j *Jobs) Describe(rec results.Record) string {
	if rec.Status == results.Done {
		return rec.Text
	}
	return runningFromRecord(j, rec, "not finished").Text
}

// Stop stops the worker running id, whoever started it, and returns its final state.
func (j *Jobs) Stop(id string) (string, error) {
	rec, err := j.Lookup(id)
	switch {
	case err != nil:
		return "", err
	case rec.Status == results.Done:
		return fmt.Sprintf("Consultation %s had already finished; nothing was cancelled.", id), nil
	case !rec.Worker:
		return "", fmt.Errorf("consultation %s runs inside a consult server (pid %d), not a worker: cancel it through that server's client", id, rec.PID)
	}
	return fmt.Sprintf("Cancelled consultation %s. Its final state:\n\n%s", id, j.stopWorker(id, rec.PID, ErrCancelledByTool).Text), nil
}

// WatchFinished calls notify, until ctx ends, for each consultation this server process
// started in a worker that finishes (or is found stopped) after its call returned "still
// running": the server tells the session that started it that the answer is ready. It reads
// those consultations' records every `every`; answers returned in band are not announced.
func (j *Jobs) WatchFinished(ctx context.Context, every time.Duration, notify func(results.Record)) {
	if !j.useWorkers() {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, id := range j.toAnnounce() {
			rec, err := j.store.Load(id)
			switch {
			case err != nil:
				j.announced(id) // gone: nothing to announce
				continue
			case rec.Status == results.Running && !j.workerAlive(rec):
				rec = j.finishDead(id)
			}
			if rec.Status == results.Done {
				j.announced(id)
				notify(rec)
			}
		}
	}
}

// markDetached notes that the call of worker id returned without its answer, so its end is
// to be announced.
func (j *Jobs) markDetached(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.announce == nil {
		j.announce = map[string]bool{}
	}
	j.announce[id] = true
}

// toAnnounce lists the workers whose end is to be announced.
func (j *Jobs) toAnnounce() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	ids := make([]string, 0, len(j.announce))
	for id := range j.announce {
		ids = append(ids, id)
	}
	return ids
}

// announced forgets a worker whose end was announced.
func (j *Jobs) announced(id string) {
	j.mu.Lock()
	delete(j.announce, id)
	j.mu.Unlock()
}

// ReadyNotice is the message announcing that a consultation's result is ready.
func ReadyNotice(rec results.Record) string {
	what := "answer"
	if rec.IsError {
		what = "result (it failed or was stopped)"
	}
	return fmt.Sprintf("Consultation %s is ready: collect its %s with consultation_result {\"id\": %q}.", rec.ID, what, rec.ID)
}
