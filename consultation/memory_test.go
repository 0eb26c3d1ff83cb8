package consultation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/results"
)

// watchGathered makes svc's gathering keep a weak pointer to each gathered tree, so a test
// can tell whether anything still holds it.
func watchGathered(svc *Service) func() []weak.Pointer[files.Gathered] {
	ch := make(chan weak.Pointer[files.Gathered], 16)
	svc.gather = func(ctx context.Context, opt files.Options) (*files.Gathered, error) {
		g, err := files.Gather(ctx, opt)
		if g != nil {
			ch <- weak.Make(g)
		}
		return g, err
	}
	return func() []weak.Pointer[files.Gathered] {
		var out []weak.Pointer[files.Gathered]
		for {
			select {
			case p := <-ch:
				out = append(out, p)
			default:
				return out
			}
		}
	}
}

// TestFinishedJobsHoldNoGatheredFiles: once a background consultation has finished, nothing
// the server keeps (its index entry, its result) holds the files it gathered, whether its
// result went to the results directory or stays in memory, answered in-band or in the
// background.
func TestFinishedJobsHoldNoGatheredFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		store      bool
		background bool
	}{
		{"saved, background", true, true},
		{"memory only, background", false, true},
		{"in-band answer", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { testFinishedJobHoldsNoGatheredFiles(t, tt.store, tt.background) })
		})
	}
}

func testFinishedJobHoldsNoGatheredFiles(t *testing.T, store, background bool) {
	cfg := JobsConfig{}
	if store {
		cfg.Store = results.Open(t.TempDir(), 0, 0, 0)
	}
	m, svc := memJobs(t, cfg)
	gathered := watchGathered(svc)
	var id string
	if background {
		m.push(memScript{memSleep(1100 * time.Millisecond), memText("done")})
		id = startRunning(t, svc, Request{Path: sampleTree(t)})
	} else {
		m.push(memAnswer("done"))
		id = summaryOf(t, svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), nil)).ID
	}
	if res := collect(svc, id, 5, nil); !strings.HasPrefix(res.Text, "done") {
		t.Fatalf("collected: %s", res.Text)
	}
	ptrs := gathered()
	if len(ptrs) != 1 {
		t.Fatalf("%d gathered trees seen, want 1", len(ptrs))
	}
	for range 3 {
		runtime.GC()
	}
	if ptrs[0].Value() != nil {
		t.Error("the gathered files are still reachable after the consultation finished")
	}
	if _, ok, _ := svc.Jobs.get(id, ""); !ok {
		t.Error("the finished consultation was forgotten, want its index entry kept")
	}
}

// TestSavedResultIsNotKeptInMemory: a finished background consultation whose result was
// saved is collected from the results directory; the server keeps no copy of its own.
func TestSavedResultIsNotKeptInMemory(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testSavedResultIsNotKeptInMemory)
}

func testSavedResultIsNotKeptInMemory(t *testing.T) {
	m, svc, store := memBackground(t)
	m.push(memScript{memSleep(1100 * time.Millisecond), memText("saved answer")})
	id := startRunning(t, svc, Request{Path: sampleTree(t)})
	if res := collect(svc, id, 5, nil); !strings.HasPrefix(res.Text, "saved answer") {
		t.Fatalf("collected: %s", res.Text)
	}
	if err := os.Remove(filepath.Join(store.Dir(), id+".json")); err != nil {
		t.Fatal(err)
	}
	if res := collect(svc, id, 1, nil); strings.Contains(res.Text, "saved answer") || !res.IsError {
		t.Errorf("collected again after its record was removed: got %q, want no copy in memory", res.Text)
	}
}

// TestMemoryOnlyResultsAreBounded: without a results directory, finished consultations keep
// their results in memory within the server's byte bound, the oldest forgotten first.
func TestMemoryOnlyResultsAreBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testMemoryOnlyResultsAreBounded)
}

func testMemoryOnlyResultsAreBounded(t *testing.T) {
	m, svc := memJobs(t, JobsConfig{})
	answer := strings.Repeat("a line of the answer\n", 2000) // 42 KB, kept twice (text and summary)
	svc.Jobs.keptMax = 3 * 2 * len(answer)
	var ids []string
	for range 5 {
		m.push(memAnswer(answer))
		res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 5 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
		if res.IsError {
			t.Fatalf("consultation: %s", res.Text)
		}
		ids = append(ids, summaryOf(t, res).ID)
	}
	svc.Jobs.mu.Lock()
	kept, n := svc.Jobs.kept, len(svc.Jobs.jobs)
	svc.Jobs.mu.Unlock()
	if kept > svc.Jobs.keptMax || n != 2 {
		t.Errorf("kept %d bytes in %d jobs, want at most %d bytes in 2", kept, n, svc.Jobs.keptMax)
	}
	for i, id := range ids {
		res := collect(svc, id, 1, nil)
		if forgotten := i < 3; forgotten != strings.HasPrefix(res.Text, "Unknown id") {
			t.Errorf("consultation %d of 5: forgotten %v, got %.60q", i+1, forgotten, res.Text)
		}
	}
}

// TestUnwritableResultsDirPromisesMemoryOnly: when the running record cannot be written (a
// file stands where the results directory should be), "still running" says the answer is
// kept in memory only, and it is still collected from memory once finished.
func TestUnwritableResultsDirPromisesMemoryOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testUnwritableResultsDirPromisesMemoryOnly)
}

func testUnwritableResultsDirPromisesMemoryOnly(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := results.Open(filepath.Join(blocker, "results"), 0, 0, 0)
	m, svc := memJobs(t, JobsConfig{Store: store})
	m.push(memScript{memSleep(1100 * time.Millisecond), memText("kept in memory")})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Timeout: 1 * time.Second, OnTimeout: OnTimeoutContinue}), nil)
	if strings.Contains(res.Text, "across server restarts") || !strings.Contains(res.Text, "kept in memory only") || !strings.Contains(res.Text, "cannot be written") {
		t.Errorf("running result with an unwritable results directory:\n%s", res.Text)
	}
	id := summaryOf(t, res).ID
	if got := collect(svc, id, 5, nil); !strings.HasPrefix(got.Text, "kept in memory") {
		t.Errorf("collected: %s", got.Text)
	}
	if _, err := store.Load(id); !errors.Is(err, results.ErrNotFound) && !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("store.Load: got %v, want nothing saved", err)
	}
}
