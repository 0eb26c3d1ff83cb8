package background

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
)

// ArgFollowUpOf is the consultation tool's argument naming an earlier consultation to
// follow up.
const ArgFollowUpOf = "follow_up_of"

// Limits of a follow-up's thread: the earlier turns a follow-up sends with its question.
const (
	maxTurns      = 5
	maxTurnAnswer = 64 << 10 // bytes of each earlier answer sent again
)

// thread is what a follow-up carries from the consultation it follows.
type thread struct {
	of      string
	turns   []results.Turn    // the earlier questions and answers, oldest first
	digests map[string]string // the files the earlier consultation sent
}

// prepare turns a follow-up (in.FollowUpOf) into the request to run: the earlier
// consultation's path, pattern and exclude_pattern (a different one given is refused), and
// the question after the earlier ones with their answers, so that the files come first and
// the provider's cache can serve them. A request that follows nothing is returned as it is.
func (e *Engine) prepare(owner string, in consultation.Request) (consultation.Request, *thread, *consultation.Result) {
	if in.FollowUpOf == "" {
		return in, nil, nil
	}
	if err := checkID(in.FollowUpOf); err != nil {
		res := consultation.FailureOf(&consult.ArgError{Arg: ArgFollowUpOf, Value: consultation.Shown(in.FollowUpOf), Rule: "is not a consultation id", Fix: "give the id of an earlier answer (its structured result's id)"})
		return in, nil, &res
	}
	rec, failed := e.load(in.FollowUpOf, owner)
	switch {
	case failed != nil:
		return in, nil, failed
	case rec.Status != results.Done || rec.IsError || rec.Answer == "":
		res := consultation.FailureOf(&consult.ArgError{Arg: ArgFollowUpOf, Value: consultation.Shown(in.FollowUpOf),
			Rule: "has no answer to follow up (it is still running, failed or was cancelled)",
			Fix:  "collect it with consultation_result, or ask a new question"})
		return in, nil, &res
	}
	for _, m := range []struct{ arg, given, earlier string }{
		{consultation.ArgPath, in.Path, rec.Path},
		{consultation.ArgPattern, in.Pattern, rec.Pattern},
		{consultation.ArgExclude, in.Exclude, rec.Exclude},
	} {
		if m.given != m.earlier {
			res := consultation.FailureOf(&consult.ArgError{Arg: m.arg, Value: consultation.Shown(m.given),
				Rule: fmt.Sprintf("is not %s, consultation %s's", consultation.Shown(m.earlier), in.FollowUpOf),
				Fix:  "a follow-up asks about the same files; for other files ask a new question without follow_up_of"})
			return in, nil, &res
		}
	}
	th := &thread{of: rec.ID, digests: rec.Digests}
	// The earlier question whole (Query is cut for listings).
	th.turns = append(slices.Clone(rec.Thread), results.Turn{Query: cmp.Or(rec.Question, rec.Query), Answer: rec.Answer})
	if len(th.turns) > maxTurns {
		th.turns = th.turns[len(th.turns)-maxTurns:]
	}
	run := in
	run.Query = compose(th.turns, in.Query)
	return run, th, nil
}

// compose is a follow-up's question: the earlier questions with their answers, then the
// question now.
func compose(turns []results.Turn, query string) string {
	var b strings.Builder
	b.WriteString("Earlier questions about these files, with the answers given:\n")
	for i, t := range turns {
		answer := t.Answer
		if len(answer) > maxTurnAnswer {
			answer = answer[:maxTurnAnswer] + "\n[…]"
		}
		fmt.Fprintf(&b, "\n[Question %d]\n%s\n\n[Answer %d]\n%s\n", i+1, t.Query, i+1, answer)
	}
	b.WriteString("\n[The question now]\n")
	b.WriteString(query)
	return b.String()
}

// changed names the files that differ between an earlier consultation's digests and now's:
// changed, new and gone; "" when none do. Each name is escaped (consult.Printable): a file
// name is the tree's to choose, and the warning reaches the model and the user's terminal.
func changed(before, now map[string]string) string {
	var out []string
	for p, d := range now {
		switch old, ok := before[p]; {
		case !ok:
			out = append(out, consult.Printable(p)+" (new)")
		case old != d:
			out = append(out, consult.Printable(p)+" (changed)")
		}
	}
	for p := range before {
		if _, ok := now[p]; !ok {
			out = append(out, consult.Printable(p)+" (gone)")
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// settle finishes a consultation's result for keeping: for a follow-up, the files changed
// since the earlier consultation are named (a warning the answer's reader sees).
func (th *thread) settle(res consultation.Result) consultation.Result {
	if th == nil || res.Summary == nil || res.Summary.Kind != consultation.KindAnswer {
		return res
	}
	res.Summary.FollowUpOf = th.of
	if c := changed(th.digests, res.Digests); c != "" {
		return withWarnings(res, []string{fmt.Sprintf("files changed since consultation %s, sent as they are now: %s", th.of, c)})
	}
	return res
}

// keep saves a finished result of ctx's caller that no record holds yet, for collecting,
// paging and follow-ups, and returns its new id.
func (e *Engine) keep(ctx context.Context, in consultation.Request, res consultation.Result, th *thread, created time.Time) (string, error) {
	job := e.job(ctx, in, created)
	base := jobRecord(job)
	base.Worker = false
	sum := *res.Summary
	sum.ID = job.ID
	base.Model = cmp.Or(sum.Model, base.Model)
	res.Summary = &sum
	rec, err := doneRecord(base, res, th)
	if err != nil {
		return "", err
	}
	rec.Answer = cmp.Or(rec.Answer, sum.Answer)
	return job.ID, e.store.Save(rec)
}

// Consult runs a consultation in the call (on_timeout "fail") and keeps its answer in the
// results directory, so that it can be paged and followed up (follow_up_of): the result
// carries its id. A follow-up is asked about the earlier consultation's files, with its
// thread before the question, and names the files changed since. Dry runs and failures are
// not kept.
func (e *Engine) Consult(ctx context.Context, in consultation.Request, r consultation.Reporter) consultation.Result {
	run, th, fail := e.prepare(OwnerFrom(ctx), in)
	if fail != nil {
		return *fail
	}
	res := th.settle(e.svc.Consult(ctx, run, r))
	if res.IsError || res.Summary == nil || res.Summary.Kind != consultation.KindAnswer {
		return res
	}
	id, err := e.keep(ctx, in, res, th, consultation.Arrival(ctx))
	if err != nil {
		e.logger.Warn("cannot keep an answer in the results directory: it cannot be paged or followed up", "error", err)
		if errors.Is(err, results.ErrFull) {
			return withWarnings(res, []string{fmt.Sprintf("this answer was not kept (%v): it is returned whole, and cannot be read again or followed up", err)})
		}
		return res
	}
	res.Summary.ID = id // its words then say to pass it as follow_up_of
	return res
}
