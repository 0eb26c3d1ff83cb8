package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
)

// t0 is the fake clock's start: the time in the spec's example id.
var t0 = time.Date(2026, 11, 23, 10, 46, 28, 0, time.UTC)

// fakeClock is a settable clock for Store.now, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newStore opens a store on a directory that does not exist yet (two levels below a
// fresh temporary directory), with a fake clock at t0.
func newStore(t *testing.T, ttl time.Duration, maxBytes consult.Bytes, maxFiles int) (*Store, *fakeClock) {
	t.Helper()
	s := Open(filepath.Join(t.TempDir(), "state", "results"), ttl, maxBytes, maxFiles)
	return s, withClock(s, t0)
}

// withClock gives s a fake clock set to at.
func withClock(s *Store, at time.Time) *fakeClock {
	clk := &fakeClock{t: at}
	s.now = clk.now
	return clk
}

// idAt is a deterministic valid id created at tm, told apart by n.
func idAt(tm time.Time, n int) string {
	// n in hex with the digits 0-f written a-p: valid base32, and ordered as n.
	hex := []byte(fmt.Sprintf("%08x", n))
	for i, c := range hex {
		if c <= '9' {
			hex[i] = 'a' + c - '0'
		} else {
			hex[i] = 'a' + 10 + c - 'a'
		}
	}
	return tm.UTC().Format(idTimeLayout) + "-" + strings.Repeat("a", idRandChars-len(hex)) + string(hex)
}

// record is a small Done record with this id, created at the fake clock's time.
func record(id string, clk *fakeClock) Record {
	return Record{ID: id, Status: Done, PID: 4242, Created: clk.now(), Query: "why?", Facts: json.RawMessage(`{"reason":"said"}`), Answer: "because."}
}

// mustSave saves r and fails the test on error.
func mustSave(t *testing.T, s *Store, r Record) {
	t.Helper()
	if err := s.Save(r); err != nil {
		t.Fatalf("Save(%s): %v", r.ID, err)
	}
}

// names lists the entries of dir, sorted; a missing dir has none.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// path is the file of the record with this id.
func (s *Store) path(id string) string { return filepath.Join(s.dir, recordName(id)) }

// auxPath is the file with ext beside the record of this id.
func (s *Store) auxPath(id, ext string) string { return filepath.Join(s.dir, auxName(id, ext)) }

// recordNames turns ids into the file names of their records, sorted.
func recordNames(ids ...string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id+recordExt)
	}
	slices.Sort(out)
	return out
}

