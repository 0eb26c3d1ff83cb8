package results

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSpendLedger: AddSpend adds to the spend of a UTC day and returns its total, Spent
// reads it back (0 for a day without spend and before any ledger exists), and days two
// months old are dropped.
func TestSpendLedger(t *testing.T) {
	t.Parallel()
	s := Open(filepath.Join(t.TempDir(), "state", "results"), 0, 0, 0)
	day := time.Date(2026, 11, 26, 23, 30, 0, 0, time.UTC)
	if got, err := s.Spent(day); got != 0 || err != nil {
		t.Fatalf("Spent before any ledger: %v, %v; want 0, nil", got, err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Spent created the directory: %v", err)
	}
	if got, err := s.AddSpend(day, 1.25); got != 1.25 || err != nil {
		t.Fatalf("AddSpend: %v, %v", got, err)
	}
	// 00:30 the next day in UTC+2 is 22:30 the same UTC day.
	east := time.FixedZone("UTC+2", 2*3600)
	if got, err := s.AddSpend(time.Date(2026, 11, 27, 0, 30, 0, 0, east), 0.5); got != 1.75 || err != nil {
		t.Fatalf("AddSpend in another zone, same UTC day: %v, %v; want 1.75", got, err)
	}
	next := day.Add(time.Hour) // 00:30 UTC the next day
	if got, err := s.AddSpend(next, 2); got != 2 || err != nil {
		t.Fatalf("AddSpend the next UTC day: %v, %v; want 2", got, err)
	}
	if got, err := s.Spent(day); got != 1.75 || err != nil {
		t.Errorf("Spent(day): %v, %v; want 1.75", got, err)
	}
	if got, err := s.Spent(day.AddDate(0, 0, -1)); got != 0 || err != nil {
		t.Errorf("Spent(the day before): %v, %v; want 0", got, err)
	}
	if _, err := s.AddSpend(day.AddDate(0, 0, spendKeepDays+1), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Spent(day); got != 0 || err != nil {
		t.Errorf("Spent of a day more than two months back: %v, %v; want it dropped", got, err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := s.AddSpend(day, bad); !errors.Is(err, errSpend) {
			t.Errorf("AddSpend(%v): got %v, want errSpend", bad, err)
		}
	}
	// The ledger is neither a record nor a worker's file.
	if recs, err := s.List(0); err != nil || len(recs) != 0 {
		t.Errorf("List: %v, %v", recs, err)
	}
}

// TestSpendLedgerUnreadable: a ledger that is not one consult wrote is an error, never 0
// spent, so a budget can refuse rather than guess.
func TestSpendLedgerUnreadable(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"{", `{"version":2,"days":{}}`, `{"version":1,"days":{"2026-11-26":-5}}`, strings.Repeat(" ", maxSpendBytes+1)} {
		s := Open(t.TempDir(), 0, 0, 0)
		writeFile(t, filepath.Join(s.Dir(), spendFile), content)
		if got, err := s.Spent(t0); err == nil {
			t.Errorf("Spent with ledger %.20q: %v, nil; want an error", content, got)
		}
		if _, err := s.AddSpend(t0, 1); err == nil {
			t.Errorf("AddSpend with ledger %.20q: no error", content)
		}
	}
}

// spendChildEnv names the results directory a child process of TestSpendAcrossProcesses
// adds to.
const spendChildEnv = "CONSULT_TEST_SPEND_DIR"

// spendAdds is how many additions of spendStep each adder makes; spendStep is exact in
// binary, so the expected total is exact.
const (
	spendAdds = 40
	spendStep = 0.25
)

// TestSpendAcrossProcesses: three processes and four goroutines of this one, each with its
// own store, add to the same day at once; no addition is lost.
func TestSpendAcrossProcesses(t *testing.T) {
	if dir := os.Getenv(spendChildEnv); dir != "" {
		s := Open(dir, 0, 0, 0)
		for range spendAdds {
			if _, err := s.AddSpend(t0, spendStep); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	const children, goroutines = 3, 4
	errs := make(chan error, children+goroutines)
	for range children {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSpendAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), spendChildEnv+"="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- errors.New(string(out))
			}
		})
	}
	for range goroutines {
		wg.Go(func() {
			s := Open(dir, 0, 0, 0)
			for range spendAdds {
				if _, err := s.AddSpend(t0, spendStep); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := float64((children+goroutines)*spendAdds) * spendStep
	if got, err := Open(dir, 0, 0, 0).Spent(t0); got != want || err != nil {
		t.Errorf("Spent after concurrent additions: %v, %v; want %v", got, err, want)
	}
}
