package results

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	ctx := context.Background()
	day := time.Date(2026, 11, 26, 23, 30, 0, 0, time.UTC)
	if got, _, err := s.Spent(day); got != 0 || err != nil {
		t.Fatalf("Spent before any ledger: %v, %v; want 0, nil", got, err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Spent created the directory: %v", err)
	}
	if got, err := s.AddSpend(ctx, day, 1.25); got != 1.25 || err != nil {
		t.Fatalf("AddSpend: %v, %v", got, err)
	}
	// 00:30 the next day in UTC+2 is 22:30 the same UTC day.
	east := time.FixedZone("UTC+2", 2*3600)
	if got, err := s.AddSpend(ctx, time.Date(2026, 11, 27, 0, 30, 0, 0, east), 0.5); got != 1.75 || err != nil {
		t.Fatalf("AddSpend in another zone, same UTC day: %v, %v; want 1.75", got, err)
	}
	next := day.Add(time.Hour) // 00:30 UTC the next day
	if got, err := s.AddSpend(ctx, next, 2); got != 2 || err != nil {
		t.Fatalf("AddSpend the next UTC day: %v, %v; want 2", got, err)
	}
	if got, _, err := s.Spent(day); got != 1.75 || err != nil {
		t.Errorf("Spent(day): %v, %v; want 1.75", got, err)
	}
	if got, _, err := s.Spent(day.AddDate(0, 0, -1)); got != 0 || err != nil {
		t.Errorf("Spent(the day before): %v, %v; want 0", got, err)
	}
	if _, err := s.AddSpend(ctx, day.AddDate(0, 0, spendKeepDays+1), 0); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Spent(day); got != 0 || err != nil {
		t.Errorf("Spent of a day more than two months back: %v, %v; want it dropped", got, err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := s.AddSpend(ctx, day, bad); !errors.Is(err, errSpend) {
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
	for _, content := range []string{"{", `{"version":3,"days":{}}`, `{"version":1,"days":{"2026-11-26":-5}}`, strings.Repeat(" ", maxSpendBytes+1),
		`{"version":2,"days":{},"holds":{"x":{"day":"2026-11-26","usd":-1,"expires":"2026-11-26T00:00:00Z"}}}`} {
		s := Open(t.TempDir(), 0, 0, 0)
		writeFile(t, filepath.Join(s.Dir(), spendFile), content)
		if got, _, err := s.Spent(t0); err == nil {
			t.Errorf("Spent with ledger %.20q: %v, nil; want an error", content, got)
		}
		if _, err := s.AddSpend(context.Background(), t0, 1); err == nil {
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
	ctx := context.Background()
	if dir := os.Getenv(spendChildEnv); dir != "" {
		s := Open(dir, 0, 0, 0)
		for range spendAdds {
			if _, err := s.AddSpend(ctx, t0, spendStep); err != nil {
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
				if _, err := s.AddSpend(ctx, t0, spendStep); err != nil {
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
	if got, _, err := Open(dir, 0, 0, 0).Spent(t0); got != want || err != nil {
		t.Errorf("Spent after concurrent additions: %v, %v; want %v", got, err, want)
	}
}

// TestReserveAndSettle: a reservation holds what fits what is left (spend and other holds
// taken off), all that is left when that is at least the least, else nothing; settling
// replaces it by the cost; a hold past its expiry counts as spent in full.
func TestReserveAndSettle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := Open(t.TempDir(), 0, 0, 0)
	day, later := t0, time.Now().Add(time.Hour)
	if _, err := s.AddSpend(ctx, day, 0.25); err != nil {
		t.Fatal(err)
	}
	a, got, left, ok, err := s.Reserve(ctx, day, 1, 0.5, 0.1, later)
	if err != nil || !ok || got != 0.5 || left != 0.75 {
		t.Fatalf("Reserve 0.5 of 0.75 left: %q, %v, %v, %v, %v", a, got, left, ok, err)
	}
	b, got, left, ok, err := s.Reserve(ctx, day, 1, 0.5, 0.1, later)
	if err != nil || !ok || got != 0.25 || left != 0.25 {
		t.Fatalf("Reserve 0.5 with 0.25 left, least 0.1: %v, %v, %v, %v; want the 0.25 left", got, left, ok, err)
	}
	if _, _, left, ok, err := s.Reserve(ctx, day, 1, 0.5, 0.1, later); err != nil || ok || left != 0 {
		t.Fatalf("Reserve with nothing left: %v, %v, %v; want refused", left, ok, err)
	}
	if spent, held, err := s.Spent(day); spent != 0.25 || held != 0.75 || err != nil {
		t.Errorf("Spent with holds: %v spent, %v held, %v", spent, held, err)
	}
	if err := s.Settle(ctx, a, 0.125); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, a, 0.5); err != nil { // settled once: the second changes nothing
		t.Fatal(err)
	}
	if spent, held, _ := s.Spent(day); spent != 0.375 || held != 0.25 {
		t.Errorf("after settling: %v spent, %v held; want 0.375, 0.25", spent, held)
	}
	// b's call never settles: past its expiry it counts in full.
	_ = b
	expired, _, _, _, err := s.Reserve(ctx, day, 10, 1, 0, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if spent, held, _ := s.Spent(day); spent != 1.375 || held != 0.25 {
		t.Errorf("with an expired hold: %v spent, %v held; want the hold counted as spent", spent, held)
	}
	if err := s.Settle(ctx, expired, 0); err != nil {
		t.Fatal(err)
	}
	if spent, _, _ := s.Spent(day); spent != 1.375 {
		t.Errorf("settling an expired hold changed the spend to %v", spent)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, _, _, _, err := s.Reserve(ctx, day, 1, bad, 0, later); !errors.Is(err, errSpend) {
			t.Errorf("Reserve(%v): %v, want errSpend", bad, err)
		}
	}
}

// TestLedgerLockDeadline: while another process holds the ledger's lock, an operation waits
// only until its context ends, then fails naming the lock file.
func TestLedgerLockDeadline(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir(), 0, 0, 0)
	if _, err := s.AddSpend(context.Background(), t0, 1); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(filepath.Join(s.Dir(), spendLock), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := flock(held, false); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "windows" {
		t.Skip("no file locks here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, _, _, err = s.Reserve(ctx, t0, 10, 1, 0, time.Now().Add(time.Hour))
	if !errors.Is(err, ErrLedgerBusy) || !strings.Contains(err.Error(), spendLock) {
		t.Errorf("Reserve under a held lock: %v; want ErrLedgerBusy naming %s", err, spendLock)
	}
	if spent, _, err := s.Spent(t0); spent != 1 || err != nil { // reading needs no lock
		t.Errorf("Spent under a held lock: %v, %v", spent, err)
	}
}

// reserveChildEnv names the results directory a child process of
// TestReserveAcrossProcesses reserves in.
const reserveChildEnv = "CONSULT_TEST_RESERVE_DIR"

// TestReserveAcrossProcesses: processes and goroutines, each with its own store, reserve
// from one budget at once; together they never hold more than it, and the reservations
// granted fill it.
func TestReserveAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	const budget, each, tries = 1.0, 0.0625, 8 // 16 reservations fit; 5 x 8 tries are made
	if dir := os.Getenv(reserveChildEnv); dir != "" {
		s := Open(dir, 0, 0, 0)
		for range tries {
			if _, _, _, _, err := s.Reserve(ctx, t0, budget, each, each, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 2 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReserveAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), reserveChildEnv+"="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- errors.New(string(out))
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			s := Open(dir, 0, 0, 0)
			for range tries {
				if _, _, _, _, err := s.Reserve(ctx, t0, budget, each, each, time.Now().Add(time.Hour)); err != nil {
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
	if spent, held, err := Open(dir, 0, 0, 0).Spent(t0); spent != 0 || held != budget || err != nil {
		t.Errorf("after concurrent reservations: %v spent, %v held, %v; want the whole budget %v held, no more", spent, held, err, budget)
	}
}