// listIDs returns the ids of s.List(limit), in order.
func listIDs(t *testing.T, s *Store, limit int) []string {
	t.Helper()
	recs, err := s.List(limit)
	if err != nil {
		t.Fatalf("List(%d): %v", limit, err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// fileSize is the size of the record file of id.
func fileSize(t *testing.T, s *Store, id string) consult.Bytes {
	t.Helper()
	fi, err := os.Stat(s.path(id))
	if err != nil {
		t.Fatal(err)
	}
	return consult.Bytes(fi.Size())
}

// setMtime sets a file's modification time.
func setMtime(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a file, failing the test on error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sameRecord compares records field by field, times by instant.
func sameRecord(t *testing.T, got, want Record) {
	t.Helper()
	if !got.Created.Equal(want.Created) {
		t.Errorf("Created: got %v, want %v", got.Created, want.Created)
	}
	if !got.Updated.Equal(want.Updated) {
		t.Errorf("Updated: got %v, want %v", got.Updated, want.Updated)
	}
	got.Created, got.Updated, want.Created, want.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestOpenDefaults(t *testing.T) {
	tests := []struct {
		name      string
		ttl       time.Duration
		maxBytes  consult.Bytes
		maxFiles  int
		wantTTL   time.Duration
		wantBytes consult.Bytes
		wantFiles int
	}{
		{"zero takes defaults", 0, 0, 0, consult.DefaultResultsTTL, MaxResultsBytes, MaxResults},
		{"negative takes defaults", -time.Hour, -1, -1, consult.DefaultResultsTTL, MaxResultsBytes, MaxResults},
		{"given values kept", time.Hour, 1 << 10, 7, time.Hour, 1 << 10, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Open("/some/dir", tt.ttl, tt.maxBytes, tt.maxFiles)
			if got := s.Dir(); got != "/some/dir" {
				t.Errorf("Dir: got %q, want %q", got, "/some/dir")
			}
			if got := s.TTL(); got != tt.wantTTL {
				t.Errorf("TTL: got %v, want %v", got, tt.wantTTL)
			}
			if s.maxBytes != tt.wantBytes || s.maxFiles != tt.wantFiles {
				t.Errorf("bounds: got %v, %d; want %v, %d", s.maxBytes, s.maxFiles, tt.wantBytes, tt.wantFiles)
			}
		})
	}
}

func TestNothingCreatedUntilSave(t *testing.T) {
	s, _ := newStore(t, 0, 0, 0)
	parent := filepath.Dir(s.Dir())
	if _, err := s.Load(idAt(t0, 1)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load: got %v, want ErrNotFound", err)
	}
	if recs, err := s.List(0); err != nil || len(recs) != 0 {
		t.Errorf("List: got %v, %v; want none, nil", recs, err)
	}
	if err := s.Prune(); err != nil {
		t.Errorf("Prune: got %v, want nil", err)
	}
	if _, err := os.Stat(parent); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Open, Load, List, Prune: stat %s: got %v, want not exist", parent, err)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	s, clk := newStore(t, 0, 0, 0)
	in := Record{
		Version: 99, // Save sets it
		ID:      idAt(t0, 0xabc),
		Status:  Done,
		PID:     31337,
		Owner:   "sha256:0123abcd",
		Created: time.Date(2026, 11, 23, 11, 40, 0, 123456789, time.FixedZone("CET", 3600)),
		Path:    "/src/project",
		Pattern: "**/*.go",
		Model:   "gemini-2.5-pro",
		Query:   "Where is the <retry> loop & why?",
		Facts:   json.RawMessage(`{"detail":"The answer:\n<b>here</b> & there"}`),
		IsError: true,
		Answer:  "Full answer with ünïcödé and \x01 control",
		Summary: json.RawMessage(`{"id":"x","files":3,"nested":{"ok":true,"list":[1,2.5,null]}}`),
		Note:    "saved at shutdown",
	}
	clk.advance(time.Minute)
	mustSave(t, s, in)

	fi, err := os.Stat(s.Dir())
	if err != nil {
		t.Fatalf("directory not created: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode: got %v, want %v", got, fs.FileMode(0o700))
	}
	fi, err = os.Stat(s.path(in.ID))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode: got %v, want %v", got, fs.FileMode(0o600))
	}
	if want := clk.now().Add(s.TTL()); !fi.ModTime().Equal(want) {
		t.Errorf("file mtime: got %v, want the record's expiry %v", fi.ModTime(), want)
	}
	if got, want := names(t, s.Dir()), recordNames(in.ID); !slices.Equal(got, want) {
		t.Errorf("directory: got %v, want %v", got, want)
	}

	got, err := s.Load(in.ID)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := in
	want.Version = recordVersion
	want.Updated = clk.now()
	want.Expires = clk.now().Add(s.TTL())
	sameRecord(t, got, want)
}

func TestSaveTruncatesQuery(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		wantLen int
	}{
		{"short kept", "why?", 4},
		{"exactly 200 kept", strings.Repeat("a", 200), 200},
		{"ascii cut at 200", strings.Repeat("a", 300), 200},
		{"2-byte runes cut at 200", strings.Repeat("é", 150), 200},
		{"3-byte rune across 200 dropped", "a" + strings.Repeat("€", 100), 199},
		{"4-byte rune across 200 dropped", "ab" + strings.Repeat("😀", 60), 198},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := newStore(t, 0, 0, 0)
			r := record(idAt(t0, i), clk)
			r.Query = tt.query
			mustSave(t, s, r)
			got, err := s.Load(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Query) != tt.wantLen || !strings.HasPrefix(tt.query, got.Query) || !utf8.ValidString(got.Query) {
				t.Errorf("Query: got %d bytes (valid UTF-8 %v, prefix %v), want a valid %d-byte prefix",
					len(got.Query), utf8.ValidString(got.Query), strings.HasPrefix(tt.query, got.Query), tt.wantLen)
			}
		})
	}
}

