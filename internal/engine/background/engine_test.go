package background

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

var counter = tokens.NewCounter()

// rig is an engine over a new results directory whose workers run in this process (the
// same Work the binary's worker process runs), against a fake OpenRouter.
type rig struct {
	t       *testing.T
	up      *fake.Server
	store   *results.Store
	svc     *consultation.Service
	eng     *Engine
	tree    string
	started atomic.Int32  // workers started
	gate    chan struct{} // when set, a worker waits for it before it runs
	wg      sync.WaitGroup
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t, up: fake.New(t, fake.OpenRouter)}
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-123", BaseURL: r.up.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = &consultation.Service{Counter: counter, Model: p, DefaultModel: "google/gemini-2.5-pro", Heartbeat: 100 * time.Millisecond,
		Catalog: catalog.New(catalog.Config{Provider: providers.NameOpenRouter, ListURL: r.up.BaseURL() + "/models"})}
	if cfg.Store == nil {
		cfg.Store = results.Open(t.TempDir(), 0, 0, 0)
	}
	r.store = cfg.Store
	cfg.Service = r.svc
	cfg.Heartbeat = 100 * time.Millisecond
	if cfg.Run == nil {
		cfg.Run = r.runInProcess
	}
	r.eng = New(cfg)
	r.tree = t.TempDir()
	if err := os.WriteFile(filepath.Join(r.tree, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.wg.Wait)
	return r
}

// runInProcess is a Runner whose worker is a goroutine of the test.
func (r *rig) runInProcess(job Job, held []*os.File, out *os.File) error {
	r.started.Add(1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if r.gate != nil {
			<-r.gate
		}
		if err := r.eng.Work(context.Background(), job, held, out); err != nil {
			r.t.Errorf("worker: %v", err)
		}
	}()
	return nil
}

// answered is the timeout of a call whose worker answers (or ends) at once: its answer
// comes long before, however busy the machine.
const answered = 20 * time.Second // under 25 s: no warning about clients that give up sooner

func (r *rig) request(timeout time.Duration) consultation.Request {
	return consultation.Request{Path: r.tree, Pattern: "**/*.go", Query: "What does main do?", Timeout: timeout, OnTimeout: consultation.OnTimeoutContinue}
}

// holdAnswer makes r's upstream answer text to every request once release is called (at
// the latest when the test ends, before the fake closes: a held request would keep it open).
func holdAnswer(t *testing.T, r *rig, text string) (release func()) {
	t.Helper()
	held := make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	r.up.SetFunc(func(*fake.Request) fake.Script {
		<-held
		return fake.Answer(text)
	})
	return release
}

func kindOf(t *testing.T, res consultation.Result) string {
	t.Helper()
	if res.Summary == nil {
		t.Fatalf("no summary: %s", res.Text())
	}
	return res.Summary.Kind
}

