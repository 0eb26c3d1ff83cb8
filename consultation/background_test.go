package consultation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/fake"
	"github.com/consultmcp/consult/internal/results"
)

// background starts a fake OpenRouter and a service with background jobs saving to a new
// results directory.
func background(t *testing.T) (*fake.Server, *Service, *results.Store) {
	t.Helper()
	srv, svc := upstream(t, 0)
	store := results.Open(t.TempDir(), 0, 0, 0)
	svc.Jobs = NewJobs(JobsConfig{Store: store})
	t.Cleanup(func() { shutdownNow(svc.Jobs) })
	return srv, svc, store
}

// shutdownNow stops every job at once, as a server with no grace does.
func shutdownNow(j *Jobs) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j.Shutdown(ctx)
}

var idPattern = regexp.MustCompile(`\b\d{8}-\d{6}-[a-z2-7]{26}\b`)

// startRunning makes a consultation with on_timeout "continue" and a one-second timeout that
// the upstream outlasts, checks the "still running" result and returns its id.
func startRunning(t *testing.T, svc *Service, req Request) string {
	t.Helper()
	return startRunningIn(context.Background(), t, svc, req)
}

// startRunningIn is startRunning with the call made under ctx (e.g. carrying an owner).
func startRunningIn(ctx context.Context, t *testing.T, svc *Service, req Request) string {
	t.Helper()
	req.Timeout, req.OnTimeout = time.Second, OnTimeoutContinue
	args := goReq(req)
	t0 := time.Now()
	res := svc.Consult(ctx, args, nil)
	if res.IsError {
		t.Fatalf("continue call is an error: %s", res.Text)
	}
	if d := time.Since(t0); d < time.Second || d > 1500*time.Millisecond {
		t.Errorf("the call returned after %s, want at its 1 s timeout", d)
	}
	sum := summaryOf(t, res)
	if sum.Kind != KindRunning || !idPattern.MatchString(sum.ID) {
		t.Fatalf("kind %q id %q, want running with an id; text:\n%s", sum.Kind, sum.ID, res.Text)
	}
	for _, want := range []string{"Still running in the background (timeout 1 second reached)", "id " + sum.ID, "consultation_result", "consultation_cancel", "So far: "} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("running result lacks %q:\n%s", want, res.Text)
		}
	}
	return sum.ID
}

// startHanging starts a background consultation whose model sends partial and then
// nothing, and returns its id and the model's stream, checked to be still open.
func startHanging(t *testing.T, m *memModel, svc *Service, partial string) (string, *fake.Request) {
	t.Helper()
	m.push(memScript{memText(partial), memHang()})
	id := startRunning(t, svc, Request{Path: sampleTree(t)})
	st := m.stream(t, 1) // sent: the call returned "still running" after it
	synctest.Wait()      // the fake's handler has done what it will do at this instant
	select {
	case <-st.Ended():
		t.Fatal("the stream ended before the test stopped it")
	default:
	}
	return id, st
}

func collect(svc *Service, id string, wait float64, r Reporter) Result {
	return svc.Collect(context.Background(), id, time.Duration(wait*float64(time.Second)), r)
}

func TestContinueThenCollect(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testContinueThenCollect)
}

func testContinueThenCollect(t *testing.T) {
	m, svc, store := memBackground(t)
	m.push(memScript{memThink("reading "), memText("main "), memSleep(1500 * time.Millisecond), memText("prints "), memText("hello.")})
	id := startRunning(t, svc, Request{Path: sampleTree(t)})

	rec := &recorder{}
	svc.Heartbeat = 200 * time.Millisecond
	res := collect(svc, id, 5, rec)
	if res.IsError || !strings.HasPrefix(res.Text, "main prints hello.") || !strings.Contains(res.Text, "\n---\nmodel ") {
		t.Fatalf("collected result: error=%v\n%s", res.IsError, res.Text)
	}
	if sum := summaryOf(t, res); sum.Kind != KindAnswer || sum.ID != id || sum.Answer != "main prints hello." {
		t.Errorf("summary kind %q id %q answer %q", sum.Kind, sum.ID, sum.Answer)
	}
	// Saved before it was reported.
	saved, err := store.Load(id)
	if err != nil || saved.Status != results.Done || saved.Answer != "main prints hello." || saved.IsError || saved.Text != res.Text {
		t.Fatalf("saved record: %+v, %v", saved, err)
	}
	if got := m.count(); got != 1 {
		t.Errorf("%d upstream requests, want 1: the background call must not re-send", got)
	}
	// Collecting again returns the same result.
	if again := collect(svc, id, 1, nil); again.Text != res.Text {
		t.Errorf("second collection differs:\n%s", again.Text)
	}
}