func TestSaveRejects(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Record)
		check func(error) bool
	}{
		{"empty status", func(r *Record) { r.Status = "" }, func(err error) bool { return errors.Is(err, errBadStatus) }},
		{"unknown status", func(r *Record) { r.Status = "paused" }, func(err error) bool { return errors.Is(err, errBadStatus) }},
		{"invalid summary", func(r *Record) { r.Summary = json.RawMessage(`{"open":`) }, func(err error) bool {
			var me *json.MarshalerError
			return errors.As(err, &me)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := newStore(t, 0, 0, 0)
			r := record(idAt(t0, 1), clk)
			tt.edit(&r)
			if err := s.Save(r); !tt.check(err) {
				t.Errorf("Save: got %v, want the %s error", err, tt.name)
			}
			if got := names(t, s.Dir()); len(got) != 0 {
				t.Errorf("directory: got %v, want nothing written", got)
			}
		})
	}
	t.Run("no directory", func(t *testing.T) {
		s := Open("", 0, 0, 0)
		if err := s.Save(Record{ID: idAt(t0, 1), Status: Done}); !errors.Is(err, errNoDir) {
			t.Errorf("Save: got %v, want errNoDir", err)
		}
	})
}

func TestOverwriteRunningWithDone(t *testing.T) {
	s, clk := newStore(t, 0, 0, 0)
	id := idAt(t0, 7)
	mustSave(t, s, Record{ID: id, Status: Running, PID: 1234, Created: t0, Query: "q"})
	got, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Running || got.PID != 1234 || !got.Updated.Equal(t0) {
		t.Errorf("running record: got status %q, pid %d, updated %v; want %q, 1234, %v", got.Status, got.PID, got.Updated, Running, t0)
	}

	clk.advance(5 * time.Minute)
	mustSave(t, s, Record{ID: id, Status: Done, PID: 1234, Created: t0, Query: "q", Answer: "42"})
	got, err = s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Done || got.Answer != "42" || !got.Updated.Equal(clk.now()) || !got.Created.Equal(t0) {
		t.Errorf("done record: got status %q, answer %q, updated %v, created %v; want %q, %q, %v, %v",
			got.Status, got.Answer, got.Updated, got.Created, Done, "42", clk.now(), t0)
	}
	if got, want := names(t, s.Dir()), recordNames(id); !slices.Equal(got, want) {
		t.Errorf("directory: got %v, want %v (one record, no temporary file)", got, want)
	}
}

func TestLoadExpiry(t *testing.T) {
	const ttl = time.Hour
	tests := []struct {
		name    string
		status  Status
		age     time.Duration
		wantErr error
	}{
		{"done within ttl", Done, ttl - time.Second, nil},
		{"done at exactly ttl", Done, ttl, nil},
		{"done past ttl", Done, ttl + time.Second, ErrExpired},
		{"running within ttl", Running, ttl / 2, nil},
		{"running past ttl", Running, ttl + time.Second, ErrExpired},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := newStore(t, ttl, 0, 0)
			r := record(idAt(t0, i), clk)
			r.Status = tt.status
			// Created long before: expiry counts from the last write, not the start.
			r.Created = t0.Add(-10 * ttl)
			mustSave(t, s, r)
			clk.advance(tt.age)
			_, err := s.Load(r.ID)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Load: got %v, want %v", err, tt.wantErr)
			}
			_, statErr := os.Stat(s.path(r.ID))
			if tt.wantErr == nil {
				if statErr != nil {
					t.Errorf("file: got %v, want kept", statErr)
				}
				return
			}
			if !errors.Is(statErr, fs.ErrNotExist) {
				t.Errorf("file after ErrExpired: got %v, want removed", statErr)
			}
			if _, err := s.Load(r.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("second Load: got %v, want ErrNotFound", err)
			}
		})
	}
}

func TestLoadNotFound(t *testing.T) {
	s, clk := newStore(t, 0, 0, 0)
	mustSave(t, s, record(idAt(t0, 1), clk))
	if _, err := s.Load(idAt(t0, 2)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of an unknown id: got %v, want ErrNotFound", err)
	}
}

