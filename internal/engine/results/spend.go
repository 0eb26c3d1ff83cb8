package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"time"
)

// The daily spend ledger: what consultations cost, in US dollars per UTC day, shared by
// every server using the results directory (for a daily budget across them). It is one
// small JSON file, rewritten atomically under an exclusive lock on a lock file beside it;
// both are opened like every file of the store. Neither name can be taken for a record or
// a worker's file.
const (
	spendFile     = "spend.json"
	spendLock     = ".spend.lock"
	spendVersion  = 2
	spendDayForm  = "2006-01-02"
	spendKeepDays = 62 // two months of days, for a look back; older days are dropped
	maxSpendBytes = 64 << 10
)

// spendLedger is the file form of the ledger. Version 2 added Holds; a version 1 ledger
// (no holds) is read as it is.
type spendLedger struct {
	Version int                `json:"version"`
	Days    map[string]float64 `json:"days"`            // "2006-01-02" (UTC) -> dollars
	Holds   map[string]hold    `json:"holds,omitempty"` // reservations of calls in flight, by id
}

// hold is a reservation of part of a day's budget by a call in flight: the most the call can
// cost, held until the call settles it with what it did cost (Settle). A hold that outlives
// Expires (its process died, or could not settle) counts as spent in full: the call may have
// been billed that much.
type hold struct {
	Day     string    `json:"day"`
	USD     float64   `json:"usd"`
	Expires time.Time `json:"expires"`
}

// spendLockPoll bounds the wait between two tries of the ledger's lock.
const spendLockPoll = 50 * time.Millisecond

// ErrLedgerBusy is wrapped by the error of a ledger operation whose lock was not free before
// its context ended.
var ErrLedgerBusy = errors.New("the spend ledger is locked")

// withLedger runs fn on the ledger under its lock, taken before ctx ends (else an error
// wrapping ErrLedgerBusy that names the lock file), with expired holds counted as spent,
// and writes back what fn leaves when it says so, dropping days two months older than day.
func (s *Store) withLedger(ctx context.Context, day time.Time, fn func(l *spendLedger) (write bool, err error)) error {
	root, err := s.openDir(true)
	if err != nil {
		return err
	}
	defer root.Close()
	lock, _, err := openIn(root, spendLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("results: %s: %w", s.dir, err)
	}
	defer lock.Close()
	if err := flockUntil(ctx, lock); err != nil {
		return err
	}
	defer unlock(lock)
	l, err := readLedger(root)
	if err != nil {
		return err
	}
	expired := l.settleExpired(time.Now())
	write, err := fn(&l)
	if err != nil || !write && !expired {
		return err
	}
	oldest := day.UTC().AddDate(0, 0, -spendKeepDays).Format(spendDayForm)
	maps.DeleteFunc(l.Days, func(k string, _ float64) bool { return k < oldest })
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := writeAtomic(root, spendFile, tempPrefix+"spend-", tempSuffix, data, time.Now()); err != nil {
		return fmt.Errorf("results: cannot record a spend in %s: %w", s.dir, err)
	}
	return nil
}

