//go:build unix

package consultation

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/fake"
	"github.com/consultmcp/consult/internal/results"
	"github.com/consultmcp/consult/providers"

	"github.com/consultmcp/consult/internal/testrun"
)

// The worker tests start this test binary again as a worker (see TestMain): a real process
// with its own pid, signalled as the server signals a worker.
const testWorkerEnv = "CONSULT_TEST_WORKER_JOB"

// testWorkerSpec is the job file of a test worker.
type testWorkerSpec struct {
	Job       WorkerJob     `json:"job"`
	Dir       string        `json:"dir"`
	Upstream  string        `json:"upstream"`
	Heartbeat time.Duration `json:"heartbeat"`
}

func TestMain(m *testing.M) {
	if path := os.Getenv(testWorkerEnv); path != "" {
		if err := runTestWorker(path); err != nil {
			fmt.Fprintln(os.Stderr, "test worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	testrun.SetParallel()
	os.Exit(m.Run())
}

// runTestWorker is a worker process: the job's consultation against the fake upstream,
// stopped by SIGTERM (ErrCancelledByTool) or SIGINT (ErrUserCancelled), as cmd/consult's
// worker is.
func runTestWorker(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec testWorkerSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return err
	}
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "sk-test-key-123456", BaseURL: spec.Upstream,
		HTTPClient: &http.Client{Transport: providers.ActivityTransport(nil)}})
	if err != nil {
		return err
	}
	svc := &Service{Counter: counter, Model: p, Heartbeat: spec.Heartbeat,
		Jobs: NewJobs(JobsConfig{Store: results.Open(spec.Dir, 0, 0, 0), Limit: spec.Job.Limit})}
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if <-sigs == syscall.SIGINT {
			cancel(ErrUserCancelled)
		} else {
			cancel(ErrCancelledByTool)
		}
	}()
	return svc.RunWorker(ctx, spec.Job)
}

// workers returns a service whose continue-mode consultations run in worker processes
// against a fake upstream, with a short heartbeat.
func workers(t *testing.T, maxWorkers int) (*fake.Server, *Service, *results.Store) {
	t.Helper()
	srv, svc := upstream(t, 0)
	store := results.Open(t.TempDir(), 0, 0, 0)
	svc.Heartbeat = 100 * time.Millisecond
	var pids []int
	launch := func(job WorkerJob) (int, error) {
		data, err := json.Marshal(testWorkerSpec{Job: job, Dir: store.Dir(), Upstream: srv.BaseURL(), Heartbeat: svc.Heartbeat})
		if err != nil {
			return 0, err
		}
		path, err := store.WriteJob(job.ID, data)
		if err != nil {
			return 0, err
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), testWorkerEnv+"="+path)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		pids = append(pids, cmd.Process.Pid)
		go cmd.Wait()
		return cmd.Process.Pid, nil
	}
	svc.Jobs = NewJobs(JobsConfig{Store: store, Launcher: launch, MaxWorkers: maxWorkers})
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return srv, svc, store
}