func TestMalformedIDs(t *testing.T) {
	const r = "3odgtjfrmcwwmsykgjuuzsloly" // a valid random part
	tests := []struct{ name, id string }{
		{"empty", ""},
		{"parent path", "../x"},
		{"parent path of id length", "../61123-104628-" + r},
		{"slash in date", "2026/123-104628-" + r},
		{"slash before random", "20261123-104628/" + r},
		{"backslash", "20261123-104628\\" + r},
		{"dot in random", "20261123-104628-3odgtjfrmcwwm.ykgjuuzsloly"},
		{"with .json", "20261123-104628-" + r + ".json"},
		{"random too short", "20261123-104628-" + r[1:]},
		{"random too long", "20261123-104628-" + r + "a"},
		{"old 32-bit form", "20261123-104628-1a2b3c4d"},
		{"uppercase", "20261123-104628-3ODGTJFRMCWWMSYKGJUUZSLOLY"},
		{"digit outside base32", "20261123-104628-3odgtjfrmcwwmsykgjuuzslol8"},
		{"digit 1 outside base32", "20261123-104628-1odgtjfrmcwwmsykgjuuzsloly"},
		{"date too short", "2026112-104628-" + r},
		{"date too short, padded", "2026112-1046280-" + r},
		{"underscore separator", "20261123_104628-" + r},
		{"sign in date", "+2026112-104628-" + r},
		{"space", " 0261123-104628-" + r},
		{"trailing newline", "20261123-104628-" + r[1:] + "\n"},
		{"NUL byte", "20261123-104628-" + r[1:] + "\x00"},
		{"month 13", "20261323-104628-" + r},
		{"month 0", "20260023-104628-" + r},
		{"day 0", "20261100-104628-" + r},
		{"day 31 in November", "20261131-104628-" + r},
		{"29 February, not a leap year", "20250229-104628-" + r},
		{"hour 24", "20261123-244628-" + r},
		{"minute 60", "20261123-106028-" + r},
		{"second 60", "20261123-104660-" + r},
		{"long junk", strings.Repeat("../", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tm, err := ParseID(tt.id); !errors.Is(err, ErrBadID) {
				t.Errorf("ParseID: got %v, %v; want ErrBadID", tm, err)
			}
			s, _ := newStore(t, 0, 0, 0)
			if _, err := s.Load(tt.id); !errors.Is(err, ErrBadID) {
				t.Errorf("Load: got %v, want ErrBadID", err)
			}
			if err := s.Save(Record{ID: tt.id, Status: Done}); !errors.Is(err, ErrBadID) {
				t.Errorf("Save: got %v, want ErrBadID", err)
			}
			if _, err := os.Stat(filepath.Dir(s.Dir())); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after a malformed id: stat: got %v, want nothing created", err)
			}
		})
	}
	t.Run("message shows the form", func(t *testing.T) {
		// The message is for the caller to read; the test checks it helps, not how errors are told apart.
		_, err := ParseID(strings.Repeat("x", 1000))
		if err == nil || !strings.Contains(err.Error(), IDExample) || len(err.Error()) > 250 {
			t.Errorf("ParseID error: got %v, want a short message showing %q", err, IDExample)
		}
	})
}

