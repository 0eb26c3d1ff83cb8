package results

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestSpendLedger(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "results")
	s := Open(dir, time.Hour, 1<<20, 100)
	day := time.Date(2026, 11, 26, 23, 30, 0, 0, time.UTC)
	if got, err := s.Spent(day); err != nil || got != 0 {
		t.Fatalf("Spent before any spend = %v, %v; want 0", got, err)
	}
	if total, err := s.AddSpend(day, 0.25); err != nil || total != 0.25 {
		t.Fatalf("AddSpend = %v, %v", total, err)
	}
	// Another server on the same directory sees it and adds to it.
	other := Open(dir, time.Hour, 1<<20, 100)
	if total, err := other.AddSpend(day.Add(20*time.Minute), 0.5); err != nil || total != 0.75 {
		t.Fatalf("AddSpend from another store = %v, %v; want 0.75", total, err)
	}
	// The next UTC day starts at 0; a time zone does not move the day.
	next := day.Add(time.Hour)
	if got, _ := s.Spent(next); got != 0 {
		t.Errorf("Spent on the next UTC day = %v, want 0", got)
	}
	if got, _ := s.Spent(day.In(time.FixedZone("UTC+5", 5*3600))); got != 0.75 {
		t.Errorf("Spent of the same instant in another zone = %v, want 0.75", got)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := s.AddSpend(day, bad); err == nil {
			t.Errorf("AddSpend(%v) accepted", bad)
		}
	}
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Spent(day); got != 0.75 {
		t.Errorf("after Prune, Spent = %v, want the ledger kept (0.75)", got)
	}
}

// TestSpendLedgerConcurrent: additions from many stores at once (as from servers sharing the
// directory) are all counted: each is made under the ledger's lock.
func TestSpendLedgerConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	day := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			s := Open(dir, time.Hour, 1<<20, 100)
			for range 5 {
				if _, err := s.AddSpend(day, 0.125); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got, err := Open(dir, time.Hour, 1<<20, 100).Spent(day); err != nil || got != 10 {
		t.Errorf("Spent = %v, %v; want 80 additions of 0.125 = 10", got, err)
	}
}

// TestSpendLedgerUnreadable: a ledger consult did not write is an error, never 0 spent.
func TestSpendLedgerUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, spendFile), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Open(dir, time.Hour, 1<<20, 100)
	if got, err := s.Spent(time.Now()); err == nil {
		t.Errorf("Spent of a corrupt ledger = %v, want an error", got)
	}
	if _, err := s.AddSpend(time.Now(), 1); err == nil {
		t.Error("AddSpend onto a corrupt ledger succeeded")
	}
}