// TestWorkerRelaysProgress: the first progress notification goes out at once and names the
// id; while the worker runs, a waiting call relays the worker's own progress (its reasoning
// tokens) and "still running" carries its figures. (A worker's answer collected:
// TestWorkerCancelCauses/the_client_gave_up_waiting.)
func TestWorkerRelaysProgress(t *testing.T) {
	t.Parallel()
	srv, svc, store := workers(t, 0)
	srv.Push(fake.Script{Steps: []fake.Step{fake.Think("let me think about this"), fake.Hang()}})
	rec := &recorder{}
	start := time.Now()
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 1 * time.Second, OnTimeout: OnTimeoutContinue}), rec)
	sum := summaryOf(t, res)
	if res.IsError || sum.Kind != KindRunning || !idPattern.MatchString(sum.ID) {
		t.Fatalf("want still running with an id: %s", res.Text)
	}
	_, msgs, at := rec.snapshot()
	// At once: well before the first regular heartbeat (10 s), with room for a busy machine.
	if len(msgs) == 0 || !strings.Contains(msgs[0], "id "+sum.ID) || at[0].Sub(start) > 500*time.Millisecond {
		t.Fatalf("first progress: %q (%d messages), want one at once naming id %s", msgs, len(msgs), sum.ID)
	}
	// A worker (a race-enabled test binary here) may take a while to start: wait for it to
	// report reasoning.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := store.Load(sum.ID); err == nil && r.Progress != nil && r.Progress.ReasoningTokens > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker reported no reasoning")
		}
	}
	waiting := &recorder{}
	res = collect(svc, sum.ID, 1, waiting)
	sum = summaryOf(t, res)
	if sum.Kind != KindRunning || sum.Streamed == nil || sum.Streamed.Reasoning == 0 || sum.Files == 0 || !strings.Contains(res.Text, "reasoning tokens") {
		t.Errorf("still running without the worker's figures: %+v\n%s", sum, res.Text)
	}
	if _, msgs, _ := waiting.snapshot(); len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1], "reasoning tokens") {
		t.Errorf("no relayed worker progress in %q", msgs)
	}
}