func TestParseIDValid(t *testing.T) {
	tests := []struct {
		id   string
		want time.Time
	}{
		{"20261123-104628-3odgtjfrmcwwmsykgjuuzsloly", time.Date(2026, 11, 23, 10, 46, 28, 0, time.UTC)},
		{"20240229-235959-aaaaaaaaaaaaaaaaaaaaaaaaaa", time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)},
		{"20000101-000000-77777777777777777777777777", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, err := ParseID(tt.id)
			if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("ParseID: got %v, %v; want %v (UTC), nil", got, err, tt.want)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	now := time.Date(2026, 11, 23, 11, 46, 28, 999_999_999, time.FixedZone("CET", 3600))
	a, b := NewID(now), NewID(now)
	if a == b {
		t.Errorf("two NewID calls: got %q twice, want different ids", a)
	}
	for _, id := range []string{a, b} {
		if !strings.HasPrefix(id, "20261123-104628-") {
			t.Errorf("NewID: got %q, want the UTC time to the second first (20261123-104628-)", id)
		}
		got, err := ParseID(id)
		if err != nil || !got.Equal(now.Truncate(time.Second)) {
			t.Errorf("ParseID(NewID): got %v, %v; want %v, nil", got, err, now.Truncate(time.Second))
		}
	}
}

// TestNewIDIsUnguessable: the random part carries 128 bits, and they vary: over many ids
// every one of the 26 positions takes many values (the last one, holding 3 bits, at most 8).
func TestNewIDIsUnguessable(t *testing.T) {
	t.Parallel()
	random, err := idEncoding.DecodeString(NewID(time.Now())[len(idTimeLayout)+1:])
	if err != nil || len(random) < 16 {
		t.Fatalf("random part decodes to %d bytes (%v), want at least 16 (128 bits)", len(random), err)
	}
	seen := make([]map[byte]bool, idRandChars)
	for i := range seen {
		seen[i] = map[byte]bool{}
	}
	for range 2000 {
		r := NewID(time.Now())[len(idTimeLayout)+1:]
		for i := range len(r) {
			seen[i][r[i]] = true
		}
	}
	for i, vals := range seen {
		want := 32
		if i == idRandChars-1 {
			want = 8
		}
		if len(vals) != want {
			t.Errorf("position %d of the random part took %d values over 2000 ids, want %d", i, len(vals), want)
		}
	}
}

func TestPruneBySize(t *testing.T) {
	s, clk := newStore(t, 0, 1<<30, 0)
	var ids []string
	for i := range 5 {
		r := record(idAt(t0, i), clk)
		r.Answer = strings.Repeat("x", 1000)
		ids = append(ids, r.ID)
		mustSave(t, s, r)
		if i == 0 {
			// Room for three and a half records from now on.
			s.maxBytes = fileSize(t, s, r.ID) * 7 / 2
		}
		clk.advance(time.Minute)
		first := max(0, i-2)
		if got, want := names(t, s.Dir()), recordNames(ids[first:]...); !slices.Equal(got, want) {
			t.Fatalf("after saving record %d: got %v, want %v (oldest removed first)", i, got, want)
		}
	}

	s.maxBytes = fileSize(t, s, ids[4]) * 5 / 2
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got, want := recordFiles(t, s.Dir()), recordNames(ids[2:]...); !slices.Equal(got, want) {
		t.Errorf("Prune with no result collected: got %v, want %v (none removed before it expires)", got, want)
	}
	markCollected(t, s, ids[2:]...)
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got, want := recordFiles(t, s.Dir()), recordNames(ids[3:]...); !slices.Equal(got, want) {
		t.Errorf("Prune to two and a half records: got %v, want %v", got, want)
	}
}

// recordFiles lists the record files in dir, sorted.
func recordFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range names(t, dir) {
		if strings.HasSuffix(n, recordExt) && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	return out
}

// markCollected marks each id's result collected.
func markCollected(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.MarkCollected(id); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSaveKeepsItsOwnRecord(t *testing.T) {
	// Two processes whose clocks disagree: b's record is the least recently updated, yet b's
	// Save must not prune it.
	a, _ := newStore(t, 0, 1<<30, 0)
	clkA := withClock(a, t0.Add(time.Hour))
	b := Open(a.Dir(), 0, 1<<30, 0)
	withClock(b, t0)

	a1, a2, mine := idAt(t0, 1), idAt(t0, 2), idAt(t0, 3)
	mustSave(t, a, record(a1, clkA))
	clkA.advance(time.Minute)
	mustSave(t, a, record(a2, clkA))
	b.maxBytes = fileSize(t, a, a1) * 5 / 2
	mustSave(t, b, record(mine, clkA))
	if got, want := names(t, a.Dir()), recordNames(a2, mine); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (the oldest other record removed, the one just saved kept)", got, want)
	}
}

func TestSaveTooLarge(t *testing.T) {
	s, clk := newStore(t, 0, 1000, 0)
	big, other := idAt(t0, 1), idAt(t0, 2)
	mustSave(t, s, Record{ID: big, Status: Running, Created: t0})
	mustSave(t, s, record(other, clk))

	r := record(big, clk)
	r.Answer = strings.Repeat("x", 2000)
	if err := s.Save(r); !errors.Is(err, errTooLarge) {
		t.Fatalf("Save of a record larger than the directory: got %v, want errTooLarge", err)
	}
	if _, err := s.Load(big); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of the refused record: got %v, want ErrNotFound (its running record removed)", err)
	}
	if got, want := names(t, s.Dir()), recordNames(other); !slices.Equal(got, want) {
		t.Errorf("directory: got %v, want %v", got, want)
	}
}

