package background

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
)

// Arguments of consultation_result and consultation_cancel.
const (
	ArgID   = "id"
	ArgWait = "wait"
)

// ResultArgs are consultation_result's arguments: its input schema and the decoding of a
// call (tooldefs), as consultation.Request is the consultation tool's.
type ResultArgs struct {
	// ID is the consultation to collect; "" lists them.
	ID string `json:"id,omitempty" desc:"The id from the \"still running\" result."`
	// Wait is how long to wait for the answer (WaitRule); 0 is the default.
	Wait time.Duration `json:"wait,omitempty" desc:"Seconds to wait for the answer"`
	// Offset is where the page of a long answer to return starts; nil when not asked for.
	Offset *int `json:"offset,omitempty" desc:"With id: where the next page of a long answer starts (from next)."`
}

// ResultArgRules are the rules of ResultArgs' number arguments, for decoding a call.
var ResultArgRules = []consultation.NumberRule{WaitRule().Number(), offsetRule}

// CancelArgs are consultation_cancel's arguments.
type CancelArgs struct {
	// ID is the consultation to stop.
	ID string `json:"id" desc:"The id from the \"still running\" result." want:"the id a consultation returned with \"still running\""`
}

// WaitRule is the rule for consultation_result's wait.
func WaitRule() consultation.SecondsRule {
	return consultation.SecondsRule{Arg: ArgWait, Min: consult.MinWait, Max: consult.MaxWait, Default: consult.DefaultWait}
}

// listMax is how many consultations a listing shows: the recent ones are the ones asked for.
const listMax = 20

// checkID refuses an id that is not of the form consultations get.
func checkID(id string) error {
	if _, err := results.ParseID(id); err != nil {
		return &consult.ArgError{Arg: ArgID, Value: consultation.Shown(id), Rule: "is not a consultation id", Fix: fmt.Sprintf(`ids look like %q and come from a consultation that returned "still running"; call consultation_result without id to list them`, results.IDExample)}
	}
	return nil
}

// Collect is consultation_result: it waits up to wait (zero: the default) for the
// consultation with the given id and returns its result, or "still running" with its
// progress. Without an id it lists the caller's consultations. Waiting never affects the
// consultation: a cancelled wait leaves it running. Only the consultations of the caller's
// owner (OwnerFrom ctx) are listed or collected: another owner's id is answered as an
// unknown one.
func (e *Engine) Collect(ctx context.Context, id string, wait time.Duration, r consultation.Reporter) consultation.Result {
	if id != "" {
		if err := checkID(id); err != nil {
			return consultation.FailureOf(err)
		}
	}
	rule := WaitRule()
	if wait == 0 {
		wait = rule.Default
	} else if err := rule.Check(wait); err != nil {
		return consultation.FailureOf(err)
	}
	var warnings []string
	if wait >= consult.TimeoutWarnAt {
		warnings = append(warnings, consultation.LongWaitWarning(ArgWait, wait, "call again with a shorter wait: the consultation goes on meanwhile"))
	}
	var res consultation.Result
	if id == "" {
		res = e.list(OwnerFrom(ctx), SessionFrom(ctx))
	} else {
		res = e.collect(ctx, id, OwnerFrom(ctx), wait, r)
	}
	e.logger.Info("consultation_result", "id", id, "wait", wait, "error", res.IsError)
	return withWarnings(res, warnings)
}

func (e *Engine) collect(ctx context.Context, id, owner string, wait time.Duration, r consultation.Reporter) consultation.Result {
	rec, failed := e.load(id, owner)
	if failed != nil {
		return *failed
	}
	end := time.Now().Add(wait)
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	res, how, _ := e.follow(wctx, id, end.Add(-quiet), &relay{r: r, id: id}, nil, false)
	switch {
	case how == followDone:
		return res
	case ctx.Err() != nil:
		return consultation.Failure(consultation.ClassCancelled, fmt.Sprintf("Stopped waiting for %s because the call was cancelled; the consultation goes on.", id))
	}
	next, err := e.store.Load(id)
	if err != nil {
		next = rec
	}
	return e.running(next, fmt.Sprintf("not finished within wait %s", consult.FormatDuration(wait)))
}

// load reads the record of id for owner; when there is none to use it returns the result
// that says why: unknown, expired, unreadable. Another owner's record is unknown.
func (e *Engine) load(id, owner string) (results.Record, *consultation.Result) {
	rec, err := e.store.Load(id)
	return e.judge(id, owner, rec, err)
}

