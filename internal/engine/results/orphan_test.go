package results

import (
	"testing"
	"time"
)

// TestOrphanMarkers: a marker keeps its owner, a second write keeps the first, a listing
// finds it, and of two takers only one takes it.
func TestOrphanMarkers(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir(), 0, 0, 0)
	id := NewID(time.Now())
	if s.IsOrphan(id) {
		t.Fatal("marked before any write")
	}
	if err := s.WriteOrphan(id, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteOrphan(id, "mallory"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Orphans()
	if err != nil || len(got) != 1 || got[0] != (Orphan{ID: id, Owner: "alice"}) {
		t.Fatalf("Orphans() = %v, %v; want [{%s alice}]", got, err, id)
	}
	if !s.IsOrphan(id) {
		t.Error("not marked after a write")
	}
	if !s.TakeOrphan(id) {
		t.Error("the first take did not take it")
	}
	if s.TakeOrphan(id) {
		t.Error("a second take took it again")
	}
	if got, _ := s.Orphans(); len(got) != 0 {
		t.Errorf("Orphans() after the take = %v", got)
	}
	if s.TakeOrphan("../x") || s.WriteOrphan("../x", "a") == nil {
		t.Error("a malformed id was used")
	}
}