// TestAnswerWithinTimeout: a continue-mode call whose answer comes within its timeout
// returns it, with the id, and the record says finished.
func TestAnswerWithinTimeout(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.up.Push(fake.Answer("main prints hello"))
	res := r.eng.Start(context.Background(), r.request(answered), nil)
	if kindOf(t, res) != consultation.KindAnswer || !strings.Contains(res.Text(), "main prints hello") {
		t.Fatalf("got %s: %s", res.Summary.Kind, res.Text())
	}
	r.wg.Wait()
	rec, err := r.store.Load(res.Summary.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.eng.State(rec); got != "finished" {
		t.Errorf("state %q, want finished", got)
	}
}

// TestRunningThenCollect: past its timeout a call returns "still running" with the next
// step as data and the phase the worker reached; consultation_result then returns the
// answer.
func TestRunningThenCollect(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	release := holdAnswer(t, r, "late answer")
	res := r.eng.Start(context.Background(), r.request(time.Second), nil)
	sum := res.Summary
	if kindOf(t, res) != consultation.KindRunning || sum.ID == "" {
		t.Fatalf("got %s: %s", sum.Kind, res.Text())
	}
	if n := sum.Next; n == nil || n.Tool != "consultation_result" || n.Arguments["id"] != sum.ID || n.MaxWaitSeconds == 0 || n.RunsUntil.IsZero() || n.KeptSeconds == 0 {
		t.Errorf("next step %+v", sum.Next)
	}
	// "Still running" reports the phase and figures the worker has written: once the upstream
	// has the request, the worker is waiting for the first token with its one file counted
	// (on a busy machine it may not have got there by the call's timeout; the answer is held
	// until then).
	if _, err := r.up.Await(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var peek *consultation.Summary
	var peekText string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		p, _ := r.eng.Peek(context.Background(), sum.ID)
		if peek, peekText = p.Summary, p.Text(); peek.Phase == string(consultation.PhaseWaiting) {
			break
		}
	}
	if !strings.Contains(peekText, "price expected $") || !strings.Contains(peekText, "at most $") {
		t.Errorf("still running without the two figures:\n%s", peekText)
	}
	if peek.Kind != consultation.KindRunning || peek.Phase != string(consultation.PhaseWaiting) || peek.Files != 1 || peek.PromptTokens == 0 {
		t.Errorf("running reports %s, phase %q, %d files, %d tokens: want the worker's (waiting for the first token, 1 file)", peek.Kind, peek.Phase, peek.Files, peek.PromptTokens)
	}
	if _, told := consultation.Render(res, consultation.ToolNames); !strings.Contains(told.Message, "consultation_result") {
		t.Errorf("message does not say how to collect: %q", told.Message)
	}
	release()
	got := r.eng.Collect(context.Background(), sum.ID, 30*time.Second, nil)
	if kindOf(t, got) != consultation.KindAnswer || !strings.Contains(got.Text(), "late answer") {
		t.Fatalf("collected %s: %s", got.Summary.Kind, got.Text())
	}
}

// TestCancelBeforeWorkerRuns: a cancel accepted before the worker has started stops it
// before it sends anything; the record says cancelled.
func TestCancelBeforeWorkerRuns(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.gate = make(chan struct{})
	r.up.Push(fake.Answer("should never be asked"))
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan consultation.Result)
	go func() { done <- r.eng.Start(ctx, r.request(time.Second), nil) }()
	res := <-done // the worker has not run: the call ends at its timeout, still running
	if kindOf(t, res) != consultation.KindRunning {
		t.Fatalf("got %s: %s", res.Summary.Kind, res.Text())
	}
	cancel(nil)
	stopped := make(chan consultation.Result)
	go func() { stopped <- r.eng.Cancel(context.Background(), res.Summary.ID) }()
	// Once the cancel is written, let the worker start (30 s: a hang guard).
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, ok := r.store.ReadCancel(res.Summary.ID); ok {
			break
		}
	}
	close(r.gate)
	out := <-stopped
	if !strings.Contains(out.Text(), "Cancelled") {
		t.Errorf("cancel said: %s", out.Text())
	}
	r.wg.Wait()
	if n := r.up.Count("/chat/completions"); n != 0 {
		t.Errorf("%d model requests sent after a cancel that came first", n)
	}
	rec, _ := r.store.Load(res.Summary.ID)
	if got := r.eng.State(rec); got != "cancelled" {
		t.Errorf("state %q, want cancelled", got)
	}
}

