package background

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestOrphanNamedOnceToItsOwner: a consultation whose client stopped waiting without a
// reason goes on; the next result its owner gets names it once, with its id, its state and
// how to collect or stop it; another owner hears nothing of it; a consultation that returned
// "still running" at its timeout (its client got the id) is not named.
func TestOrphanNamedOnceToItsOwner(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	release := holdAnswer(t, r, "kept") // until the checks below are done
	ctx, cancel := context.WithCancelCause(WithOwner(context.Background(), "alice"))
	go func() {
		if _, err := r.up.Await(1, 30*time.Second); err == nil {
			cancel(consultation.ErrClientCancelled)
		}
	}()
	res := r.eng.Start(ctx, r.request(10*time.Second), nil)
	if kindOf(t, res) != consultation.KindRunning {
		t.Fatalf("got %s", res.Text())
	}
	id := res.Summary.ID
	if !r.store.IsOrphan(id) {
		t.Errorf("consultation %s whose client stopped waiting is not marked", id)
	}
	warned := func(owner string) []string {
		t.Helper()
		res := r.eng.WithOrphans(WithOwner(context.Background(), owner), consultation.Said(&consultation.Summary{Kind: consultation.KindAnswer}, "an answer"))
		return res.Summary.Warnings
	}
	if w := warned("mallory"); len(w) != 0 {
		t.Errorf("another owner is told of it: %q", w)
	}
	if res := r.eng.WithOrphans(WithOwner(context.Background(), "alice"), consultation.Result{}); res.Summary != nil || !r.store.IsOrphan(id) {
		t.Errorf("a result without a summary, which cannot carry a warning, took it")
	}
	w := warned("alice")
	if len(w) != 1 {
		t.Fatalf("owner's warnings = %q, want one", w)
	}
	for _, want := range []string{id, "still running", "consultation_result", "consultation_cancel", "client stopped waiting"} {
		if !strings.Contains(w[0], want) {
			t.Errorf("warning %q does not say %q", w[0], want)
		}
	}
	if again := warned("alice"); len(again) != 0 {
		t.Errorf("named twice: %q", again)
	}
	if r.store.IsOrphan(id) {
		t.Errorf("still marked once named")
	}

	// At its timeout, with the client waiting, the call returns the id: nobody to warn.
	r.up.Push(fake.Script{Steps: []fake.Step{fake.Sleep(2500 * time.Millisecond), fake.Text("later")}})
	timed := r.eng.Start(WithOwner(context.Background(), "alice"), r.request(time.Second), nil)
	if kindOf(t, timed) != consultation.KindRunning {
		t.Fatalf("got %s", timed.Text())
	}
	if r.store.IsOrphan(timed.Summary.ID) {
		t.Errorf("a consultation returned as still running at its timeout is marked as nobody's")
	}
	release()
	r.eng.Collect(context.Background(), id, 10*time.Second, nil)
	r.eng.Collect(WithOwner(context.Background(), "alice"), timed.Summary.ID, 10*time.Second, nil)
}

// TestTaskEndsBeforeTheModelIsNoTask: a task whose consultation ends before it reaches a
// model (nothing matched) returns its result, and no task.
func TestTaskEndsBeforeTheModelIsNoTask(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	in := r.request(10 * time.Second)
	in.Pattern = "**/*.nothing"
	res, task := r.eng.StartTask(context.Background(), in, nil)
	if task != nil {
		t.Fatalf("a consultation that matched nothing became task %s", task.ID)
	}
	if !res.IsError || res.Summary.Error.Class != consultation.ClassNotFound {
		t.Errorf("got %s", res.Text())
	}
	if n := len(r.up.Requests()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
}

// TestWorkerToldOfCancel: a cancel reaches a running worker at once, told rather than found
// by its fallback poll (set here to an hour).
func TestWorkerToldOfCancel(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.eng.cancelPoll = time.Hour
	r.up.Push(fake.Script{Steps: []fake.Step{fake.Hang()}})
	res, task := r.eng.StartTask(context.Background(), r.request(30*time.Second), nil)
	if task == nil {
		t.Fatalf("no task: %s", res.Text())
	}
	req, err := r.up.Await(1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if h, err := r.store.LoadHead(task.ID); err == nil && h.PID > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker's record never named its process")
		}
	}
	if err := r.eng.CancelTask(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-req.Ended():
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream request is still open: the worker was not told of the cancel")
	}
}

// TestRunningSaysAnUnknownPriceOnce: "still running" for a model without a price says
// "price unknown", not "price price unknown".
func TestRunningSaysAnUnknownPriceOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	rec := results.Record{ID: results.NewID(time.Now()), Status: results.Running, Created: time.Now(),
		Progress: &results.Progress{Phase: "waiting for the first token", Files: 1, Cost: consultation.PriceUnknown}}
	text := r.eng.running(rec, "timeout 3 seconds reached").Text()
	if !strings.Contains(text, "; price unknown") || strings.Contains(text, "price price") {
		t.Errorf("still running says:\n%s", text)
	}
}