func TestContinueAnswersInBandWhenFast(t *testing.T) {
	t.Parallel()
	srv, svc, store := background(t)
	srv.Push(fake.Answer("main prints hello."))
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	sum := summaryOf(t, res)
	if res.IsError || sum.Kind != KindAnswer || !strings.HasPrefix(res.Text, "main prints hello.") {
		t.Fatalf("fast continue call: kind %q\n%s", sum.Kind, res.Text)
	}
	if _, err := store.Load(sum.ID); !errors.Is(err, results.ErrNotFound) {
		t.Errorf("an answer delivered in-band was saved (or the id is odd): %v", err)
	}
	if got := collect(svc, sum.ID, 1, nil); got.Text != res.Text {
		t.Errorf("collecting an in-band answer by its id: %s", got.Text)
	}
}

func TestCollectWhileRunningSendsHeartbeats(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testCollectWhileRunningSendsHeartbeats)
}

func testCollectWhileRunningSendsHeartbeats(t *testing.T) {
	m, svc, _ := memBackground(t)
	m.push(memScript{memThink("thinking hard "), memHang()})
	svc.Heartbeat = 200 * time.Millisecond
	id := startRunning(t, svc, Request{Path: sampleTree(t)})
	rec := &recorder{}
	t0 := time.Now()
	res := collect(svc, id, 2, rec)
	if d := time.Since(t0); d != 2*time.Second {
		t.Errorf("waited %s, want the 2 s wait", d)
	}
	sum := summaryOf(t, res)
	if res.IsError || sum.Kind != KindRunning || sum.ID != id {
		t.Fatalf("kind %q error %v:\n%s", sum.Kind, res.IsError, res.Text)
	}
	if !strings.Contains(res.Text, "not finished within wait 2 seconds") || sum.Streamed == nil || sum.Streamed.Reasoning == 0 || sum.Files != 3 {
		t.Errorf("running result should say why and what it has: streamed %+v files %d\n%s", sum.Streamed, sum.Files, res.Text)
	}
	progress, messages, at := rec.snapshot()
	// One every 200 ms of the wait, up to the quiet time before its end: at 200 ms to 1.4 s.
	if len(progress) != 7 {
		t.Fatalf("%d heartbeats in a 2 s wait at 200 ms, want 7 (none in the last %s): at %v", len(progress), quietBeforeEnd, at)
	}
	for i := range progress {
		if got, want := at[i].Sub(t0), time.Duration(i+1)*200*time.Millisecond; got != want {
			t.Errorf("heartbeat %d at %s into the wait, want %s", i, got, want)
		}
		if i > 0 && progress[i] <= progress[i-1] {
			t.Errorf("progress not increasing: %v", progress)
		}
		if !strings.Contains(messages[i], "model thinking") {
			t.Errorf("heartbeat %q does not say the model is thinking", messages[i])
		}
		if at[i].After(t0.Add(2*time.Second - quietBeforeEnd)) {
			t.Errorf("heartbeat %d sent %s into a 2 s wait, inside the quiet time", i, at[i].Sub(t0))
		}
	}
}

func TestCancelStopsUpstreamAndKeepsPartial(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testCancelStopsUpstreamAndKeepsPartial)
}

