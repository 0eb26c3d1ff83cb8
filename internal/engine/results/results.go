// Package results keeps the results of background consultations in a directory, so that a
// later tool call, possibly served by another process after a restart, can collect them by
// id.
//
// Each consultation is one file, <id>.json, holding a Record in three sections (see
// format.go: its head as JSON, the answer's bytes, the large fields as JSON). Any number of server
// processes may share the directory (every MCP client starts its own server), so:
//
//   - a record is written to a temporary file in the same directory and renamed into place:
//     a reader sees the old record or the new one, never a mix;
//   - a file that vanishes between listing the directory and opening it (another process
//     pruned it) is skipped, and a removal never fails because the file is already gone;
//   - before a file is removed it is checked to be the one that was judged (not a newer
//     record renamed over it since);
//   - a file that is not ours (its name is not an id followed by ".json", or not our
//     temporary-file form) is never read, counted or removed, and a record that does not
//     decode is skipped by List and reported by Load as ErrCorrupt.
//
// Each record carries its own expiry time, set by the server that saved it from its own
// TTL: a server started with a shorter TTL never removes another server's fresh results.
// A record's file carries that expiry time as modification time, so Prune orders and
// expires records from one stat each, reading only the head of a file that looks expired
// (a record written before records carried their expiry has its Updated time there).
//
// The directory must be the user's: owned by them, not writable by group or others, inside
// parents others cannot write (sticky ones aside); else every method refuses it with an
// error wrapping ErrUnsafeDir. It is opened as an *os.Root for each operation, and every
// file in it is opened through that root, without following a symbolic link, without
// blocking (a FIFO named like a record must not hang a reader), and used only when it is
// a regular file; new files are created exclusively (a temporary file, then renamed).
// A record file larger than MaxRecordBytes is refused from its size, before it is read.
package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
)

// Bounds of the results directory.
const (
	// MaxResultsBytes bounds the results directory: answers are tens of kilobytes, so 256 MiB
	// holds thousands; beyond it the oldest are removed first.
	MaxResultsBytes consult.Bytes = 256 << 20
	// MaxResults bounds the number of saved results, so listing and pruning stay fast.
	MaxResults = 2000
	// MaxRecordBytes bounds one record file. A record holds the answer (at most
	// providers.MaxAnswerBytes, 8 MiB) once as it is, plus small fields and a follow-up's
	// earlier turns, whose answers JSON escaping may double: 64 MiB holds that. A larger file is not one consult wrote, and is refused from its size
	// before a byte of it is read; Save refuses to write one.
	MaxRecordBytes consult.Bytes = 64 << 20
	// maxHeadBytes bounds what a listing reads of one record: the fields before the
	// answer (the question cut to 200 bytes, the path, the progress) take a few
	// kilobytes.
	maxHeadBytes = 256 << 10
)

// Status of a saved consultation.
type Status string

// The statuses a record can have.
const (
	// Running is written when a consultation goes to the background; PID says which
	// process runs it.
	Running Status = "running"
	// Done is final: the result (answer, failure or partial state) is in the record.
	Done Status = "done"
)