// flockUntil takes f's lock, trying again until ctx ends.
func flockUntil(ctx context.Context, f *os.File) error {
	wait := time.Millisecond
	start := time.Now()
	for {
		err := flock(f, false)
		if err == nil {
			return nil
		}
		if !isHeld(err) {
			return fmt.Errorf("results: cannot lock %s: %w", spendLock, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("results: %w: %s was held by another process for %s; a consult process that hangs while it holds the lock stops every call under --budget-usd: find it with lsof %s", ErrLedgerBusy,
				f.Name(), time.Since(start).Round(time.Millisecond), f.Name())
		case <-t.C:
		}
		wait = min(wait*2, spendLockPoll)
	}
}

// settleExpired counts every hold past its expiry as spent in full, and drops it; it says
// whether any was.
func (l *spendLedger) settleExpired(now time.Time) bool {
	any := false
	for id, h := range l.Holds {
		if now.After(h.Expires) {
			l.Days[h.Day] += h.USD
			delete(l.Holds, id)
			any = true
		}
	}
	return any
}

// held is what the live holds of day hold.
func (l *spendLedger) held(day string) float64 {
	var sum float64
	for _, h := range l.Holds {
		if h.Day == day {
			sum += h.USD
		}
	}
	return sum
}

// AddSpend adds usd dollars to the spend of day (its UTC date) and returns that day's new
// total. Any number of processes may add at once: each addition is made under the
// ledger's lock (on systems with file locks), taken before ctx ends, and written
// atomically. Days older than two months before day are dropped from the ledger.
func (s *Store) AddSpend(ctx context.Context, day time.Time, usd float64) (float64, error) {
	if err := checkUSD(usd); err != nil {
		return 0, err
	}
	var total float64
	err := s.withLedger(ctx, day, func(l *spendLedger) (bool, error) {
		key := day.UTC().Format(spendDayForm)
		l.Days[key] += usd
		total = l.Days[key]
		return true, nil
	})
	return total, err
}

// Reserve holds part of day's budget for a call in flight, until it settles (Settle) or
// expires: want dollars when that fits what is left of budget (the day's spend and the
// holds of calls in flight taken off), else all that is left when that is at least least,
// else nothing (ok false). granted is what is held, under the returned id; left is what was
// left before the hold. The check and the hold
// are one step under the ledger's lock, taken before ctx ends, so calls on any number of
// servers sharing the directory together hold no more than the budget.
func (s *Store) Reserve(ctx context.Context, day time.Time, budget, want, least float64, expires time.Time) (id string, granted, left float64, ok bool, err error) {
	for _, v := range []float64{budget, want, least} {
		if err := checkUSD(v); err != nil {
			return "", 0, 0, false, err
		}
	}
	id = NewID(day)
	err = s.withLedger(ctx, day, func(l *spendLedger) (bool, error) {
		key := day.UTC().Format(spendDayForm)
		left = max(budget-l.Days[key]-l.held(key), 0)
		grant := min(want, left)
		if grant < least || grant <= 0 && want > 0 {
			return false, nil
		}
		l.Holds[id] = hold{Day: key, USD: grant, Expires: expires.UTC()}
		granted, ok = grant, true
		return true, nil
	})
	if err != nil || !ok {
		return "", 0, left, false, err
	}
	return id, granted, left, true, nil
}

// Settle replaces the hold id (from Reserve) by what its call did cost, usd, spent on the
// hold's day. A hold that is no longer there (it expired, and was counted in full) is left
// as it was counted.
func (s *Store) Settle(ctx context.Context, id string, usd float64) error {
	if err := checkUSD(usd); err != nil {
		return err
	}
	return s.withLedger(ctx, time.Now(), func(l *spendLedger) (bool, error) {
		h, ok := l.Holds[id]
		if !ok {
			return false, nil
		}
		delete(l.Holds, id)
		l.Days[h.Day] += usd
		return true, nil
	})
}

// errSpend: a spend that is not a finite, non-negative number of dollars.
var errSpend = errors.New("spend must be a finite number of dollars, 0 or more")

// checkUSD refuses a number of dollars that is not finite or is negative.
func checkUSD(usd float64) error {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return fmt.Errorf("results: %w: got %v", errSpend, usd)
	}
	return nil
}

// Spent is what the ledger holds for day (its UTC date): 0 when nothing was spent that
// day or the ledger does not exist yet; expired holds count as spent. held is what calls in
// flight hold of it. An error (an unsafe directory, a ledger that cannot be read) is never
// reported as 0 spent, so a budget can refuse rather than guess.
func (s *Store) Spent(day time.Time) (spent, held float64, err error) {
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	l, err := readLedger(root)
	if err != nil {
		return 0, 0, err
	}
	l.settleExpired(time.Now())
	key := day.UTC().Format(spendDayForm)
	return l.Days[key], l.held(key), nil
}

// readLedger reads the ledger in root; a missing one is empty. A ledger file is replaced
// whole, so reading needs no lock.
func readLedger(root *os.Root) (spendLedger, error) {
	l := spendLedger{Version: spendVersion, Days: map[string]float64{}, Holds: map[string]hold{}}
	f, fi, err := openIn(root, spendFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("results: the spend ledger: %w", err)
	}
	defer f.Close()
	if fi.Size() > maxSpendBytes {
		return l, fmt.Errorf("results: the spend ledger %s is %d bytes, more than consult writes (%d); remove it", spendFile, fi.Size(), maxSpendBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSpendBytes))
	if err != nil {
		return l, fmt.Errorf("results: the spend ledger: %w", err)
	}
	var got spendLedger
	if err := json.Unmarshal(data, &got); err != nil || got.Version != spendVersion && got.Version != 1 {
		return l, fmt.Errorf("results: the spend ledger %s is not one consult wrote (version %d, %v); remove it to start it again", spendFile, got.Version, err)
	}
	for k, v := range got.Days {
		if checkUSD(v) != nil {
			return l, fmt.Errorf("results: the spend ledger %s holds %v for %s; remove it to start it again", spendFile, v, k)
		}
		l.Days[k] = v
	}
	for id, h := range got.Holds {
		if _, err := time.Parse(spendDayForm, h.Day); err != nil || checkUSD(h.USD) != nil || h.Expires.IsZero() {
			return l, fmt.Errorf("results: the spend ledger %s holds a reservation %q it cannot read (%+v); remove it to start it again", spendFile, id, h)
		}
		l.Holds[id] = h
	}
	return l, nil
}