func TestPruneByCount(t *testing.T) {
	s, clk := newStore(t, 0, 0, 3)
	var ids []string
	for i := range 5 {
		r := record(idAt(t0, i), clk)
		ids = append(ids, r.ID)
		mustSave(t, s, r)
		clk.advance(time.Second)
	}
	if got, want := names(t, s.Dir()), recordNames(ids[2:]...); !slices.Equal(got, want) {
		t.Errorf("after five saves with room for three: got %v, want %v", got, want)
	}
	s.maxFiles = 1
	markCollected(t, s, ids[2:]...)
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got, want := recordFiles(t, s.Dir()), recordNames(ids[4]); !slices.Equal(got, want) {
		t.Errorf("Prune to one: got %v, want %v", got, want)
	}
}

func TestPruneExpired(t *testing.T) {
	const ttl = time.Hour
	s, clk := newStore(t, ttl, 0, 0)
	oldDone, oldRunning, fresh := idAt(t0, 1), idAt(t0, 2), idAt(t0, 3)
	mustSave(t, s, record(oldDone, clk))
	mustSave(t, s, Record{ID: oldRunning, Status: Running, PID: 99, Created: t0})
	clk.advance(ttl / 2)
	mustSave(t, s, record(fresh, clk))
	clk.advance(ttl/2 + time.Second)
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, s.Dir()), recordNames(fresh); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (both records older than the TTL removed)", got, want)
	}
}

func TestPruneTempAndForeignFiles(t *testing.T) {
	// Room for one small record: if Prune counted foreign or temporary files, it would
	// remove ours to make room.
	s, clk := newStore(t, 0, 4096, 1)
	ours := idAt(t0, 1)
	mustSave(t, s, record(ours, clk))

	now, old := clk.now(), clk.now().Add(-30*24*time.Hour)
	stale := tempPrefix + "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly-111" + tempSuffix
	fresh := tempPrefix + "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly-222" + tempSuffix
	writeFile(t, filepath.Join(s.Dir(), stale), "half a rec")
	setMtime(t, filepath.Join(s.Dir(), stale), now.Add(-staleTemp-time.Minute))
	writeFile(t, filepath.Join(s.Dir(), fresh), strings.Repeat("being written ", 1000))
	setMtime(t, filepath.Join(s.Dir(), fresh), now.Add(-10*time.Minute))

	foreign := []string{"README", "notes.txt", "x.json", ".hidden", tempPrefix + "no-suffix",
		"20261123-104628-3odgtjfrmcwwmsykgjuuzsloly.txt", "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly.json.bak", "20261123-104628-3ODGTJFRMCWWMSYKGJUUZSLOLY.json", "20261123-104628-1a2b3c4d.json"}
	for _, name := range foreign {
		p := filepath.Join(s.Dir(), name)
		writeFile(t, p, strings.Repeat("not ours ", 1000))
		setMtime(t, p, old)
	}
	dirLikeRecord := filepath.Join(s.Dir(), idAt(t0.Add(-48*time.Hour), 9)+recordExt)
	if err := os.Mkdir(dirLikeRecord, 0o700); err != nil {
		t.Fatal(err)
	}
	setMtime(t, dirLikeRecord, old)

	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	want := append([]string{ours + recordExt, fresh, filepath.Base(dirLikeRecord)}, foreign...)
	slices.Sort(want)
	if got := names(t, s.Dir()); !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v (stale temporary file removed, the rest kept)", got, want)
	}
}