func testCancelStopsUpstreamAndKeepsPartial(t *testing.T) {
	m, svc, store := memBackground(t)
	id, req := startHanging(t, m, svc, "The first half")
	t0 := time.Now()
	res := svc.Cancel(context.Background(), id)
	if res.IsError || !strings.Contains(res.Text, "Cancelled consultation "+id) || !strings.Contains(res.Text, "The first half") {
		t.Fatalf("cancel result: error=%v\n%s", res.IsError, res.Text)
	}
	synctest.Wait() // the fake's handler sees the request end at this instant, or never
	select {
	case <-req.Ended():
		if d := req.EndedAt().Sub(t0); d != 0 {
			t.Errorf("the model's stream ended %s after the cancel, want at once", d)
		}
	default:
		t.Fatal("the model's stream is still open after consultation_cancel returned")
	}
	got := collect(svc, id, 1, nil)
	if !got.IsError || !strings.Contains(got.Text, "Cancelled with consultation_cancel while receiving the answer") ||
		!strings.Contains(got.Text, "Partial answer (cut off by the cancellation):\nThe first half") {
		t.Errorf("collecting a cancelled consultation:\n%s", got.Text)
	}
	saved, err := store.Load(id)
	if err != nil || saved.Status != results.Done || !saved.IsError || saved.Answer != "The first half" {
		t.Errorf("saved record after cancel: %+v, %v", saved, err)
	}
	if again := svc.Cancel(context.Background(), id); again.IsError || !strings.Contains(again.Text, "had already finished") {
		t.Errorf("cancelling twice: %s", again.Text)
	}
}

func TestResultSurvivesRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testResultSurvivesRestart)
}

func testResultSurvivesRestart(t *testing.T) {
	m, first, _ := memBackground(t)
	dir := first.Jobs.store.Dir()
	m.push(memScript{memSleep(1300 * time.Millisecond), memText("main "), memText("prints hello.")})
	id := startRunning(t, first, Request{Path: sampleTree(t)})
	// The server stops; the grace is long enough for the answer to arrive and be saved.
	grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	first.Jobs.Shutdown(grace)
	cancel()

	_, second := memUpstream(t) // another process, with a model of its own
	second.Jobs = NewJobs(JobsConfig{Store: results.Open(dir, 0, 0, 0)})
	res := collect(second, id, 1, nil)
	if res.IsError || !strings.HasPrefix(res.Text, "main prints hello.") {
		t.Fatalf("collected after restart: error=%v\n%s", res.IsError, res.Text)
	}
	if sum := res.Summary; sum == nil || sum.Kind != KindAnswer || sum.ID != id || sum.Answer != "main prints hello." {
		t.Errorf("saved summary %+v", sum)
	}
}

func TestShutdownSavesPartialAfterGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testShutdownSavesPartialAfterGrace)
}

func testShutdownSavesPartialAfterGrace(t *testing.T) {
	m, svc, store := memBackground(t)
	id, req := startHanging(t, m, svc, "Half an answer")
	grace, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	svc.Jobs.Shutdown(grace)
	if d := time.Since(t0); d != 300*time.Millisecond {
		t.Errorf("shutdown took %s, want the 300 ms grace", d)
	}
	synctest.Wait() // the fake's handler sees the request end at this instant, or never
	select {
	case <-req.Ended():
	default:
		t.Error("the model's stream is still open after shutdown")
	}
	saved, err := store.Load(id)
	if err != nil || saved.Status != results.Done || !saved.IsError || saved.Note != "saved at shutdown" ||
		!strings.Contains(saved.Text, "The server shut down while receiving the answer") || !strings.Contains(saved.Text, "Half an answer") {
		t.Fatalf("record after shutdown: %+v, %v", saved, err)
	}
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), OnTimeout: OnTimeoutContinue}), nil)
	if !res.IsError || !strings.Contains(res.Text, "shutting down") {
		t.Errorf("a new continue call during shutdown: %s", res.Text)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testExpiry)
}

func testExpiry(t *testing.T) {
	store := results.Open(t.TempDir(), time.Second, 0, 0)
	m, svc := memJobs(t, JobsConfig{Store: store})
	m.push(memScript{memSleep(1200 * time.Millisecond), memText("done")})
	id := startRunning(t, svc, Request{Path: sampleTree(t)})
	if res := collect(svc, id, 3, nil); res.IsError {
		t.Fatalf("collect: %s", res.Text)
	}
	time.Sleep(1100 * time.Millisecond)
	for name, svc := range map[string]*Service{"same server": svc, "new server": {Counter: counter, Jobs: NewJobs(JobsConfig{Store: store})}} {
		res := collect(svc, id, 1, nil)
		if !res.IsError || !strings.Contains(res.Text, "has expired: results are kept for 1 second") {
			t.Errorf("%s: collecting an expired result: %s", name, res.Text)
		}
	}
}

