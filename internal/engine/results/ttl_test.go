package results

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"
)

// sharedStore opens a second store on s's directory with another TTL and the same clock:
// another server process sharing the results directory.
func sharedStore(s *Store, clk *fakeClock, ttl time.Duration) *Store {
	other := Open(s.Dir(), ttl, 0, 0)
	other.now = clk.now
	return other
}

// TestShortTTLServerKeepsOthersResults: a server started with a shorter TTL neither
// prunes, nor refuses to load, nor leaves out of its listing a record another server saved
// with a longer TTL, until that record's own expiry; and the other way round, a record
// saved with the short TTL expires by it everywhere.
func TestShortTTLServerKeepsOthersResults(t *testing.T) {
	t.Parallel()
	long, clk := newStore(t, 24*time.Hour, 0, 0)
	short := sharedStore(long, clk, time.Minute)
	kept, brief := idAt(t0, 1), idAt(t0, 2)
	mustSave(t, long, record(kept, clk))
	mustSave(t, short, record(brief, clk))

	clk.advance(10 * time.Minute)
	mustSave(t, short, record(idAt(t0, 3), clk)) // saving prunes
	if err := short.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := short.Load(kept); err != nil {
		t.Errorf("short-TTL server loading a fresh long-TTL record: got %v, want it", err)
	}
	recs, err := short.List(0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, kept) || slices.Contains(ids, brief) {
		t.Errorf("short-TTL server's listing: got %v, want %s and not %s", ids, kept, brief)
	}
	if _, err := long.Load(brief); !errors.Is(err, ErrExpired) && !errors.Is(err, ErrNotFound) {
		t.Errorf("long-TTL server loading a short-TTL record 10 min on: got %v, want it expired", err)
	}

	clk.advance(24 * time.Hour)
	if err := short.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(long.path(kept)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("long-TTL record past its own expiry: stat got %v, want pruned", err)
	}
}

// TestLoadExpiredReturnsRecord: with ErrExpired, Load returns the record, so a caller can
// tell whose it was before saying anything about it.
func TestLoadExpiredReturnsRecord(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, time.Minute, 0, 0)
	r := record(idAt(t0, 1), clk)
	r.Owner = "someone"
	mustSave(t, s, r)
	clk.advance(2 * time.Minute)
	got, err := s.Load(r.ID)
	if !errors.Is(err, ErrExpired) || got.Owner != "someone" || got.ID != r.ID {
		t.Errorf("Load of an expired record: got %q %q, %v; want its id and owner with ErrExpired", got.ID, got.Owner, err)
	}
}

// TestLegacyRecordWithoutExpiry: a record written before records carried their expiry
// (its file time is its Updated time) is kept for the reading store's TTL after Updated,
// by Load, List and Prune alike.
func TestLegacyRecordWithoutExpiry(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, time.Hour, 0, 0)
	r := record(idAt(t0, 1), clk)
	r.Version, r.Updated = recordVersion, clk.now()
	data, err := encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.path(r.ID), string(data))
	setMtime(t, s.path(r.ID), r.Updated)
	clk.advance(30 * time.Minute)
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(r.ID); err != nil {
		t.Errorf("legacy record within the TTL after pruning: got %v, want it", err)
	}
	if recs, err := s.List(0); err != nil || len(recs) != 1 {
		t.Errorf("listing: got %d records, %v; want 1", len(recs), err)
	}
	clk.advance(time.Hour)
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path(r.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("legacy record past the TTL: stat got %v, want pruned", err)
	}
}