func TestList(t *testing.T) {
	const ttl = time.Hour
	t.Run("missing directory", func(t *testing.T) {
		s, _ := newStore(t, ttl, 0, 0)
		recs, err := s.List(0)
		if err != nil || len(recs) != 0 {
			t.Errorf("List: got %v, %v; want none, nil", recs, err)
		}
	})

	s, clk := newStore(t, ttl, 0, 0)
	// Created order differs from save order and from id order.
	offsets := []time.Duration{3, 1, 5, 2, 4}
	ids := make([]string, len(offsets))
	for i, off := range offsets {
		r := record(idAt(t0, i), clk)
		r.Created = t0.Add(-off * time.Minute)
		r.Model = "m"
		r.Summary = json.RawMessage(`{"k":1}`)
		ids[i] = r.ID
		mustSave(t, s, r)
	}
	newestFirst := []string{ids[1], ids[3], ids[0], ids[4], ids[2]}

	// A record another process wrote long ago, created later than all the others: expired.
	other := Open(s.Dir(), ttl, 0, 0)
	withClock(other, t0.Add(-2*ttl))
	expired := record(idAt(t0, 100), clk)
	mustSave(t, other, expired)
	// A corrupt record and a foreign file.
	writeFile(t, s.path(idAt(t0, 101)), "{not json")
	writeFile(t, filepath.Join(s.Dir(), "notes.json"), "{}")

	tests := []struct {
		limit int
		want  []string
	}{
		{0, newestFirst},
		{-1, newestFirst},
		{2, newestFirst[:2]},
		{5, newestFirst},
		{10, newestFirst},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("limit %d", tt.limit), func(t *testing.T) {
			if got := listIDs(t, s, tt.limit); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("table of contents", func(t *testing.T) {
		recs, err := s.List(1)
		if err != nil || len(recs) != 1 {
			t.Fatalf("List(1): got %v, %v", recs, err)
		}
		r := recs[0]
		if r.Facts != nil || r.Answer != "" || r.Summary != nil {
			t.Errorf("got Facts %s, Answer %q, Summary %s; want all cleared", r.Facts, r.Answer, r.Summary)
		}
		if r.Query != "why?" || r.Model != "m" || r.Status != Done || r.PID != 4242 {
			t.Errorf("got query %q, model %q, status %q, pid %d; want the other fields kept", r.Query, r.Model, r.Status, r.PID)
		}
	})
	// A listing reads only the fields before the large ones, so whether a consultation
	// failed and its note must come before them.
	t.Run("failures listed as failures", func(t *testing.T) {
		s, clk := newStore(t, ttl, 0, 0)
		r := record(idAt(t0, 7), clk)
		r.IsError, r.Note = true, "saved at shutdown"
		mustSave(t, s, r)
		recs, err := s.List(0)
		if err != nil || len(recs) != 1 || !recs[0].IsError || recs[0].Note != "saved at shutdown" {
			t.Fatalf("List: %+v, %v; want the failure and its note", recs, err)
		}
	})
}

func TestLoadCorrupt(t *testing.T) {
	id := idAt(t0, 1)
	valid := func(edit func(map[string]any)) string {
		m := map[string]any{"version": 2, "id": id, "status": "done", "created": t0, "updated": t0, "answer": "t"}
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	tests := []struct {
		name    string
		content string
	}{
		{"empty file", ""},
		{"not JSON", "{not json"},
		{"truncated", valid(func(map[string]any) {})[:30]},
		{"null", "null"},
		{"array", "[]"},
		{"wrong field type", valid(func(m map[string]any) { m["pid"] = "many" })},
		{"another id", valid(func(m map[string]any) { m["id"] = idAt(t0, 2) })},
		{"earlier version", valid(func(m map[string]any) { m["version"] = 1 })},
		{"future version", valid(func(m map[string]any) { m["version"] = 3 })},
		{"no version", valid(func(m map[string]any) { delete(m, "version") })},
		{"unknown status", valid(func(m map[string]any) { m["status"] = "paused" })},
		{"no update time", valid(func(m map[string]any) { delete(m, "updated") })},
		// Valid JSON, so only the size can make it corrupt.
		{"larger than the directory may hold", valid(func(map[string]any) {}) + strings.Repeat(" ", 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t, 0, 4096, 0)
			if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, s.path(id), tt.content)
			if _, err := s.Load(id); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Load: got %v, want ErrCorrupt", err)
			}
			if got, err := s.List(0); err != nil || len(got) != 0 {
				t.Errorf("List: got %v, %v; want the corrupt record skipped", got, err)
			}
		})
	}
	t.Run("directory in its place", func(t *testing.T) {
		s, _ := newStore(t, 0, 0, 0)
		if err := os.MkdirAll(s.path(id), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(id); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Load: got %v, want ErrCorrupt", err)
		}
	})
	t.Run("sanity: the valid form loads", func(t *testing.T) {
		s, _ := newStore(t, 0, 4096, 0)
		if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, s.path(id), valid(func(map[string]any) {}))
		if _, err := s.Load(id); err != nil {
			t.Errorf("Load: got %v, want nil", err)
		}
	})
}