// judge is load's verdict on what the store returned for id (Load, or LoadPart): the record
// when owner may use it, else the result that says why not.
func (e *Engine) judge(id, owner string, rec results.Record, err error) (results.Record, *consultation.Result) {
	var res consultation.Result
	switch {
	case (err == nil || errors.Is(err, results.ErrExpired)) && rec.Owner != owner:
		res = e.notFound(id)
	case err == nil:
		return rec, nil
	case errors.Is(err, results.ErrExpired):
		res = e.expired(id)
	case errors.Is(err, results.ErrNotFound):
		res = e.notFound(id)
	default:
		res = consultation.Failure(consultation.ClassInternal, fmt.Sprintf("Cannot read consultation %s from %s: %v", id, e.store.Dir(), err))
	}
	return results.Record{}, &res
}

// notStarted is the failure of a background consultation whose record could not be
// written: the directory is full of results kept for their owners (results.ErrFull), or
// cannot be written.
func (e *Engine) notStarted(err error) consultation.Result {
	if errors.Is(err, results.ErrFull) {
		return consultation.Failure(consultation.ClassOverloaded, fmt.Sprintf("Cannot start a background consultation: %v. Nothing was sent. Collect finished consultations (consultation_result), wait for results to expire (kept %s), or call again without on_timeout \"continue\".", err, consult.FormatDuration(e.store.TTL())))
	}
	return consultation.Failure(consultation.ClassInternal, fmt.Sprintf("Cannot start a background consultation: its record cannot be written in the results directory %s (%v). Free some space there, or call again without on_timeout \"continue\".", e.store.Dir(), err))
}

// delivered notes that res, a consultation's final result, was returned to its owner
// whole: its record may now make room for others' (results.Store.MarkCollected). Results
// that are not final (running, a list) are not.
func (e *Engine) delivered(res consultation.Result) {
	sum := res.Summary
	if sum == nil || sum.ID == "" || sum.Kind != consultation.KindAnswer && sum.Kind != consultation.KindError {
		return
	}
	if err := e.store.MarkCollected(sum.ID); err != nil {
		e.logger.Warn("cannot mark a result collected; it is kept until it expires", "id", sum.ID, "error", err)
	}
}

// notFound explains an id the results directory does not hold: expired when it is older than
// any result is kept, unknown otherwise.
func (e *Engine) notFound(id string) consultation.Result {
	if created, err := results.ParseID(id); err == nil && time.Since(created) > e.limit+e.store.TTL() {
		return e.expired(id)
	}
	return consultation.Failure(consultation.ClassNotFound, fmt.Sprintf("Unknown id: no consultation %s is saved in %s. Ids come from a consultation that returned \"still running\"; call consultation_result without id to list the known ones. (A result already returned whole may be removed before it expires when the directory is full.)", id, e.store.Dir()))
}

func (e *Engine) expired(id string) consultation.Result {
	return consultation.Failure(consultation.ClassNotFound, fmt.Sprintf("The result of consultation %s has expired: results are kept for %s after they finish. Run the consultation again.", id, consult.FormatDuration(e.store.TTL())))
}

// State names a record's state: "running", "finished", "failed", "cancelled", or "stopped
// before finishing" for a running record whose worker is gone.
func (e *Engine) State(rec results.Record) string {
	switch {
	case rec.Status != results.Done && e.alive(rec):
		return "running"
	case rec.Status != results.Done:
		return "stopped before finishing"
	case rec.Note == "cancelled", rec.Note == "stopped before finishing":
		return rec.Note
	case rec.IsError:
		return "failed"
	}
	return "finished"
}

