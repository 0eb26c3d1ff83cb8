package results

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// owned is a finished record of owner, with an answer of 1,000 bytes.
func owned(id, owner string, clk *fakeClock) Record {
	r := record(id, clk)
	r.Owner, r.Answer = owner, strings.Repeat("x", 1000)
	return r
}

// TestOthersUncollectedAnswerKept: an owner's results never push out another owner's
// result that was not collected, however many they save: their own older results go first,
// then their new result is refused (ErrFull), saying so. A collected result is removed to
// make room, whoever's it is; a running consultation's own record is always kept.
func TestOthersUncollectedAnswerKept(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, time.Hour, 1<<30, 0)
	victim := idAt(t0, 0)
	mustSave(t, s, owned(victim, "victim", clk))
	s.maxBytes = fileSize(t, s, victim) * 7 / 2 // room for three records

	// The neighbour's answers: their own oldest make room for their newest.
	var theirs []string
	for i := 1; i <= 6; i++ {
		clk.advance(time.Minute)
		id := idAt(t0, i)
		theirs = append(theirs, id)
		mustSave(t, s, owned(id, "neighbour", clk))
	}
	if got, want := recordFiles(t, s.Dir()), recordNames(victim, theirs[4], theirs[5]); !slices.Equal(got, want) {
		t.Fatalf("after the neighbour's six answers: %v, want %v (the victim's kept, the neighbour's oldest removed)", got, want)
	}

	// A third owner whose answers cannot fit without removing the others' uncollected ones
	// is refused.
	third := idAt(t0, 20)
	err := s.Save(owned(third, "third", clk))
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "until they are collected or expire") {
		t.Fatalf("a save that needs another owner's uncollected answer removed: %v, want ErrFull saying why", err)
	}
	if got, want := recordFiles(t, s.Dir()), recordNames(victim, theirs[4], theirs[5]); !slices.Equal(got, want) {
		t.Errorf("after the refused save: %v, want %v", got, want)
	}

	// Once the victim collected their answer, it may make room.
	markCollected(t, s, victim)
	mustSave(t, s, owned(third, "third", clk))
	if _, err := s.Load(victim); !errors.Is(err, ErrNotFound) {
		t.Errorf("the collected answer: %v, want it removed to make room", err)
	}

	// A running consultation's record, written before the directory filled, is kept with its
	// result even over the bound.
	running := idAt(t0, 30)
	s.maxBytes = 1 << 30
	mustSave(t, s, Record{ID: running, Status: Running, Owner: "victim", Created: clk.now()})
	s.maxBytes = fileSize(t, s, third) * 3 / 2
	mustSave(t, s, Record{ID: running, Status: Running, Owner: "victim", Created: clk.now(), Answer: strings.Repeat("partial ", 100)})
	mustSave(t, s, owned(running, "victim", clk))
	for _, id := range []string{running, third, theirs[4], theirs[5]} {
		if _, err := s.Load(id); err != nil {
			t.Errorf("Load(%s) after the admitted consultation finished over the bound: %v", id, err)
		}
	}
}

// TestCollectedMarker: MarkCollected leaves a marker that Collected reads, twice is fine,
// and the marker goes (an hour later) with its record.
func TestCollectedMarker(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, time.Hour, 0, 0)
	id := idAt(t0, 1)
	mustSave(t, s, record(id, clk))
	if s.Collected(id) {
		t.Fatal("a new record reads as collected")
	}
	markCollected(t, s, id, id)
	if !s.Collected(id) {
		t.Fatal("the marked record does not read as collected")
	}
	if err := s.MarkCollected("../x"); !errors.Is(err, ErrBadID) {
		t.Errorf("MarkCollected of a malformed id: %v", err)
	}
	clk.advance(2 * time.Hour)
	setMtime(t, s.path(id), clk.now().Add(-time.Minute))
	setMtime(t, s.Dir()+"/"+auxName(id, collectedExt), clk.now().Add(-staleTemp-time.Minute))
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, s.Dir()); len(got) != 0 {
		t.Errorf("after the record expired: %v left", got)
	}
}