func TestConcurrentProcesses(t *testing.T) {
	// Two stores on one directory stand for two server processes; tight bounds make every
	// Save prune, so files vanish under List, Load and Prune all the time.
	const (
		workers = 8
		rounds  = 15
	)
	dir := filepath.Join(t.TempDir(), "results")
	stores := []*Store{Open(dir, 0, 16<<10, 6), Open(dir, 0, 16<<10, 6)}

	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	pick := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(ids) == 0 {
			return idAt(t0, 0)
		}
		return ids[rand.IntN(len(ids))]
	}
	for w := range workers {
		wg.Go(func() {
			s := stores[w%len(stores)]
			for range rounds {
				id := NewID(time.Now())
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				// Eight workers, room for six records, and a running record is never removed:
				// a new one may find the directory full.
				if err := s.Save(Record{ID: id, Status: Running, PID: w, Created: time.Now()}); err != nil && !errors.Is(err, ErrFull) {
					t.Errorf("Save running: %v", err)
				}
				for _, other := range []string{id, pick()} {
					if _, err := s.Load(other); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrExpired) {
						t.Errorf("Load(%s): %v", other, err)
					}
				}
				done := Record{ID: id, Status: Done, PID: w, Created: time.Now(), Answer: strings.Repeat("a", 1500)}
				if err := s.Save(done); err != nil && !errors.Is(err, ErrFull) {
					t.Errorf("Save done: %v", err)
				}
				if _, err := s.List(3); err != nil {
					t.Errorf("List: %v", err)
				}
				if err := s.Prune(); err != nil {
					t.Errorf("Prune: %v", err)
				}
			}
		})
	}
	wg.Wait()

	got := names(t, dir)
	if len(got) > 6 {
		t.Errorf("after the storm: got %d files %v, want at most 6", len(got), got)
	}
	for _, name := range got {
		id, ok := strings.CutSuffix(name, recordExt)
		if !ok {
			t.Errorf("left over: %s", name)
			continue
		}
		if _, err := stores[0].Load(id); err != nil {
			t.Errorf("Load(%s) after the storm: %v", id, err)
		}
	}
}

func TestRemoveIfSame(t *testing.T) {
	// Between judging a file (expired, oldest) and removing it, another process may rename
	// a newer record over it: the newer record must stay.
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	name := recordName(idAt(t0, 1))
	p := filepath.Join(dir, name)
	writeFile(t, p, "old")
	judged, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p+".new", "new")
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if err := removeIfSame(root, name, judged); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "new" {
		t.Fatalf("replaced file: got %q, %v; want the newer record kept", b, err)
	}

	current, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := removeIfSame(root, name, current); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unchanged file: got %v, want removed", err)
	}
	if err := removeIfSame(root, name, current); err != nil {
		t.Errorf("file already gone: got %v, want nil", err)
	}
}

// TestProgressSavesDoNotPrune: a running record's progress replaces it without pruning (its
// writes come every few seconds); a save that finishes a record prunes.
func TestProgressSavesDoNotPrune(t *testing.T) {
	const ttl = time.Hour
	s, clk := newStore(t, ttl, 0, 0)
	old, running := idAt(t0, 1), idAt(t0, 2)
	mustSave(t, s, record(old, clk))
	clk.advance(ttl / 2)
	mustSave(t, s, Record{ID: running, Status: Running, PID: 99, Created: clk.now()})
	clk.advance(ttl/2 + time.Second) // old has expired
	mustSave(t, s, Record{ID: running, Status: Running, PID: 99, Created: t0, Progress: &Progress{Phase: "receiving the answer"}})
	if got, want := names(t, s.Dir()), recordNames(old, running); !slices.Equal(got, want) {
		t.Errorf("after a progress save: %v, want %v (nothing pruned)", got, want)
	}
	done := record(running, clk)
	mustSave(t, s, done)
	if got, want := names(t, s.Dir()), recordNames(running); !slices.Equal(got, want) {
		t.Errorf("after the finishing save: %v, want %v (the expired record pruned)", got, want)
	}
}
