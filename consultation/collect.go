package consultation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/results"
)

// Arguments of consultation_result and consultation_cancel.
const (
	ArgID   = "id"
	ArgWait = "wait"
)

// listMax is how many consultations a listing shows: the recent ones are the ones asked for.
const listMax = 20

const noJobs = "This server keeps no background consultations, so there is nothing to collect or cancel."

// checkCollect checks consultation_result's id (optional) and wait, setting a zero wait to
// the default; it returns the warnings the result carries.
func checkCollect(id string, wait *time.Duration) ([]string, error) {
	if id != "" {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	rule := WaitRule()
	if *wait == 0 {
		*wait = rule.Default
	} else if err := rule.check(*wait); err != nil {
		return nil, err
	}
	if *wait >= consult.TimeoutWarnAt {
		return []string{longWaitWarning(ArgWait, *wait, "call again with a shorter wait: the consultation goes on meanwhile")}, nil
	}
	return nil, nil
}

func checkID(id string) error {
	if _, err := results.ParseID(id); err != nil {
		return argErr(ArgID, `id %s is not a consultation id: ids look like %q and come from a consultation that returned "still running"; call consultation_result without id to list them`, shown(id), results.IDExample)
	}
	return nil
}

// Collect is consultation_result: it waits up to the call's wait for the consultation with
// the given id and returns its result, or "still running" with its progress. Without an id it
// lists the consultations the server knows. Waiting never affects the consultation: a
// cancelled wait leaves it running. Only the consultations of the caller's owner (OwnerFrom
// ctx) are listed or collected: another owner's id is answered as an unknown one.
// A zero wait is the default, consult.DefaultWait.
func (s *Service) Collect(ctx context.Context, id string, wait time.Duration, r Reporter) Result {
	warnings, err := checkCollect(id, &wait)
	if err != nil {
		return FailureOf(err)
	}
	if s.Jobs == nil {
		return Failure(ClassInvalidArgument, noJobs)
	}
	owner := OwnerFrom(ctx)
	var res Result
	if id == "" {
		res = s.list(owner, SessionFrom(ctx))
	} else {
		res = s.collect(ctx, id, owner, wait, r)
	}
	if len(warnings) > 0 {
		res.Text += "\n\nWarning: " + strings.Join(warnings, "\nWarning: ")
	}
	s.logger().Info("consultation_result", "id", id, "wait", wait, "error", res.IsError)
	return res
}

func (s *Service) collect(ctx context.Context, id, owner string, wait time.Duration, r Reporter) Result {
	jb, ok, expired := s.Jobs.get(id, owner)
	switch {
	case ok:
		return s.awaitJob(ctx, jb, wait, r)
	case expired:
		return s.expired(id)
	}
	rec, failed := s.loadSaved(id, owner)
	switch {
	case failed != nil:
		return *failed
	case rec.Status == results.Done:
		return fromRecord(rec)
	default:
		return s.awaitOther(ctx, rec, wait, r)
	}
}

// loadSaved reads the saved record of id; when there is none to use it returns the result
// that says why: no results directory, unknown, expired, unreadable. A record of another
// owner than owner is unknown, whatever its state.
func (s *Service) loadSaved(id, owner string) (results.Record, *Result) {
	st := s.Jobs.Store()
	if st == nil {
		res := s.notFound(id)
		return results.Record{}, &res
	}
	rec, err := st.Load(id)
	var res Result
	switch {
	case (err == nil || errors.Is(err, results.ErrExpired)) && rec.Owner != owner:
		res = s.notFound(id)
	case err == nil:
		return rec, nil
	case errors.Is(err, results.ErrExpired):
		res = s.expired(id)
	case errors.Is(err, results.ErrNotFound):
		res = s.notFound(id)
	default:
		res = Failure(ClassInternal, fmt.Sprintf("Cannot read consultation %s from %s: %v", id, st.Dir(), err))
	}
	return results.Record{}, &res
}

// awaitJob waits for a job of this process, with heartbeats, until it finishes or wait passes.
func (s *Service) awaitJob(ctx context.Context, jb *job, wait time.Duration, r Reporter) Result {
	c := jb.call()
	if c == nil {
		return s.Jobs.result(jb)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	hb := startHeartbeat(wctx, r, c.interval, c.progressMessage)
	select {
	case <-jb.finished:
	case <-wctx.Done():
	}
	hb.halt()
	if jb.isDone() {
		return s.Jobs.result(jb)
	}
	if ctx.Err() != nil {
		return Failure(ClassCancelled, fmt.Sprintf("Stopped waiting for %s because the call was cancelled; the consultation goes on.", jb.id))
	}
	return c.running(fmt.Sprintf("not finished within wait %s", consult.FormatDuration(wait)), jb.durable())
}

// awaitOther waits for a consultation recorded as running in a worker process or in another
// server process (or an earlier one that is gone), reading its record and relaying its
// progress. One whose process is gone is finished with what it had.
func (s *Service) awaitOther(ctx context.Context, rec results.Record, wait time.Duration, r Reporter) Result {
	if rec.PID == s.Jobs.pid { // this process's own, which it no longer runs
		return fromRecord(s.Jobs.finishDead(rec.ID))
	}
	end := time.Now().Add(wait)
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	next, done := s.Jobs.follow(wctx, rec.ID, 0, s.heartbeat(), end.Add(-quietBeforeEnd), &relay{r: r, id: rec.ID})
	switch {
	case done:
		return fromRecord(next)
	case ctx.Err() != nil:
		return Failure(ClassCancelled, fmt.Sprintf("Stopped waiting for %s because the call was cancelled; the consultation goes on.", rec.ID))
	case !next.Worker:
		return Result{
			Text: fmt.Sprintf("Still running in another consult server (pid %d), started %s ago: id %s. Collect it again with consultation_result, or cancel it through the client connected to that server.",
				next.PID, consult.FormatDuration(time.Since(next.Created)), next.ID),
			Summary: &Summary{Kind: KindRunning, ID: next.ID, Model: next.Model, ElapsedSeconds: time.Since(next.Created).Round(time.Millisecond).Seconds()},
		}
	default:
		return runningFromRecord(s.Jobs, next, fmt.Sprintf("not finished within wait %s", consult.FormatDuration(wait)))
	}
}

func (s *Service) heartbeat() time.Duration {
	return s.liveRules(0).interval
}

// fromRecord is the result a saved consultation returns: its saved summary, or one made
// from the record when none was saved (or it cannot be read).
func fromRecord(rec results.Record) Result {
	res := Result{Text: rec.Text, IsError: rec.IsError}
	if len(rec.Summary) > 0 {
		var sum Summary
		if err := json.Unmarshal(rec.Summary, &sum); err == nil {
			res.Summary = &sum
			return res
		}
	}
	kind := KindAnswer
	if rec.IsError {
		kind = KindError
	}
	res.Summary = &Summary{Kind: kind, ID: rec.ID, Model: rec.Model, Answer: rec.Answer}
	return res
}

// notFound explains an id this server does not know: expired when it is older than any
// result is kept, unknown otherwise.
func (s *Service) notFound(id string) Result {
	if created, err := results.ParseID(id); err == nil && time.Since(created) > s.Jobs.Limit()+s.Jobs.ttl {
		return s.expired(id)
	}
	where := "this server has no consultation " + id
	if st := s.Jobs.Store(); st != nil {
		where += " and none is saved in " + st.Dir()
	}
	return Failure(ClassNotFound, fmt.Sprintf("Unknown id: %s. Ids come from a consultation that returned \"still running\"; call consultation_result without id to list the known ones.", where))
}

func (s *Service) expired(id string) Result {
	return Failure(ClassNotFound, fmt.Sprintf("The result of consultation %s has expired: results are kept for %s after they finish. Run the consultation again.", id, consult.FormatDuration(s.Jobs.ttl)))
}

// list is consultation_result without an id: owner's consultations, this process's and the
// saved ones. The calling session's own come first, newest first, then the others (started
// by another session of the same owner, or before a restart), marked as such: an agent
// that takes the first entry takes one of its own.
func (s *Service) list(owner, session string) Result {
	seen := map[string]bool{}
	entries := s.Jobs.listing(owner, session)
	for _, e := range entries {
		seen[e.ID] = true
	}
	var listErr error
	if st := s.Jobs.Store(); st != nil {
		recs, err := st.List(0)
		listErr = err
		for _, rec := range recs {
			if seen[rec.ID] || rec.Owner != owner {
				continue
			}
			status := statusOf(rec.IsError)
			if rec.Status == results.Running {
				status = "stopped before finishing"
				if rec.PID != s.Jobs.pid && s.Jobs.workerAlive(rec) {
					status = "running"
				}
			}
			own := rec.Instance == s.Jobs.instance && rec.Session == session
			entries = append(entries, listed{ListEntry{ID: rec.ID, Status: status, Created: rec.Created, Query: rec.Query}, own})
		}
	}
	sort.Slice(entries, func(i, k int) bool {
		if entries[i].own != entries[k].own {
			return entries[i].own
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
	out := make([]ListEntry, len(entries))
	for i := range entries {
		e := &entries[i].ListEntry
		e.Query = shortQuery(e.Query)
		e.OtherSession = !entries[i].own
		other := ""
		if e.OtherSession {
			other = " · started by another session"
		}
		fmt.Fprintf(&b, "- %s · %s%s · started %s ago · %s\n", e.ID, e.Status, other, consult.FormatDuration(time.Since(e.Created)), consult.Printable(e.Query))
		out[i] = *e
	}
	if listErr != nil {
		fmt.Fprintf(&b, "\n(The results directory could not be read: %s)", consult.Printable(listErr.Error()))
	}
	return Result{Text: strings.TrimRight(b.String(), "\n"), Summary: &Summary{Kind: KindList, Consultations: out}}
}

func statusOf(isError bool) string {
	if isError {
		return "failed"
	}
	return "finished"
}

// shortQuery is the head of a query for a listing line.
func shortQuery(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	const n = 80
	if len(q) <= n {
		return q
	}
	cut := n
	for cut > 0 && !utf8RuneStart(q[cut]) {
		cut--
	}
	return q[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Cancel is consultation_cancel: it stops the consultation with the given id. What it had
// received is kept as its result (saved when it runs in the background). Another owner's
// consultation is answered as an unknown id.
func (s *Service) Cancel(ctx context.Context, id string) Result {
	err := notEmpty(ArgID, id)
	if err == nil {
		err = checkID(id)
	}
	if err != nil {
		return FailureOf(err)
	}
	if s.Jobs == nil {
		return Failure(ClassInvalidArgument, noJobs)
	}
	s.logger().Info("consultation_cancel", "id", id)
	owner := OwnerFrom(ctx)
	jb, ok, expired := s.Jobs.get(id, owner)
	if expired {
		return s.expired(id)
	}
	if ok {
		if jb.isDone() {
			return alreadyFinished(id)
		}
		jb.cancel(ErrCancelledByTool)
		select {
		case <-jb.finished:
		case <-ctx.Done():
			return Result{Text: fmt.Sprintf("Cancellation of %s requested; it is stopping.", id)}
		}
		if !errors.Is(jb.cause(), ErrCancelledByTool) {
			return alreadyFinished(id)
		}
		return Result{Text: fmt.Sprintf("Cancelled consultation %s. Its final state:\n\n%s", id, s.Jobs.result(jb).Text)}
	}
	rec, failed := s.loadSaved(id, owner)
	switch {
	case failed != nil:
		return *failed
	case rec.Status == results.Done:
		return alreadyFinished(id)
	case rec.Worker && s.Jobs.workerAlive(rec):
		res := s.Jobs.stopWorker(id, rec.PID, ErrCancelledByTool)
		return Result{Text: fmt.Sprintf("Cancelled consultation %s. Its final state:\n\n%s", id, res.Text)}
	case rec.Worker:
		return Failure(ClassNotFound, fmt.Sprintf("Consultation %s is not running: it stopped before finishing. Its final state:\n\n%s", id, s.Jobs.finishDead(id).Text))
	case rec.PID != s.Jobs.pid && processAlive(rec.PID):
		return Failure(ClassPermissionDenied, fmt.Sprintf("Consultation %s runs in another consult server (pid %d); cancel it through the client connected to that server.", id, rec.PID))
	default:
		return Failure(ClassNotFound, fmt.Sprintf("Consultation %s is not running: the server that ran it (pid %d) stopped before it finished, and nothing was kept.", id, rec.PID))
	}
}

func alreadyFinished(id string) Result {
	return Result{Text: fmt.Sprintf("Consultation %s had already finished; nothing was cancelled. Collect its result with consultation_result {\"id\": %q}.", id, id)}
}

// Peek returns consultation id's result for the caller's owner without waiting: the answer
// or failure once done, "still running" with its progress while it runs. found is false
// (with the reason as the result) for an id unknown to the owner, expired or malformed.
// It serves reads of the resource consult://results/{id}.
func (s *Service) Peek(ctx context.Context, id string) (res Result, found bool) {
	if err := checkID(id); err != nil {
		return FailureOf(err), false
	}
	if s.Jobs == nil {
		return Failure(ClassInvalidArgument, noJobs), false
	}
	owner := OwnerFrom(ctx)
	jb, ok, expired := s.Jobs.get(id, owner)
	switch {
	case expired:
		return s.expired(id), false
	case ok:
		if c := jb.call(); c != nil {
			return c.running("not finished", jb.durable()), true
		}
		return s.Jobs.result(jb), true
	}
	rec, failed := s.loadSaved(id, owner)
	switch {
	case failed != nil:
		return *failed, false
	case rec.Status == results.Done:
		return fromRecord(rec), true
	case rec.PID == s.Jobs.pid || !s.Jobs.running(rec, 0):
		return fromRecord(s.Jobs.finishDead(id)), true
	case !rec.Worker:
		return Result{Text: fmt.Sprintf("Still running in another consult server (pid %d): id %s.", rec.PID, id), Summary: &Summary{Kind: KindRunning, ID: id, Model: rec.Model}}, true
	default:
		return runningFromRecord(s.Jobs, rec, "not finished"), true
	}
}
