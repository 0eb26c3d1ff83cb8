package consultation

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/internal/results"
)

// asUnknown is res's text with id replaced by a placeholder, to compare the answer about
// one id with the answer about another.
func asUnknown(res Result, id string) string {
	return strings.ReplaceAll(res.Text, id, "<id>")
}

// TestOwnersSeeOnlyTheirConsultations: a consultation belongs to the owner of the call that
// started it. Another owner does not see it listed, and collecting or cancelling it by id
// gets exactly the answer an unknown id gets: while it runs, once it is saved, and from a
// server restarted on the same results directory. Its owner lists, collects and cancels it.
func TestOwnersSeeOnlyTheirConsultations(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testOwnersSeeOnlyTheirConsultations)
}

func testOwnersSeeOnlyTheirConsultations(t *testing.T) {
	m, svc, store := memBackground(t)
	alice := WithOwner(context.Background(), "alice")
	bob := WithOwner(context.Background(), "bob")
	m.push(memScript{memText("alice's partial "), memHang()})
	id := startRunningIn(alice, t, svc, Request{Path: sampleTree(t), Query: "alice's question"})

	// checkHidden checks that bob cannot tell id from an unknown id, in svc.
	checkHidden := func(t *testing.T, svc *Service, when string) {
		t.Helper()
		other := results.NewID(time.Now())
		for _, tool := range []struct {
			name string
			call func(ctx context.Context, id string) Result
		}{
			{"consultation_result", func(ctx context.Context, id string) Result {
				return svc.Collect(ctx, id, time.Second, nil)
			}},
			{"consultation_cancel", func(ctx context.Context, id string) Result {
				return svc.Cancel(ctx, id)
			}},
		} {
			got, want := tool.call(bob, id), tool.call(bob, other)
			if asUnknown(got, id) != asUnknown(want, other) || got.IsError != want.IsError {
				t.Errorf("%s: %s by another owner: got %q, want the answer to an unknown id %q", when, tool.name, got.Text, want.Text)
			}
		}
		list := svc.Collect(bob, "", 0, nil)
		if strings.Contains(list.Text, id) || len(summaryOf(t, list).Consultations) != 0 {
			t.Errorf("%s: another owner's listing shows it:\n%s", when, list.Text)
		}
	}

	checkHidden(t, svc, "running")
	if list := svc.Collect(alice, "", 0, nil); !strings.Contains(list.Text, id) || !strings.Contains(list.Text, "alice's question") {
		t.Errorf("the owner's listing lacks it:\n%s", list.Text)
	}
	if got := svc.Jobs.Running(); got != 1 {
		t.Fatalf("%d jobs running after another owner's cancel, want 1", got)
	}

	res := svc.Cancel(alice, id)
	if res.IsError || !strings.Contains(res.Text, "Cancelled consultation "+id) {
		t.Fatalf("the owner's cancel: %s", res.Text)
	}
	if rec, err := store.Load(id); err != nil || rec.Owner != "alice" {
		t.Fatalf("saved record: owner %q, %v; want alice", rec.Owner, err)
	}
	checkHidden(t, svc, "saved")

	restarted := &Service{Counter: svc.Counter, Model: svc.Model, DefaultModel: svc.DefaultModel,
		Jobs: NewJobs(JobsConfig{Store: results.Open(store.Dir(), 0, 0, 0)})}
	t.Cleanup(func() { shutdownNow(restarted.Jobs) })
	checkHidden(t, restarted, "after a restart")
	if got := restarted.Collect(alice, id, 0, nil); !strings.Contains(got.Text, "alice's partial") {
		t.Errorf("the owner collecting after a restart: got %q", got.Text)
	}
	if got := collect(restarted, id, 1, nil); !strings.HasPrefix(got.Text, "Unknown id") {
		t.Errorf("a caller with no owner (stdio) collecting another owner's: got %q, want unknown", got.Text)
	}
}