// TestWorkerCancelCauses: a call the user stopped (ErrUserCancelled, or a plain
// cancellation) stops its worker and closes the upstream request; one whose client gave up
// waiting (ErrClientGaveUp) leaves it running, to be collected.
func TestWorkerCancelCauses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cause error
		stops bool
	}{{ErrUserCancelled, true}, {context.Canceled, true}, {ErrClientGaveUp, false}} {
		t.Run(tc.cause.Error(), func(t *testing.T) {
			t.Parallel()
			srv, svc, _ := workers(t, 0)
			srv.Push(fake.Script{Steps: []fake.Step{fake.Text("so far"), fake.Sleep(800 * time.Millisecond), fake.Text(" and the rest")}})
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				for srv.Count("/chat/completions") == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(150 * time.Millisecond)
				cancel(tc.cause)
			}()
			res := svc.Consult(ctx, goReq(Request{Path: sampleTree(t), Timeout: 10 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
			sum := summaryOf(t, res)
			req := completionRequest(t, srv)
			if !tc.stops {
				if sum.Kind != KindRunning {
					t.Fatalf("the client gave up: want still running, got %s", res.Text)
				}
				if got := collect(svc, sum.ID, 5, nil); got.IsError || !strings.HasPrefix(got.Text, "so far and the rest") {
					t.Errorf("collect: %s", got.Text)
				}
				return
			}
			if !res.IsError || !strings.Contains(res.Text, "Cancelled by the client (the user stopped the call)") || !strings.Contains(res.Text, "Partial answer (cut off by the cancellation):\nso far") {
				t.Fatalf("the user stopped the call: want the worker stopped with what it had, got %s", res.Text)
			}
			select {
			case <-req.Ended():
			case <-time.After(time.Second):
				t.Fatal("the upstream request is still open")
			}
			if !req.ClientGone() {
				t.Error("the upstream request ran to its end instead of being closed")
			}
		})
	}
}

// TestWorkerLimit: beyond MaxWorkers live workers (counted from the records, whichever
// server started them) a continue-mode call is refused, naming the flag.
func TestWorkerLimit(t *testing.T) {
	t.Parallel()
	srv, svc, _ := workers(t, 1)
	srv.SetDefault(fake.Script{Steps: []fake.Step{fake.Text("so far"), fake.Hang()}})
	first := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 1 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	if summaryOf(t, first).Kind != KindRunning {
		t.Fatalf("first: %s", first.Text)
	}
	second := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 1 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	if !second.IsError || !strings.Contains(second.Text, "--background-workers") {
		t.Errorf("second over the limit: %s", second.Text)
	}
}

// TestWorkerIdentity: a running record names its worker by pid and start time (and its
// lock): a live process with the pid but another start time, or a lock nobody holds, is
// not the worker.
func TestWorkerIdentity(t *testing.T) {
	t.Parallel()
	store := results.Open(t.TempDir(), 0, 0, 0)
	j := NewJobs(JobsConfig{Store: store})
	me := os.Getpid()
	id := results.NewID(time.Now())
	rec := results.Record{ID: id, Status: results.Running, Worker: true, PID: me, PIDStart: processStart(me), Updated: time.Now()}
	if err := os.MkdirAll(store.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := holdLock(store.LockPath(id))
	if err != nil {
		t.Fatal(err)
	}
	if !j.workerAlive(rec) {
		t.Error("the live worker (right pid, start time, lock held) reads as dead")
	}
	if start := processStart(me); start != 0 {
		wrong := rec
		wrong.PIDStart = start + 1
		if j.workerAlive(wrong) {
			t.Error("a process with the worker's pid but another start time reads as the worker")
		}
	}
	lock.Close()
	unknownStart := rec
	unknownStart.PIDStart = 0
	if j.workerAlive(unknownStart) {
		t.Error("a worker whose lock nobody holds reads as alive")
	}
}

// TestReusedPIDReadsAsStopped: a running record whose pid is a live process that is not its
// worker (this test process, with another start time) reads as stopped before finishing,
// with what it had, never as running: in a listing and when collected.
func TestReusedPIDReadsAsStopped(t *testing.T) {
	t.Parallel()
	_, svc, store := workers(t, 0)
	id := results.NewID(time.Now())
	if err := store.Save(results.Record{ID: id, Status: results.Running, Worker: true, PID: os.Getpid(), PIDStart: 1,
		Created: time.Now().Add(-time.Minute), Query: "q", Answer: "what it had",
		Progress: &results.Progress{Phase: "receiving the answer", ElapsedSeconds: 60}}); err != nil {
		t.Fatal(err)
	}
	// The lock a worker would hold, left behind: held by nobody.
	if err := os.WriteFile(store.LockPath(id), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := svc.Collect(context.Background(), "", 0, nil); !strings.Contains(res.Text, id+" · stopped before finishing") {
		t.Errorf("listing: %s", res.Text)
	}
	res := collect(svc, id, 1, nil)
	if sum := summaryOf(t, res); sum.Kind != KindError || !strings.Contains(res.Text, "stopped before finishing") ||
		!strings.Contains(res.Text, "Partial answer (cut off when the worker stopped):\nwhat it had") {
		t.Errorf("collecting: %v %s", sum.Kind, res.Text)
	}
}

// TestWatchFinishedAnnounces: a worker whose call returned "still running" is announced
// once when it finishes; one whose answer the call returned in band is not.
func TestWatchFinishedAnnounces(t *testing.T) {
	t.Parallel()
	srv, svc, _ := workers(t, 0)
	// The first answer at once (in band), the second once the call has returned "still running".
	srv.Push(fake.Answer("in band"))
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before the fake closes: a held request would keep it open
	srv.SetFunc(func(*fake.Request) fake.Script {
		<-held
		return fake.Answer("later")
	})
	ready := make(chan results.Record, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Jobs.WatchFinished(ctx, 50*time.Millisecond, func(r results.Record) { ready <- r })
	if res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 10 * time.Second, OnTimeout: OnTimeoutContinue}), nil); res.IsError || !strings.HasPrefix(res.Text, "in band") {
		t.Fatalf("in band: %s", res.Text)
	}
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 1 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	id := summaryOf(t, res).ID
	if summaryOf(t, res).Kind != KindRunning {
		t.Fatalf("want still running: %s", res.Text)
	}
	release()
	select {
	case r := <-ready:
		if r.ID != id || !strings.Contains(ReadyNotice(r), id) {
			t.Errorf("announced %s, want %s", r.ID, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no announcement")
	}
	select {
	case r := <-ready:
		t.Errorf("a second announcement: %s", r.ID)
	case <-time.After(200 * time.Millisecond):
	}
}