func TestUnknownAndBadIDs(t *testing.T) {
	t.Parallel()
	_, svc, _ := background(t)
	cases := []struct {
		name string
		id   string
		wait time.Duration
		want string
	}{
		{"unknown", results.NewID(time.Now()), 0, "Unknown id: this server has no consultation"},
		{"older than any result", results.NewID(time.Now().Add(-72 * time.Hour)), 0, "has expired"},
		{"malformed", "../../etc/passwd", 0, `id "../../etc/passwd" is not a consultation id`},
		{"wait too long", results.NewID(time.Now()), 601 * time.Second, "wait must be a number of seconds from 1 to 600 (default 20 seconds); got 601"},
		{"wait negative", "", -time.Second, "wait must be a number of seconds from 1 to 600"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := svc.Collect(context.Background(), tc.id, tc.wait, nil)
			if !res.IsError || !strings.Contains(res.Text, tc.want) {
				t.Errorf("got error=%v %q, want an error containing %q", res.IsError, res.Text, tc.want)
			}
		})
	}
	for _, id := range []string{"", " ", "nope", results.NewID(time.Now())} {
		if res := svc.Cancel(context.Background(), id); !res.IsError {
			t.Errorf("cancel %q: %s", id, res.Text)
		}
	}
	if res := svc.Cancel(context.Background(), ""); !strings.Contains(res.Text, `argument "id" is empty: give the id a consultation returned with "still running"`) {
		t.Errorf("cancel without an id: %s", res.Text)
	}
}

func TestConcurrentBackgroundConsultations(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testConcurrentBackgroundConsultations)
}

func testConcurrentBackgroundConsultations(t *testing.T) {
	m, svc, _ := memBackground(t)
	m.setFunc(func(prompt string) memScript {
		q := regexp.MustCompile(`question (\d+)`).FindString(prompt)
		return memScript{memSleep(1300 * time.Millisecond), memText("answer to " + q)}
	})
	dir := sampleTree(t)
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i] = startRunning(t, svc, Request{Path: dir, Query: fmt.Sprintf("question %d", i)}) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s given twice", id)
		}
		seen[id] = true
	}
	answers := make([]string, n)
	for i := range n {
		wg.Go(func() { answers[i] = collect(svc, ids[i], 5, nil).Text })
	}
	wg.Wait()
	for i, a := range answers {
		if want := fmt.Sprintf("answer to question %d\n", i); !strings.HasPrefix(a, want) {
			t.Errorf("consultation %d collected %q, want %q", i, a, want)
		}
	}
	if got := svc.Jobs.Running(); got != 0 {
		t.Errorf("%d jobs still running", got)
	}
}

func TestClientCancelBeforeSendingStops(t *testing.T) {
	t.Parallel()
	srv, svc, _ := background(t)
	release := make(chan struct{})
	svc.gather = func(ctx context.Context, o files.Options) (*files.Gathered, error) {
		close(release)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-release; cancel() }()
	res := svc.Consult(ctx, goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	if !res.IsError || !strings.Contains(res.Text, "Cancelled by the client while gathering files") {
		t.Fatalf("cancel while gathering: %s", res.Text)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d upstream requests after a cancel before sending", n)
	}
	if got := svc.Jobs.Running(); got != 0 {
		t.Errorf("%d jobs still running", got)
	}
}

// TestClientGaveUpAfterSendingContinues: a client that gives up waiting (its own time limit)
// after the request was sent leaves the consultation running, to be collected.
func TestClientGaveUpAfterSendingContinues(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testClientGaveUpAfterSendingContinues)
}

func testClientGaveUpAfterSendingContinues(t *testing.T) {
	m, svc, _ := memBackground(t)
	m.push(memScript{memSleep(800 * time.Millisecond), memText("kept")})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		m.stream(t, 1)
		cancel(ErrClientGaveUp)
	}()
	res := svc.Consult(ctx, goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	sum := summaryOf(t, res)
	if res.IsError || sum.Kind != KindRunning || !strings.Contains(res.Text, "the client cancelled the call") {
		t.Fatalf("cancel after sending: kind %q\n%s", sum.Kind, res.Text)
	}
	if got := collect(svc, sum.ID, 3, nil); !strings.HasPrefix(got.Text, "kept") {
		t.Errorf("the paid answer was not kept: %s", got.Text)
	}
}

func TestBackgroundLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBackgroundLimit)
}

