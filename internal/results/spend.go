package results

import (
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
	spendVersion  = 1
	spendDayForm  = "2006-01-02"
	spendKeepDays = 62 // two months of days, for a look back; older days are dropped
	maxSpendBytes = 64 << 10
)

// spendLedger is the file form of the ledger.
type spendLedger struct {
	Version int                `json:"version"`
	Days    map[string]float64 `json:"days"` // "2006-01-02" (UTC) -> dollars
}

// errSpend: a spend that is not a finite, non-negative number of dollars.
var errSpend = errors.New("spend must be a finite number of dollars, 0 or more")

// AddSpend adds usd dollars to the spend of day (its UTC date) and returns that day's new
// total. Any number of processes may add at once: each addition is made under the
// ledger's lock (on systems with file locks) and written atomically. Days older than two
// months before day are dropped from the ledger.
func (s *Store) AddSpend(day time.Time, usd float64) (float64, error) {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return 0, fmt.Errorf("results: %w: got %v", errSpend, usd)
	}
	root, err := s.openDir(true)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	lock, _, err := openIn(root, spendLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("results: %s: %w", s.dir, err)
	}
	defer lock.Close()
	if err := flock(lock, true); err != nil {
		return 0, fmt.Errorf("results: cannot lock %s: %w", spendLock, err)
	}
	l, err := readLedger(root)
	if err != nil {
		return 0, err
	}
	key := day.UTC().Format(spendDayForm)
	l.Days[key] += usd
	total := l.Days[key]
	oldest := day.UTC().AddDate(0, 0, -spendKeepDays).Format(spendDayForm)
	maps.DeleteFunc(l.Days, func(k string, _ float64) bool { return k < oldest })
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	if err := writeAtomic(root, spendFile, tempPrefix+"spend-", tempSuffix, data, time.Now()); err != nil {
		return 0, fmt.Errorf("results: cannot record a spend in %s: %w", s.dir, err)
	}
	return total, nil
}

// Spent is what the ledger holds for day (its UTC date): 0 when nothing was spent that
// day or the ledger does not exist yet. An error (an unsafe directory, a ledger that
// cannot be read) is never reported as 0 spent, so a budget can refuse rather than guess.
func (s *Store) Spent(day time.Time) (float64, error) {
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer root.Close()
	l, err := readLedger(root)
	if err != nil {
		return 0, err
	}
	return l.Days[day.UTC().Format(spendDayForm)], nil
}

// readLedger reads the ledger in root; a missing one is empty. A ledger file is replaced
// whole, so reading needs no lock.
func readLedger(root *os.Root) (spendLedger, error) {
	l := spendLedger{Version: spendVersion, Days: map[string]float64{}}
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
	if err := json.Unmarshal(data, &got); err != nil || got.Version != spendVersion {
		return l, fmt.Errorf("results: the spend ledger %s is not one consult wrote (version %d, %v); remove it to start it again", spendFile, got.Version, err)
	}
	for k, v := range got.Days {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return l, fmt.Errorf("results: the spend ledger %s holds %v for %s; remove it to start it again", spendFile, v, k)
		}
		l.Days[k] = v
	}
	return l, nil
}