// list is consultation_result without an id: owner's consultations. The calling session's
// own come first, newest first, then the others (started by another session of the same
// owner, or before a restart), marked as such: an agent that takes the first entry takes one
// of its own.
func (e *Engine) list(owner, session string) consultation.Result {
	recs, listErr := e.store.List(0)
	var entries []consultation.ListEntry
	for _, rec := range recs {
		if rec.Owner == owner {
			entries = append(entries, consultation.ListEntry{ID: rec.ID, Status: e.State(rec), Created: rec.Created,
				Query: shortQuery(rec.Query), OtherSession: rec.Instance != e.instance || rec.Session != session})
		}
	}
	sort.Slice(entries, func(i, k int) bool {
		if entries[i].OtherSession != entries[k].OtherSession {
			return !entries[i].OtherSession
		}
		return entries[i].Created.After(entries[k].Created)
	})
	var b strings.Builder
	if len(entries) == 0 {
		b.WriteString(`No consultations: none was started with on_timeout "continue", or their results have expired.`)
	} else {
		fmt.Fprintf(&b, "Consultations, this session's first, newest first (%d):\n", len(entries))
	}
	if len(entries) > listMax {
		entries = entries[:listMax]
	}
	for _, le := range entries {
		other := ""
		if le.OtherSession {
			other = " · started by another session"
		}
		fmt.Fprintf(&b, "- %s · %s%s · started %s ago · %s\n", le.ID, le.Status, other, consult.FormatDuration(time.Since(le.Created)), consult.Printable(le.Query))
	}
	if listErr != nil {
		fmt.Fprintf(&b, "\n(The results directory could not be read: %s)", consult.Printable(listErr.Error()))
	}
	return consultation.Said(&consultation.Summary{Kind: consultation.KindList, Consultations: entries}, strings.TrimRight(b.String(), "\n"))
}

// shortQuery is the head of a query for a listing line.
func shortQuery(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	const n = 80
	if len(q) <= n {
		return q
	}
	cut := n
	for cut > 0 && q[cut]&0xC0 == 0x80 {
		cut--
	}
	return q[:cut] + "…"
}

// Cancel is consultation_cancel: it stops the consultation with the given id and returns its
// final state, what it had received kept as its result. A cancel is never lost: a worker
// that has not started yet stops before it reads or sends anything. Another owner's
// consultation is answered as an unknown id. The session that cancels is not told later
// that the result is ready.
func (e *Engine) Cancel(ctx context.Context, id string) consultation.Result {
	if strings.TrimSpace(id) == "" {
		return consultation.FailureOf(consultation.Empty[CancelArgs](ArgID))
	}
	if err := checkID(id); err != nil {
		return consultation.FailureOf(err)
	}
	e.logger.Info("consultation_cancel", "id", id)
	rec, failed := e.load(id, OwnerFrom(ctx))
	switch {
	case failed != nil:
		return *failed
	case rec.Status == results.Done:
		return alreadyFinished(id)
	}
	e.announce.Delete(id)
	return cancelled(id, e.stop(id, causeTool))
}

// cancelled is res, the final state of consultation id after a cancel, led by saying that it
// was stopped and what its result keeps when the cancel stopped it: the cancel did what was
// asked, it is no error. Any other res (it finished first, its worker is still stopping, the
// cancel could not be written) is returned as it is.
func cancelled(id string, res consultation.Result) consultation.Result {
	sum := res.Summary
	if !res.IsError || sum == nil || sum.Error == nil || sum.Error.Class != consultation.ClassCancelled {
		return res
	}
	var f consultation.Facts
	if res.Facts != nil {
		f = *res.Facts
	}
	kept := "what it had gathered"
	switch {
	case f.NothingGathered():
		kept = "that it was stopped before it read any file"
	case sum.Answer != "":
		kept += " and the partial answer"
	}
	f.Lead = fmt.Sprintf("Consultation %s is stopped. Its result keeps %s (consultation_result {\"id\": %q} returns it again):\n\n", id, kept, id)
	stopped := *sum
	stopped.Kind, stopped.Error = consultation.KindCancelled, nil
	res.Summary, res.Facts, res.IsError = &stopped, &f, false
	return res
}

func alreadyFinished(id string) consultation.Result {
	return consultation.Said(&consultation.Summary{Kind: consultation.KindAnswer, ID: id,
		Next: &consultation.NextStep{Tool: "consultation_result", Arguments: map[string]any{"id": id}}},
		fmt.Sprintf("Consultation %s had already finished; nothing was cancelled. Collect its result with consultation_result {\"id\": %q}.", id, id))
}

// stop leaves the cancel marker of id, waits up to stopWait for its worker to save what it
// had, and returns that final state.
func (e *Engine) stop(id string, cause *stopCause) consultation.Result {
	if err := e.store.WriteCancel(id, cause.by); err != nil {
		return consultation.Failure(consultation.ClassInternal, fmt.Sprintf("Cannot cancel consultation %s: its cancel cannot be written in %s (%v).", id, e.store.Dir(), err))
	}
	e.wake(id)
	e.logger.Info("background consultation cancelled", "id", id, "why", cause)
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	res, how, _ := e.follow(ctx, id, time.Time{}, &relay{}, nil, false)
	if how != followDone {
		return consultation.Said(&consultation.Summary{Kind: consultation.KindRunning, ID: id}, fmt.Sprintf("Cancellation of %s requested; its worker is stopping.", id))
	}
	return res
}