// Record is one saved consultation, as stored in <dir>/<id>.json.
type Record struct {
	// Version is the record format (3); Save sets it. A record of format 2 is read as one of
	// format 3, and any other is refused.
	Version int `json:"version"`
	// ID names the consultation; it has the form NewID gives.
	ID string `json:"id"`
	// Status says whether the consultation is still running or done.
	Status Status `json:"status"`
	// PID is the process running the consultation (Running records), as the caller set it.
	PID int `json:"pid,omitempty"`
	// PIDStart identifies the process PID names beyond its number: its start time as the
	// system counts it (Linux: field 22 of /proc/PID/stat), 0 when unknown. A process with
	// PID's number but another start time is not the one that ran the consultation.
	PIDStart uint64 `json:"pid_start,omitempty"`
	// Worker is true when PID is a worker process of the consultation's own (it may be
	// signalled to stop it), false when it is a server running the consultation inside.
	Worker bool `json:"worker,omitempty"`
	// Owner is who started the consultation (a digest of the caller's credentials, "" for
	// a local client), as the caller set it; only the same owner may list or collect it.
	Owner string `json:"owner,omitempty"`
	// Session is the client session that started the consultation (the MCP session id over
	// HTTP, "" over stdio), and Instance the server process it was connected to (a random
	// name per process): a listing shows a session its own consultations first.
	Session  string `json:"session,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Created is when the consultation started.
	Created time.Time `json:"created"`
	// Updated is when this record was written; Save sets it to the current time.
	Updated time.Time `json:"updated"`
	// Expires is when the record may be removed: Save sets it to Updated plus the saving
	// store's TTL. Zero in a record written before records carried it: Updated plus the
	// reading store's TTL then.
	Expires time.Time `json:"expires,omitzero"`
	// Path is the directory the consultation gathered files from.
	Path string `json:"path,omitempty"`
	// Pattern is the glob that chose the files.
	Pattern string `json:"pattern,omitempty"`
	// Model is the model consulted.
	Model string `json:"model,omitempty"`
	// Query is the question; Save truncates it to 200 bytes on a UTF-8 boundary.
	Query string `json:"query,omitempty"`
	// IsError says the tool result is an error.
	IsError bool `json:"is_error,omitempty"`
	// Note says something about how the record came to be, e.g. "saved at shutdown".
	Note string `json:"note,omitempty"`
	// Progress is how a running consultation is doing, as its worker last wrote it.
	Progress *Progress `json:"progress,omitempty"`
	// Facts are what the result's words need beyond its summary (consultation.Facts),
	// stored as given; they must be valid JSON. It and the fields after it are the large
	// ones: they come last in the file, so a listing reads only the fields before them.
	Facts json.RawMessage `json:"facts,omitempty"`
	// Answer is the model's full (or partial) answer.
	Answer string `json:"answer,omitempty"`
	// Summary is the structured content, stored as given (the JSON encoder compacts its
	// whitespace); it must be valid JSON.
	Summary json.RawMessage `json:"summary,omitempty"`
	// Exclude is the exclude_pattern the consultation gathered with.
	Exclude string `json:"exclude,omitempty"`
	// Question is the whole question (Query is cut for listings).
	Question string `json:"question,omitempty"`
	// Thread holds the earlier questions of a follow-up (follow_up_of) with their answers,
	// oldest first; this record's own question and answer come after them.
	Thread []Turn `json:"thread,omitempty"`
	// Digests are the SHA-256 digests (hex) of the files the consultation sent, by path:
	// a follow-up names the files that changed since.
	Digests map[string]string `json:"digests,omitempty"`
}

// Turn is one question of a consultation's thread and the answer it got.
type Turn struct {
	Query  string `json:"query"`
	Answer string `json:"answer"`
}

// Progress is a running consultation's state, rewritten by its worker every heartbeat or so.
type Progress struct {
	// Phase is what it is doing ("gathering files", "receiving the answer", ...).
	Phase string `json:"phase"`
	// Message is the progress line a client is shown, e.g. "model thinking, 40s, 1,200
	// reasoning tokens".
	Message string `json:"message,omitempty"`
	// ElapsedSeconds is the time since the consultation started, when this was written.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Files, Bytes and PromptTokens size what was gathered, once counted.
	Files        int            `json:"files,omitempty"`
	Bytes        consult.Bytes  `json:"bytes,omitempty"`
	PromptTokens consult.Tokens `json:"prompt_tokens,omitempty"`
	// ReasoningTokens and AnswerTokens count what the model has streamed so far.
	ReasoningTokens consult.Tokens `json:"reasoning_tokens,omitempty"`
	AnswerTokens    consult.Tokens `json:"answer_tokens,omitempty"`
	// Attempts counts the model requests sent.
	Attempts int `json:"attempts,omitempty"`
	// Cost is the consultation's two figures in words, once priced: "expected $0.0040, at
	// most $0.14 (prices: …)", or "price unknown".
	Cost string `json:"cost,omitempty"`
}

// bodyFields are the JSON names of the large fields, which come last in a record's head.
var bodyFields = map[string]bool{"facts": true, "answer": true, "summary": true}

// Errors of Load, Save and ParseID; check them with errors.Is.
var (
	// ErrNotFound: no record has this id (never saved, or already pruned).
	ErrNotFound = errors.New("no such consultation")
	// ErrExpired: the record was past its expiry time; Load removed it.
	ErrExpired = errors.New("consultation result expired")
	// ErrBadID: the id does not have the form NewID gives.
	ErrBadID = errors.New("malformed consultation id")
	// ErrCorrupt: the record's file exists but does not hold a record Load can use.
	ErrCorrupt = errors.New("corrupt result record")
	// ErrFull: Save did not keep a new record because the directory is at its bounds with
	// records it may not remove (see Prune); its message gives the figures.
	ErrFull = errors.New("the results directory is full")
)

// Errors of Save that callers are not expected to tell apart; tests check them.
var (
	errBadStatus = errors.New("record status is neither running nor done")
	errTooLarge  = errors.New("record is larger than the results directory may hold")
	errNoDir     = errors.New("no results directory")
)

const (
	// recordVersion is the record format Save writes and Load accepts.
	recordVersion = 3
	// maxQuery is how much of the question a record keeps, in bytes: enough to recognise
	// it in a listing; the answer is what the record is for.
	maxQuery = 200
	// recordExt ends the name of every record file.
	recordExt = ".json"
	// tempPrefix and tempSuffix frame the names of the temporary files Save writes; no
	// record name starts with a dot, so the two can never be confused.
	tempPrefix = ".result-"
	tempSuffix = ".tmp"
	// staleTemp is the age from which a temporary file is taken for the leftover of a
	// writer that crashed: a write takes milliseconds.
	staleTemp = time.Hour
)

// Store is a results directory. Its methods are safe for concurrent use, and any number of
// processes may use the same directory at once.
type Store struct {
	dir      string
	ttl      time.Duration
	maxBytes consult.Bytes
	maxFiles int
	now      func() time.Time // time.Now; tests replace it
}

// Open returns the store in dir, keeping records for ttl after their last update and at
// most maxBytes and maxFiles of them; a zero (or negative) ttl, maxBytes or maxFiles takes
// consult.DefaultResultsTTL, MaxResultsBytes or MaxResults. Open does no
// I/O: the directory is created (mode 0700, with its parents) by the first Save, so a
// server that never saves never creates it, and it is checked (see ErrUnsafeDir) by
// every operation, which fails when it is not the user's; Check checks it at once.
func Open(dir string, ttl time.Duration, maxBytes consult.Bytes, maxFiles int) *Store {
	if ttl <= 0 {
		ttl = consult.DefaultResultsTTL
	}
	if maxBytes <= 0 {
		maxBytes = MaxResultsBytes
	}
	if maxFiles <= 0 {
		maxFiles = MaxResults
	}
	return &Store{dir: dir, ttl: ttl, maxBytes: maxBytes, maxFiles: maxFiles, now: time.Now}
}

// Dir is the results directory.
func (s *Store) Dir() string { return s.dir }

// TTL is how long a record is kept after it was last written.
func (s *Store) TTL() time.Duration { return s.ttl }

// recordName is the name of the record file of this (valid) id in the directory.
func recordName(id string) string { return id + recordExt }

// maxRecord is the largest record this store writes or reads: MaxRecordBytes, or the
// whole directory's bound when that is smaller.
func (s *Store) maxRecord() consult.Bytes { return min(s.maxBytes, MaxRecordBytes) }

// expiry is when r may be removed: its own Expires, or for a record written before records
// carried it, its Updated time plus this store's TTL. The rule is the same for both
// statuses: a Running record is rewritten as Done by its process when the consultation
// ends, so one not rewritten by its expiry belongs to a process that died.
func (s *Store) expiry(r Record) time.Time {
	if !r.Expires.IsZero() {
		return r.Expires
	}
	return r.Updated.Add(s.ttl)
}

// Save writes r as <dir>/<id>.json (mode 0600), replacing any record with that id
// atomically (a link in its place is replaced, never followed), then, unless r is the
// progress of a running record already saved, prunes the directory for r's owner (see
// Prune; a pruning failure is not a Save failure). A record that
// replaces an earlier one of its id (a consultation's progress, its result) is kept even
// when the directory stays over its bounds: its consultation was admitted, and its answer
// is paid for. A new record that leaves the directory over its bounds once what may be
// removed is gone is removed again, and the error wraps ErrFull. Save sets r.Version,
// r.Updated (to now) and r.Expires (now plus the store's TTL), and truncates r.Query;
// r.ID must pass ParseID (else the error wraps ErrBadID) and r.Status must be Running or
// Done. A record that alone is larger than the store's maxBytes (or MaxRecordBytes) is not
// kept: Save removes any earlier record with its id and says so.
func (s *Store) Save(r Record) error {
	if _, err := ParseID(r.ID); err != nil {
		return err
	}
	if r.Status != Running && r.Status != Done {
		return fmt.Errorf("results: %w: %q", errBadStatus, r.Status)
	}
	root, err := s.openDir(true)
	if err != nil {
		return err
	}
	defer root.Close()
	r.Version = recordVersion
	r.Updated = s.now().UTC()
	r.Expires = r.Updated.Add(s.ttl)
	r.Query = truncateUTF8(r.Query, maxQuery)
	data, err := encode(r)
	if err != nil {
		return fmt.Errorf("results: cannot encode consultation %s: %w", r.ID, err)
	}
	if size, limit := consult.Bytes(len(data)), s.maxRecord(); size > limit {
		if err := root.Remove(recordName(r.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("results: consultation %s: %w (%v > %v), and its earlier record cannot be removed: %w",
				r.ID, errTooLarge, size, limit, err)
		}
		return fmt.Errorf("results: consultation %s: %w (%v > %v); it was not saved", r.ID, errTooLarge, size, limit)
	}
	_, err = root.Lstat(recordName(r.ID))
	saved := &saver{id: r.ID, owner: r.Owner, done: r.Status == Done, update: err == nil}
	if err := writeAtomic(root, recordName(r.ID), tempPrefix+r.ID+"-", tempSuffix, data, r.Expires); err != nil {
		return fmt.Errorf("results: cannot save consultation %s in %s: %w", r.ID, s.dir, err)
	}
	if saved.update && !saved.done {
		// A running consultation's progress, written every few seconds, replaces its own
		// record: it takes no room from anyone, and the directory is pruned on its schedule
		// (the server's, see Prune) and by the saves that add or finish a record.
		return nil
	}
	if err := s.prune(root, saved); errors.Is(err, ErrFull) {
		return fmt.Errorf("results: consultation %s was not kept: %w", r.ID, err)
	}
	return nil // the record is saved; a later Save or Prune tries pruning again
}

// saver is the record Save has just written, for prune.
type saver struct {
	id, owner string
	done      bool // its status is Done
	update    bool // it replaced an earlier record of its id
}

// Load returns the record with this id. The error wraps ErrBadID when id is malformed,
// ErrNotFound when there is no such record, ErrCorrupt when its file cannot be used, and
// ErrExpired when it is past its expiry time (Load then removes it, and returns the record
// with the error, so the caller can tell whose it was). A record expires at its own
// Expires time, set by the server that saved it, whatever its status: a Running record is
// rewritten by its process when the consultation ends, so one not rewritten by then
// belongs to a process that died.
func (s *Store) Load(id string) (Record, error) {
	root, err := s.dirOf(id)
	if err != nil {
		return Record{}, err
	}
	defer root.Close()
	r, fi, err := s.read(root, id)
	if err != nil {
		return Record{}, err
	}
	if exp := s.expiry(r); exp.Before(s.now()) {
		_ = removeIfSame(root, recordName(id), fi)
		return r, fmt.Errorf("%w: %s (last written %s, kept until %s)",
			ErrExpired, id, r.Updated.Format(time.RFC3339), exp.Format(time.RFC3339))
	}
	return r, nil
}

// dirOf checks id and opens the directory to read its record from; a missing directory is
// ErrNotFound for id. The caller closes the root.
func (s *Store) dirOf(id string) (*os.Root, error) {
	if _, err := ParseID(id); err != nil {
		return nil, err
	}
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return root, err
}

// LoadHead is Load without the large fields: the record with this id as List gives it,
// read from the head of its file whatever its size. Its errors are Load's (with the record
// and ErrExpired for an expired one, which is not removed here).
func (s *Store) LoadHead(id string) (Record, error) {
	root, err := s.dirOf(id)
	if err != nil {
		return Record{}, err
	}
	defer root.Close()
	r, err := s.readHead(root, id)
	if err != nil {
		return Record{}, err
	}
	if exp := s.expiry(r); exp.Before(s.now()) {
		return r, fmt.Errorf("%w: %s (kept until %s)", ErrExpired, id, exp.Format(time.RFC3339))
	}
	return r, nil
}

// read opens, decodes and checks the record with this (valid) id, and returns it with the
// file's information (for removeIfSame). A missing file is ErrNotFound; a file that does
// not hold a current record for this id is ErrCorrupt.
func (s *Store) read(root *os.Root, id string) (Record, fs.FileInfo, error) {
	f, fi, err := s.open(root, id)
	if err != nil {
		return Record{}, nil, err
	}
	defer f.Close()
	// The file may grow after fstat; what is read stays within the bound.
	limit := s.maxRecord()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return Record{}, nil, fmt.Errorf("results: %w", err)
	}
	if consult.Bytes(len(data)) > limit {
		return Record{}, nil, fmt.Errorf("%w: %s: larger than %v", ErrCorrupt, id, limit)
	}
	r, err := decode(data)
	if err != nil {
		return Record{}, nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, id, err)
	}
	if err := check(r, id); err != nil {
		return Record{}, nil, err
	}
	return r, fi, nil
}

// open opens the record file of this (valid) id in root for reading, without blocking and
// without following a symbolic link, and returns it with its information once fstat shows
// a regular file. A missing file is ErrNotFound; a symbolic link, FIFO, device or
// directory in its place is ErrCorrupt, and so is a file larger than any record: a record
// is never larger than maxRecord (Save refuses it), so such a file is not one of ours, and
// it is refused from its size, since reading it would only cost memory.
func (s *Store) open(root *os.Root, id string) (*os.File, fs.FileInfo, error) {
	f, fi, err := openIn(root, recordName(id), os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	case errors.Is(err, errLink), errors.Is(err, errNotRegular):
		return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	case err != nil:
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	if size, limit := consult.Bytes(fi.Size()), s.maxRecord(); size > limit {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: the file is %v, more than any record consult writes (%v); it was not read, and may be removed", ErrCorrupt, id, size, limit)
	}
	return f, fi, nil
}

// check refuses a decoded record that is not a current record for this id.
func check(r Record, id string) error {
	switch {
	case r.Version != recordVersion:
		return fmt.Errorf("%w: %s: format version %d, want %d", ErrCorrupt, id, r.Version, recordVersion)
	case r.ID != id:
		return fmt.Errorf("%w: %s: the file holds id %q", ErrCorrupt, id, r.ID)
	case r.Status != Running && r.Status != Done:
		return fmt.Errorf("%w: %s: status %q", ErrCorrupt, id, r.Status)
	case r.Updated.IsZero():
		return fmt.Errorf("%w: %s: no update time", ErrCorrupt, id)
	}
	return nil
}

// readHead decodes a record's fields up to its first large one (text, answer, summary)
// and stops there: a listing of thousands of results must not read every answer. It reads
// at most maxHeadBytes of the file, and open refuses a file larger than any record from
// its size: a listing costs the same whatever is planted in the directory.
func (s *Store) readHead(root *os.Root, id string) (Record, error) {
	f, fi, err := s.open(root, id)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, maxHeadBytes))
	line, _ := br.Peek(maxPrefix)
	v2 := len(line) > 0 && line[0] == '{'
	if !v2 {
		sec, err := parsePrefix(line, int(fi.Size()))
		if err != nil {
			return Record{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, id, err)
		}
		_, _ = br.Discard(sec.prefix)
	}
	dec := json.NewDecoder(br)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Record{}, fmt.Errorf("%w: %s: not a JSON object", ErrCorrupt, id)
	}
	head := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return Record{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, id, err)
		}
		if bodyFields[key] {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Record{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, id, err)
		}
		head[key] = v
	}
	b, err := json.Marshal(head)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, id, err)
	}
	if v2 {
		if r.Version != 2 {
			return Record{}, fmt.Errorf("%w: %s: a one-object record of format version %d, want 2", ErrCorrupt, id, r.Version)
		}
		r.Version = recordVersion
	}
	return r, check(r, id)
}

// List returns the saved records, newest Created first (ties: greater id first), at most
// limit of them (all if limit <= 0). Expired records are left out, and files that vanish,
// cannot be read or are corrupt are skipped; a missing directory is an empty list. The
// records come without Text, Answer and Summary: a listing is a table of contents, and
// Load gives the rest.
func (s *Store) List(limit int) ([]Record, error) {
	root, entries, err := s.readDir()
	if root == nil {
		return nil, err
	}
	defer root.Close()
	now := s.now()
	var out []Record
	for _, e := range entries {
		id, ok := recordID(e)
		if !ok {
			continue
		}
		r, err := s.readHead(root, id)
		if err != nil || s.expiry(r).Before(now) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out, nil
}

// readDir opens the directory and reads its entries; a missing directory is a nil root and
// no error. The caller closes the root.
func (s *Store) readDir() (*os.Root, []fs.DirEntry, error) {
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		root.Close()
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	return root, entries, nil
}

// recordID returns the id of a directory entry named like one of our record files,
// <id>.json with a valid id. Whether it is a regular file is for the caller to check.
func recordID(e fs.DirEntry) (string, bool) {
	id, ok := strings.CutSuffix(e.Name(), recordExt)
	if !ok {
		return "", false
	}
	if _, err := ParseID(id); err != nil {
		return "", false
	}
	return id, true
}

// isTemp reports whether name is one of the temporary files Save writes.
func isTemp(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix)
}

// Prune removes the expired records (each by its own expiry time), the temporary files
// that crashed writers left more than an hour ago, and the cancel, lock, log and collected
// files of consultations whose record is gone, untouched for an hour. Then, while the
// records take more than maxBytes or number more than maxFiles, it removes records that
// were collected (MarkCollected), whoever's they are, soonest to expire first: a record
// that has not been collected, or is still running, is never removed before it expires.
// (Save, pruning for the owner whose record it saves, may also remove that owner's own
// earlier results; see Save.) Files that are not ours are left alone, a missing directory
// is fine, and a file another process removed first is no error.
func (s *Store) Prune() error {
	root, err := s.openDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return s.prune(root, nil)
}

// prune is Prune in root, for the record Save has just written (nil: for none). That record
// is never removed to make room for others; to make room for it, the records of its owner
// that are done may be removed after the collected ones, soonest to expire first (a running
// record's progress only makes room from what was collected: it is written every few
// seconds, and reading every record's owner each time would cost more than it saves). When
// that is not enough and the record is new, it is removed and the error wraps ErrFull.
func (s *Store) prune(root *os.Root, saved *saver) error {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	type rec struct {
		id      string
		info    fs.FileInfo
		expires time.Time
	}
	var (
		now       = s.now()
		recs      = make([]rec, 0, len(entries))
		collected = map[string]bool{}
		total     consult.Bytes
		errs      []error
		keep      string
	)
	if saved != nil {
		keep = saved.id
	}
	remove := func(name string, info fs.FileInfo) bool {
		if err := removeIfSame(root, name, info); err != nil {
			errs = append(errs, err)
			return false
		}
		if id, ok := strings.CutSuffix(name, recordExt); ok {
			_ = root.Remove(auxName(id, collectedExt)) // its marker goes with it
		}
		return true
	}
	for _, e := range entries {
		if isTemp(e.Name()) {
			info, err := e.Info()
			if err == nil && info.Mode().IsRegular() && now.Sub(info.ModTime()) > staleTemp {
				remove(e.Name(), info)
			}
			continue
		}
		if id, ok := auxID(e.Name()); ok {
			if strings.HasSuffix(e.Name(), collectedExt) {
				collected[id] = true
			}
			if info, err := e.Info(); err == nil && staleAux(root, id, info, now) {
				remove(e.Name(), info)
			}
			continue
		}
		id, ok := recordID(e)
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue // vanished, or replaced by something that is not ours
		}
		expires := info.ModTime()
		if expires.Before(now) && id != keep {
			// The file's time says expired; the record's own expiry decides (it differs for
			// a record written before records carried one). A record that cannot be read
			// is taken at the file's word.
			if r, err := s.readHead(root, id); err == nil {
				expires = s.expiry(r)
			}
			if expires.Before(now) {
				remove(e.Name(), info)
				continue
			}
		}
		recs = append(recs, rec{id, info, expires})
		total += consult.Bytes(info.Size())
	}
	count := len(recs)
	over := func() bool { return total > s.maxBytes || count > s.maxFiles }
	if !over() {
		return errors.Join(errs...)
	}
	// Soonest to expire first; the id (creation time first) breaks ties of coarse file clocks.
	slices.SortFunc(recs, func(a, b rec) int {
		if c := a.expires.Compare(b.expires); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	evict := func(may func(id string) bool) {
		for i, r := range recs {
			if !over() {
				return
			}
			if r.info == nil || r.id == keep || !may(r.id) {
				continue
			}
			if remove(recordName(r.id), r.info) {
				total -= consult.Bytes(r.info.Size())
				count--
				recs[i].info = nil
			}
		}
	}
	evict(func(id string) bool { return collected[id] })
	if saved != nil && (saved.done || !saved.update) {
		evict(func(id string) bool {
			h, err := s.readHead(root, id)
			return err == nil && h.Owner == saved.owner && h.Status == Done
		})
	}
	if over() && saved != nil && !saved.update {
		for _, r := range recs {
			if r.id == keep && remove(recordName(r.id), r.info) {
				return fmt.Errorf("%w: %d results (%v) are kept until they are collected or expire, and the directory holds at most %v and %s results",
					ErrFull, count-1, total-consult.Bytes(r.info.Size()), s.maxBytes, consult.Thousands(int64(s.maxFiles)))
			}
		}
	}
	return errors.Join(errs...)
}

// removeIfSame removes name from root if it is still the file described by info: a record
// renamed over it since (a newer Save, perhaps by another process) is left alone, and a
// file already gone is no error.
func removeIfSame(root *os.Root, name string, info fs.FileInfo) error {
	cur, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if !os.SameFile(cur, info) {
		return nil
	}
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// A UTF-8 sequence has at most UTFMax-1 continuation bytes; farther back, s is not
	// UTF-8 there, and any cut is as good as another.
	for cut := n; cut > 0 && n-cut < utf8.UTFMax; cut-- {
		if utf8.RuneStart(s[cut]) {
			return s[:cut]
		}
	}
	return s[:n]
}