// TestCancelEndsUpstreamAndIsNotAnnounced: consultation_cancel of a running consultation
// closes its upstream request, lists it as cancelled, and its session is not told later
// that a result is ready.
func TestCancelEndsUpstreamAndIsNotAnnounced(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.up.Push(fake.Script{Steps: []fake.Step{fake.Hang()}})
	res := r.eng.Start(context.Background(), r.request(time.Second), nil)
	id := res.Summary.ID
	req, err := r.up.Await(1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := r.eng.Cancel(context.Background(), id)
	// A cancel that did what was asked is no error; it says what was kept, in the text and
	// in the structured result alone.
	text, sum := consultation.Render(out, consultation.ToolNames)
	if out.IsError || sum.Kind != consultation.KindCancelled || sum.Error != nil {
		t.Errorf("cancel returned kind %q, error %+v, isError %v: %s", sum.Kind, sum.Error, out.IsError, text)
	}
	for name, said := range map[string]string{"text": text, "message": sum.Message} {
		first, rest, _ := strings.Cut(said, "\n")
		if !strings.Contains(first, "keeps what it had gathered") || strings.HasSuffix(strings.TrimSpace(first), ":") && strings.TrimSpace(rest) == "" {
			t.Errorf("the %s's first line does not say what was kept: %q", name, first)
		}
		if !strings.Contains(said, "Cancelled with consultation_cancel while waiting for the first token") {
			t.Errorf("the %s does not say where it stopped:\n%s", name, said)
		}
	}
	select {
	case <-req.Ended():
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream request is still open after the cancel")
	}
	if _, ok := r.eng.announce.Load(id); ok {
		t.Errorf("a cancelled consultation is still to be announced")
	}
	list := r.eng.Collect(context.Background(), "", 0, nil)
	if c := list.Summary.Consultations; len(c) != 1 || c[0].Status != "cancelled" {
		t.Errorf("listed as %+v, want cancelled", c)
	}
}

// TestCancelSaysStoppedOnlyWhenItStopped: consultation_cancel and `consult results --cancel`
// lead with "is stopped" only for a final state the cancel made; a cancel that could not be
// written, a worker still stopping, or an answer that landed first is returned as it is.
func TestCancelSaysStoppedOnlyWhenItStopped(t *testing.T) {
	t.Parallel()
	id := "20260101-000000-abcdef"
	for _, tc := range []struct {
		name    string
		res     consultation.Result
		stopped bool
	}{
		{"stopped", consultation.Failure(consultation.ClassCancelled, "Cancelled with consultation_cancel while waiting."), true},
		{"cancel not written", consultation.Failure(consultation.ClassInternal, "Cannot cancel consultation "+id+": its cancel cannot be written."), false},
		{"worker stopping", consultation.Said(&consultation.Summary{Kind: consultation.KindRunning, ID: id}, "Cancellation of "+id+" requested; its worker is stopping."), false},
		{"answered first", consultation.Said(&consultation.Summary{Kind: consultation.KindAnswer, ID: id, Answer: "42"}, "42"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cancelled(id, tc.res)
			if said := strings.Contains(got.Text(), "is stopped"); said != tc.stopped {
				t.Errorf("says stopped: %v, want %v: %s", said, tc.stopped, got.Text())
			}
			if !tc.stopped && (got.IsError != tc.res.IsError || got.Text() != tc.res.Text()) {
				t.Errorf("changed: %s, want %s", got.Text(), tc.res.Text())
			}
		})
	}
}

// TestClientEndsKeepOrStop: the client's own timeout, a cancel without a reason and a client
// that quits leave a continue-mode consultation running; the user's explicit abort stops it.
func TestClientEndsKeepOrStop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cause error
		goes  bool
	}{
		{consultation.ErrClientGaveUp, true},
		{consultation.ErrClientCancelled, true},
		{context.Canceled, true},
		{consultation.ErrUserCancelled, false},
	} {
		t.Run(tc.cause.Error(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			release := holdAnswer(t, r, "kept")
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				if _, err := r.up.Await(1, 30*time.Second); err == nil {
					cancel(tc.cause)
				}
			}()
			res := r.eng.Start(ctx, r.request(10*time.Second), nil)
			release()
			if !tc.goes {
				if !res.IsError || res.Summary.Error.Class != consultation.ClassCancelled {
					t.Fatalf("user abort returned %s", res.Text())
				}
				return
			}
			if kindOf(t, res) != consultation.KindRunning {
				t.Fatalf("got %s", res.Text())
			}
			got := r.eng.Collect(context.Background(), res.Summary.ID, 10*time.Second, nil)
			if !strings.Contains(got.Text(), "kept") {
				t.Errorf("collected: %s", got.Text())
			}
		})
	}
}

