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

// TestNeighbourCannotEvictUncollected: over a results directory with room for three
// answers, a finished background answer nobody collected yet survives any number of another
// owner's answers, collected or not: theirs make room for theirs. A third owner who
// finds the directory full of others' uncollected answers gets their answer whole with a
// warning that it was not kept, and a background consultation refused before anything is
// sent; the first owner then collects the answer.
func TestNeighbourCannotEvictUncollected(t *testing.T) {
	t.Parallel()
	store := results.Open(t.TempDir(), time.Hour, 64<<10, 3) // three answers of these, by size and count
	r := newRig(t, Config{Store: store})
	answer := strings.Repeat("a line of a paid answer\n", 340) // 8 KB; a record holds it twice
	r.up.SetDefault(fake.Answer(answer))

	victim := WithOwner(context.Background(), "victim")
	r.gate = make(chan struct{})
	started := r.eng.Start(victim, r.request(time.Second), nil)
	if kindOf(t, started) != consultation.KindRunning {
		t.Fatalf("the victim's consultation: %s", started.Text())
	}
	id := started.Summary.ID
	close(r.gate)
	r.wg.Wait()

	neighbour := WithOwner(context.Background(), "neighbour")
	for i := range 12 {
		res := r.eng.Consult(neighbour, r.failMode(), nil)
		if i%2 == 0 && i < 8 {
			res = r.eng.Paged(neighbour, res, DefaultPageBytes) // returned whole: collected
		}
		if res.IsError {
			t.Fatalf("neighbour's answer %d: %s", i, res.Text())
		}
		if _, err := store.Load(id); err != nil {
			t.Fatalf("after the neighbour's answer %d the victim's uncollected answer is gone: %v", i, err)
		}
	}

	third := WithOwner(context.Background(), "third")
	res := r.eng.Consult(third, r.failMode(), nil)
	if res.IsError || res.Summary.ID != "" || len(res.Summary.Warnings) != 1 || !strings.Contains(res.Summary.Warnings[0], "was not kept") {
		t.Errorf("an answer that finds the directory full: id %q, warnings %q: %s", res.Summary.ID, res.Summary.Warnings, res.Text())
	}
	before := r.up.Count("/chat/completions")
	refused := r.eng.Start(third, r.request(time.Second), nil)
	if !refused.IsError || refused.Summary.Error.Class != consultation.ClassOverloaded || !strings.Contains(refused.Text(), "until they are collected or expire") {
		t.Errorf("a background consultation that finds the directory full: %s", refused.Text())
	}
	if after := r.up.Count("/chat/completions"); after != before {
		t.Errorf("the refused consultation sent %d requests", after-before)
	}

	got := r.eng.Collect(victim, id, time.Second, nil)
	if got.IsError || !strings.Contains(got.Text(), answer) {
		t.Fatalf("the victim's collect: %s", got.Text()[:min(300, len(got.Text()))])
	}
}