func testBackgroundLimit(t *testing.T) {
	m, svc := memJobs(t, JobsConfig{Store: results.Open(t.TempDir(), 0, 0, 0), Limit: 1500 * time.Millisecond})
	m.push(memScript{memText("so far"), memHang()})
	id := startRunning(t, svc, Request{Path: sampleTree(t)})
	res := collect(svc, id, 3, nil)
	if !res.IsError || !strings.Contains(res.Text, "Stopped at the server's background limit (1.5 seconds) while receiving the answer") ||
		!strings.Contains(res.Text, "Partial answer (cut off at the background limit):\nso far") {
		t.Errorf("past the background limit:\n%s", res.Text)
	}
}

func TestListWithoutID(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testListWithoutID)
}

func testListWithoutID(t *testing.T) {
	m, svc, store := memBackground(t)
	m.push(memScript{memThink("hmm"), memHang()})
	running := startRunning(t, svc, Request{Path: sampleTree(t), Query: "Which  package\nprints hello?"})
	old := results.NewID(time.Now().Add(-time.Hour))
	if err := store.Save(results.Record{ID: old, Status: results.Done, Created: time.Now().Add(-time.Hour), Query: "An older question", Text: "old answer"}); err != nil {
		t.Fatal(err)
	}
	res := svc.Collect(context.Background(), "", 0, nil)
	if res.IsError {
		t.Fatal(res.Text)
	}
	lines := strings.Split(res.Text, "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], running+" · running · ") || !strings.HasSuffix(lines[1], "Which package prints hello?") ||
		!strings.Contains(lines[2], old+" · finished · started by another session · started 60 minutes ago · An older question") {
		t.Errorf("listing:\n%s", res.Text)
	}
	if sum := summaryOf(t, res); sum.Kind != KindList || len(sum.Consultations) != 2 || sum.Consultations[0].ID != running ||
		sum.Consultations[0].OtherSession || !sum.Consultations[1].OtherSession {
		t.Errorf("structured listing: %+v", sum)
	}
}

// TestOtherProcess covers records of consultations run by other server processes: one alive
// (polled until its result appears) and one whose process is gone (lost).
func TestOtherProcess(t *testing.T) {
	t.Parallel()
	_, svc, store := background(t)
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Skip("cannot start a second process:", err)
	}
	defer other.Process.Kill()
	id := results.NewID(time.Now())
	rec := results.Record{ID: id, Status: results.Running, PID: other.Process.Pid, Created: time.Now(), Query: "q"}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(600 * time.Millisecond)
		rec.Status, rec.Text = results.Done, "answered elsewhere"
		if err := store.Save(rec); err != nil {
			t.Error(err)
		}
	}()
	if res := collect(svc, id, 3, nil); res.IsError || res.Text != "answered elsewhere" {
		t.Errorf("collecting from another process: %s", res.Text)
	}

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip(err)
	}
	lost := results.NewID(time.Now())
	if err := store.Save(results.Record{ID: lost, Status: results.Running, PID: gone.Process.Pid, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if res := svc.Cancel(context.Background(), lost); !res.IsError || !strings.Contains(res.Text, "is not running") {
		t.Errorf("cancelling a lost consultation: %s", res.Text)
	}
	if res := collect(svc, lost, 1, nil); !res.IsError || !strings.Contains(res.Text, "stopped before finishing") {
		t.Errorf("collecting a lost consultation: %s", res.Text)
	}
}

func TestContinueWithoutJobsRefused(t *testing.T) {
	t.Parallel()
	_, svc := upstream(t, 0)
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), OnTimeout: OnTimeoutContinue}), nil)
	if !res.IsError || !strings.Contains(res.Text, "keeps no background consultations") {
		t.Errorf("continue without jobs: %s", res.Text)
	}
	if res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), OnTimeout: "later"}), nil); !res.IsError ||
		!strings.Contains(res.Text, `on_timeout must be "fail"`) {
		t.Errorf("bad on_timeout: %s", res.Text)
	}
}

func TestContinueWritesOutputFile(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testContinueWritesOutputFile)
}