// TestWorkerLimitAcrossEngines: six calls at once on two engines sharing a results
// directory with two worker slots start two workers; the others are refused as overloaded.
func TestWorkerLimitAcrossEngines(t *testing.T) {
	t.Parallel()
	store := results.Open(t.TempDir(), 0, 0, 0)
	a := newRig(t, Config{Store: store, MaxWorkers: 2})
	b := newRig(t, Config{Store: store, MaxWorkers: 2})
	// No worker ends before every call has had its turn: the answers wait for that.
	releases := []func(){holdAnswer(t, a, "x"), holdAnswer(t, b, "x")}
	var wg sync.WaitGroup
	var refused atomic.Int32
	for i := range 6 {
		r := []*rig{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.eng.Start(context.Background(), r.request(time.Second), nil)
			if res.IsError && res.Summary.Error.Class == consultation.ClassOverloaded {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	for _, release := range releases {
		release()
	}
	if n := a.started.Load() + b.started.Load(); n != 2 {
		t.Errorf("%d workers started, want 2", n)
	}
	if n := refused.Load(); n != 4 {
		t.Errorf("%d calls refused, want 4", n)
	}
}

// TestDeadWorker: a worker that ends without saving a result is found by its free lock;
// its consultation reads as stopped before finishing, not as running.
func TestDeadWorker(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{Run: func(job Job, held []*os.File, out *os.File) error {
		for _, f := range held {
			f.Close()
		}
		return out.Close()
	}})
	res := r.eng.Start(context.Background(), r.request(answered), nil)
	if !res.IsError || !strings.Contains(res.Text(), "stopped before finishing") {
		t.Fatalf("got %s", res.Text())
	}
	list := r.eng.Collect(context.Background(), "", 0, nil)
	if c := list.Summary.Consultations; len(c) != 1 || c[0].Status != "stopped before finishing" {
		t.Errorf("listed as %+v", c)
	}
}

// TestUnsavableResultDeliveredInBand: when the record cannot be written at the end (a full
// disk), the paid answer still reaches the waiting call, with a warning naming the
// directory.
func TestUnsavableResultDeliveredInBand(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.gate = make(chan struct{})
	r.up.Push(fake.Answer("paid answer"))
	done := make(chan consultation.Result)
	go func() { done <- r.eng.Start(context.Background(), r.request(answered), nil) }()
	var id string
	for id == "" {
		recs, _ := r.store.List(0)
		if len(recs) > 0 {
			id = recs[0].ID
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The record's name becomes a directory: no save of it can succeed.
	path := filepath.Join(r.store.Dir(), id+".json")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	close(r.gate)
	res := <-done
	if res.IsError || !strings.Contains(res.Text(), "paid answer") {
		t.Fatalf("got: %s", res.Text())
	}
	if w := res.Summary.Warnings; len(w) == 0 || !strings.Contains(w[len(w)-1], r.store.Dir()) {
		t.Errorf("warnings %q do not name the results directory", w)
	}
}

// TestOtherOwnerSeesNothing: another owner's id is unknown to collect, cancel and peek.
func TestOtherOwnerSeesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.up.Push(fake.Answer("mine"))
	res := r.eng.Start(WithOwner(context.Background(), "alice"), r.request(answered), nil)
	id := res.Summary.ID
	bob := WithOwner(context.Background(), "bob")
	for name, got := range map[string]consultation.Result{
		"collect": r.eng.Collect(bob, id, time.Second, nil),
		"cancel":  r.eng.Cancel(bob, id),
	} {
		if !got.IsError || got.Summary.Error.Class != consultation.ClassNotFound {
			t.Errorf("%s by another owner: %s", name, got.Text())
		}
	}
	if _, found := r.eng.Peek(bob, id); found {
		t.Error("peek by another owner found it")
	}
	if got := r.eng.Collect(WithOwner(context.Background(), "alice"), id, time.Second, nil); !strings.Contains(got.Text(), "mine") {
		t.Errorf("owner's collect: %s", got.Text())
	}
}

// TestRefusedBeforeStart: a bad request is refused by the same rules as a call's, and no
// worker starts.
func TestRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	in := r.request(time.Second)
	in.Pattern = "../*.go"
	res := r.eng.Start(context.Background(), in, nil)
	if !res.IsError || res.Summary.Error.Class != consultation.ClassInvalidArgument {
		t.Fatalf("got %s", res.Text())
	}
	if r.started.Load() != 0 {
		t.Error("a worker started for a refused request")
	}
	if recs, _ := r.store.List(0); len(recs) != 0 {
		t.Errorf("records written: %d", len(recs))
	}
}

// TestResultsDirCreated: the first continue-mode call on a machine creates the results
// directory (mode 0700) rather than failing for want of it.
func TestResultsDirCreated(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "consult", "results")
	r := newRig(t, Config{Store: results.Open(dir, 0, 0, 0)})
	r.up.Push(fake.Answer("first answer"))
	res := r.eng.Start(context.Background(), r.request(answered), nil)
	if res.IsError || !strings.Contains(res.Text(), "first answer") {
		t.Fatalf("got %s", res.Text())
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("results directory: %v, mode %v", err, fi.Mode().Perm())
	}
}

// TestManyCancelsLeaveNothingOpen: many clients each start a consultation and cancel it as
// soon as its first progress arrives, some before its worker has sent anything: every
// cancel is answered, and no upstream request is left open. With CONSULT_LOAD=1 (make bench)
// 100 clients do so; otherwise 12.
func TestManyCancelsLeaveNothingOpen(t *testing.T) {
	t.Parallel()
	n := 12
	if testing.Short() {
		n = 4
	}
	if os.Getenv("CONSULT_LOAD") == "1" {
		n = 100
	}
	r := newRig(t, Config{MaxWorkers: n})
	r.up.SetDefault(fake.Script{Steps: []fake.Step{fake.Text("begun"), fake.Hang()}})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ids := make(chan string, 1)
			rep := &idReporter{ids: ids}
			done := make(chan consultation.Result, 1)
			go func() { done <- r.eng.Start(ctx, r.request(30*time.Second), rep) }()
			id := <-ids // the first progress names the id
			out := r.eng.Cancel(context.Background(), id)
			if out.Summary == nil || (out.Summary.Kind != consultation.KindCancelled && out.Summary.Kind != consultation.KindAnswer) {
				t.Errorf("cancel of %s: %s", id, out.Text())
			}
			<-done
		})
	}
	wg.Wait()
	r.eng.Wait()
	r.wg.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		open := 0
		for _, req := range r.up.Requests() {
			select {
			case <-req.Ended():
			default:
				open++
			}
		}
		if open == 0 {
			return
		}
	}
	t.Errorf("upstream requests still open after every consultation was cancelled")
}

// idReporter passes on the id the first progress message names.
type idReporter struct {
	ids  chan string
	once sync.Once
}

func (r *idReporter) Progress(_ float64, msg string) {
	if i := strings.LastIndex(msg, ", id "); i >= 0 {
		r.once.Do(func() { r.ids <- msg[i+len(", id "):] })
	}
}

func (r *idReporter) Log(consultation.Level, string) {}