// wake tells the worker of consultation id to read its cancel marker now: a signal to the
// process its record names, while the record's lock says that process is its worker.
func (e *Engine) wake(id string) {
	rec, err := e.store.LoadHead(id)
	if err != nil || !rec.Worker || rec.PID <= 0 || rec.Status != results.Running || !e.store.LockHeld(id) {
		return
	}
	signalWorker(rec.PID)
}

// Peek returns consultation id's result for the caller's owner without waiting: the answer
// or failure once done, "still running" with its progress while it runs. found is false
// (with the reason as the result) for an id unknown to the owner, expired or malformed. It
// serves reads of the resource consult://results/{id}.
func (e *Engine) Peek(ctx context.Context, id string) (consultation.Result, bool) {
	if err := checkID(id); err != nil {
		return consultation.FailureOf(err), false
	}
	rec, failed := e.load(id, OwnerFrom(ctx))
	if failed != nil {
		return *failed, false
	}
	res := e.view(e.settled(rec), "not finished")
	e.delivered(res)
	return res, true
}

// Find reports whether the caller of ctx may read consultation id (its resource,
// consult://results/{id}), reading only the head of its record; when not, the result says
// why: malformed, unknown, expired, or another owner's (answered as unknown). A record
// that cannot be read counts as found: reading it reports the fault.
func (e *Engine) Find(ctx context.Context, id string) (consultation.Result, bool) {
	if err := checkID(id); err != nil {
		return consultation.FailureOf(err), false
	}
	rec, err := e.store.LoadHead(id)
	_, failed := e.judge(id, OwnerFrom(ctx), rec, err)
	if failed == nil {
		return consultation.Result{}, true
	}
	if info := failed.Summary.Error; info != nil && (info.Class == consultation.ClassNotFound || info.Class == consultation.ClassInvalidArgument) {
		return *failed, false
	}
	return consultation.Result{}, true
}

// Lookup returns the record of id for a person reading the results directory (consult
// results): every owner's, since the directory is theirs. A running record whose worker is
// gone is first finished as stopped before finishing.
func (e *Engine) Lookup(id string) (results.Record, error) {
	rec, err := e.store.Load(id)
	if err != nil {
		return rec, err
	}
	return e.settled(rec), nil
}

// Describe is what a record says to a person: the result's text once done, the progress
// while running.
func (e *Engine) Describe(rec results.Record) string { return e.view(rec, "not finished").Text() }

// Stop stops the consultation id, whoever started it, and returns its final state: for
// `consult results --cancel`.
func (e *Engine) Stop(id string) (string, error) {
	rec, err := e.Lookup(id)
	switch {
	case err != nil:
		return "", err
	case rec.Status == results.Done:
		return fmt.Sprintf("Consultation %s had already finished; nothing was cancelled.", id), nil
	}
	e.announce.Delete(id)
	return cancelled(id, e.stop(id, causeTool)).Text(), nil
}

// WatchFinished calls notify, until ctx ends, for each consultation this server started that
// finishes (or is found stopped) after its call returned "still running": the server tells
// the session that started it that the answer is ready. A consultation cancelled through
// this server is not announced.
func (e *Engine) WatchFinished(ctx context.Context, every time.Duration, notify func(results.Record)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.announce.Range(func(id, _ any) bool {
			rec, err := e.store.Load(id.(string))
			if err != nil {
				e.announce.Delete(id)
				return true
			}
			if rec = e.settled(rec); rec.Status == results.Done {
				e.announce.Delete(id)
				if rec.Note != "cancelled" {
					notify(rec)
				}
			}
			return true
		})
	}
}

// ReadyNotice is the message announcing that a consultation's result is ready.
func ReadyNotice(rec results.Record) string {
	what := "answer"
	if rec.IsError {
		what = "result (it failed or was stopped)"
	}
	return fmt.Sprintf("Consultation %s is ready: collect its %s with consultation_result {\"id\": %q}.", rec.ID, what, rec.ID)
}