func testContinueWritesOutputFile(t *testing.T) {
	m, svc, store := memBackground(t)
	m.push(memScript{memSleep(1300 * time.Millisecond), memText("written answer")})
	out := filepath.Join(t.TempDir(), "answer.md")
	id := startRunning(t, svc, Request{Path: sampleTree(t), OutputFile: out})
	res := collect(svc, id, 5, nil)
	if res.IsError || !strings.HasPrefix(res.Text, "Answer written to "+out) {
		t.Fatalf("collected: %s", res.Text)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != "written answer" {
		t.Errorf("output_file holds %q, %v", got, err)
	}
	if saved, err := store.Load(id); err != nil || saved.Answer != "written answer" {
		t.Errorf("the results directory should hold the answer too: %+v %v", saved, err)
	}
}

// TestUserCancelAfterSendingStops: a call the user stopped (cause ErrUserCancelled, or a
// plain cancellation) stops its consultation even after the request was sent: the upstream
// request is closed and nothing goes on in the background.
func TestUserCancelAfterSendingStops(t *testing.T) {
	t.Parallel()
	for name, cause := range map[string]error{"user cancelled": ErrUserCancelled, "plain cancel": context.Canceled} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, svc, _ := background(t)
			srv.Push(fake.Script{Steps: []fake.Step{fake.Text("so far"), fake.Hang()}})
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				for srv.Count("/chat/completions") == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				var req *fake.Request
				for _, r := range srv.Requests() {
					if strings.Contains(r.Path, "chat/completions") {
						req = r
					}
				}
				time.Sleep(50 * time.Millisecond)
				cancel(cause)
				select {
				case <-req.Ended():
				case <-time.After(2 * time.Second):
					t.Error("the upstream request was not closed")
				}
			}()
			res := svc.Consult(ctx, goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
			if !res.IsError || summaryOf(t, res).Kind != KindError {
				t.Fatalf("user cancel after sending: %s", res.Text)
			}
			if got := svc.Jobs.Running(); got != 0 {
				t.Errorf("%d consultations still running, want 0", got)
			}
		})
	}
}

// TestFirstProgressCarriesID: in a server process too (no worker), the first progress
// notification of a continue-mode call goes out at once and names the id.
func TestFirstProgressCarriesID(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testFirstProgressCarriesID)
}

func testFirstProgressCarriesID(t *testing.T) {
	m, svc, _ := memBackground(t)
	svc.Heartbeat = time.Hour
	m.push(memScript{memSleep(300 * time.Millisecond), memText("done")})
	rec := &recorder{}
	start := time.Now()
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), rec)
	_, msgs, at := rec.snapshot()
	id := summaryOf(t, res).ID
	if id == "" || len(msgs) != 1 || !strings.HasSuffix(msgs[0], ", id "+id) || at[0] != start {
		t.Errorf("progress %q for id %q, want one at once naming it", msgs, id)
	}
}

// TestListThisSessionFirst: a listing shows the calling session's consultations first and
// marks the others (another session of the same owner, another server) as such, in text
// and structure; no other session's consultation comes first.
func TestListThisSessionFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testListThisSessionFirst)
}

func testListThisSessionFirst(t *testing.T) {
	m, svc, store := memBackground(t)
	m.setDefault(memScript{memText("x"), memHang()})
	a, b := WithSession(context.Background(), "session-a"), WithSession(context.Background(), "session-b")
	mine := startRunningIn(a, t, svc, Request{Path: sampleTree(t), Query: "mine"})
	theirs := startRunningIn(b, t, svc, Request{Path: sampleTree(t), Query: "theirs"})
	elsewhere := results.NewID(time.Now().Add(time.Minute))
	if err := store.Save(results.Record{ID: elsewhere, Status: results.Done, Created: time.Now().Add(time.Minute), Session: "session-a", Instance: "another-server", Query: "newest, from another server", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ctx   context.Context
		first string
	}{{a, mine}, {b, theirs}} {
		res := svc.Collect(tc.ctx, "", 0, nil)
		sum := summaryOf(t, res)
		if len(sum.Consultations) != 3 || sum.Consultations[0].ID != tc.first || sum.Consultations[0].OtherSession {
			t.Fatalf("listing for %s: %+v\n%s", SessionFrom(tc.ctx), sum.Consultations, res.Text)
		}
		for _, e := range sum.Consultations[1:] {
			if !e.OtherSession || !strings.Contains(res.Text, e.ID+" · "+e.Status+" · started by another session") {
				t.Errorf("entry %s not marked as another session's:\n%s", e.ID, res.Text)
			}
		}
	}
}
