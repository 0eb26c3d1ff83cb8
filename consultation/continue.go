package consultation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/results"
)

// consultContinuing runs a call with on_timeout "continue": the consultation runs as a job
// under the server's background limit; the call waits for it until its own timeout and then
// returns "still running" with the id to collect it by. When the client gives up on the
// call first, the job is stopped when the user cancelled (see userStopped) or
// nothing was sent to the model yet (nothing is paid for), and goes on in the background
// otherwise. With a results directory and a Launcher the consultation runs in a worker
// process instead (consultInWorker); without a results directory it runs in this process
// and ends with it.
func (s *Service) consultContinuing(ctx context.Context, req request, start time.Time, r Reporter) Result {
	if s.Jobs == nil {
		return Failure(ClassInvalidArgument, `on_timeout "continue" is not available: this server keeps no background consultations. Call again without on_timeout.`)
	}
	if s.Jobs.useWorkers() {
		if ctx.Err() != nil { // cancelled while queued: start nothing
			return Failure(ClassCancelled, "Cancelled by the client before the consultation started.")
		}
		return s.consultInWorker(ctx, req, start, r)
	}
	c := &call{svc: s, req: req, start: start, reporter: r, id: results.NewID(start)}
	c.idle, c.interval = s.liveRules(s.Jobs.Limit()).rules()
	for _, w := range req.Warnings {
		c.log(LevelWarning, w)
	}
	if ctx.Err() != nil { // cancelled while queued: start nothing
		return c.stopped(ctx)
	}
	jb, err := s.Jobs.start(c, OwnerFrom(ctx), SessionFrom(ctx))
	if err != nil {
		return Failure(ClassOverloaded, "The server is shutting down and starts no new background consultations; call again once it has restarted.")
	}
	fg, cancel := withCallDeadline(ctx, start, req.Timeout)
	defer cancel()
	hb := startHeartbeatNow(fg, r, c.interval, c.progressWithID) // the id reaches the client at once
	select {
	case <-jb.finished:
		hb.halt()
		return s.Jobs.result(jb)
	case <-fg.Done():
	}
	hb.halt()
	if ctx.Err() != nil && (c.attempts.Load() == 0 || userStopped(ctx)) {
		jb.cancel(context.Cause(ctx))
		return s.Jobs.result(jb)
	}
	if !s.Jobs.detach(jb) {
		return s.Jobs.result(jb)
	}
	why := fmt.Sprintf("timeout %s reached", consult.FormatDuration(req.Timeout))
	if ctx.Err() != nil {
		why = "the client cancelled the call"
	}
	return c.running(why, jb.durable())
}

// running is the result of a consultation that goes on in the background: its id, what it
// has so far and how to collect it. notDurable is nil when its running record was written
// to the results directory (its result will survive a restart), else why not.
func (c *call) running(why string, notDurable error) Result {
	now := time.Now()
	sum := c.summary(KindRunning, nil)
	sum.Phase = string(c.currentPhase())
	var sizes string
	if rep := c.sized.Load(); rep != nil {
		sum.Files, sum.Bytes, sum.PromptTokens = rep.Files, rep.Bytes, rep.PromptTokens
		sizes = fmt.Sprintf("; %s %s, %s, %s prompt tokens", consult.Thousands(int64(rep.Files)), plural(rep.Files, "file", "files"), rep.Bytes, rep.PromptTokens)
	}
	var streamed string
	if live := c.liveStream(); live != nil {
		answer, reasoning, _ := live.snapshot()
		st := &StreamedSummary{Reasoning: reasoning, Answer: c.svc.Counter.CountString(answer)}
		sum.Streamed = st
		streamed = fmt.Sprintf("; streamed so far: %s reasoning, %s answer tokens", st.Reasoning, st.Answer)
	}
	limit := c.svc.Jobs.Limit()
	var b strings.Builder
	fmt.Fprintf(&b, "Still running in the background (%s): id %s.\n", why, c.id)
	fmt.Fprintf(&b, "So far: %s%s%s.\n", c.progressMessage(now), sizes, streamed)
	fmt.Fprintf(&b, `Collect it with consultation_result {"id": %q} (waits up to %s per call; set "wait" up to %g); stop it with consultation_cancel. `,
		c.id, consult.FormatDuration(consult.DefaultWait), consult.MaxWait.Seconds())
	fmt.Fprintf(&b, "It may run until %s (background limit %s)", c.start.Add(limit).UTC().Format("15:04:05 UTC"), consult.FormatDuration(limit))
	switch st := c.svc.Jobs.Store(); {
	case st == nil || errors.Is(notDurable, errNoStore):
		b.WriteString("; its result is kept in memory only: it is lost if the server stops.")
	case notDurable == nil:
		fmt.Fprintf(&b, "; its result is kept for %s, across server restarts.", consult.FormatDuration(st.TTL()))
	default:
		fmt.Fprintf(&b, "; its result is kept in memory only, because the results directory %s cannot be written (%v): it is lost if the server stops.", st.Dir(), notDurable)
	}
	return Result{Text: b.String(), Summary: sum}
}

// progressWithID is the progress message with the id appended, so a client whose call is cut
// off has seen the id to collect the result by.
func (c *call) progressWithID(now time.Time) string {
	msg := c.progressMessage(now)
	if tail := ", id " + c.id; len(msg)+len(tail) <= consult.MaxProgressMessage {
		msg += tail
	}
	return msg
}
