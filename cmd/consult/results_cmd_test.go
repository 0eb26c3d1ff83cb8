package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// resultsCLI runs `consult results` in this process with args after --results-dir dir.
func resultsCLI(dir string, args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = runResults(context.Background(), append([]string{"--results-dir", dir}, args...), env(nil), &o, &e)
	return o.String(), e.String(), err
}

// hostile is text a model or a user's files could put in a record: OSC 52 (writes the
// clipboard), CSI sequences in 7-bit and 8-bit (U+009B) form, a bidi override, BEL.
const hostile = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07\x1b[2J\u009b31m\u202eevil\u202c"

// rawControls are what must never reach the terminal raw.
var rawControls = []string{"\x1b", "\x07", "\u009b", "\u202e", "\u202c"}

// TestResultsEscapesTerminal: `consult results` prints the question, model and answer of
// a record escaped for the terminal (as MCP results are), keeping the answer's newlines
// and tabs; --json prints the same record, equal once decoded, with no raw control either.
func TestResultsEscapesTerminal(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "results")
	store := results.Open(dir, 0, 0, 0)
	id := results.NewID(time.Now())
	answer := "First line " + hostile + "\n\tindented line\nlast"
	rec := results.Record{ID: id, Status: results.Done, Created: time.Now(), Model: "m" + hostile, Query: "why " + hostile, Answer: answer,
		Summary: mustJSON(t, consultation.Summary{Kind: consultation.KindAnswer, Model: "m" + hostile, Answer: answer})}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	list, _, err := resultsCLI(dir)
	if err != nil {
		t.Fatal(err)
	}
	show, _, err := resultsCLI(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"listing": list, "record": show} {
		for _, c := range rawControls {
			if strings.Contains(out, c) {
				t.Errorf("%s prints %q raw:\n%q", name, c, out)
			}
		}
		if !strings.Contains(out, `\x1b]52;c;`) || !strings.Contains(out, `\u202e`) || !strings.Contains(out, `\u009b`) {
			t.Errorf("%s lacks the escaped controls:\n%s", name, out)
		}
	}
	if !strings.Contains(show, "\n\tindented line\nlast") {
		t.Errorf("record: the answer's newlines and tab are not kept:\n%q", show)
	}
	for _, args := range [][]string{{"--json", id}, {"--json"}} {
		out, _, err := resultsCLI(dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rawControls {
			if strings.Contains(out, c) {
				t.Errorf("%v prints %q raw", args, c)
			}
		}
		var got results.Record
		if len(args) == 1 {
			var list []results.Record
			if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			got = list[0]
		} else if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if got.Query != rec.Query || got.Model != rec.Model || (len(args) == 2 && got.Answer != answer) {
			t.Errorf("%v: the record decoded differs: %+v", args, got)
		}
	}
}

// TestResultsOversizedRecord: a 300 MB file planted as a record (sparse) costs `consult
// results` almost nothing: the listing skips it and showing it is refused from its size,
// with a clear error. Before, showing it allocated over 500 MB.
func TestResultsOversizedRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	store := results.Open(dir, 0, 0, 0)
	good := results.NewID(time.Now())
	if err := store.Save(results.Record{ID: good, Status: results.Done, Created: time.Now(), Query: "a real one", Answer: "answer", Summary: mustJSON(t, consultation.Summary{Kind: consultation.KindAnswer, Answer: "answer"})}); err != nil {
		t.Fatal(err)
	}
	big := results.NewID(time.Now())
	f, err := os.Create(filepath.Join(dir, big+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(300 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var list string
	var listErr, showErr error
	n := testrun.Allocated(func() {
		list, _, listErr = resultsCLI(dir)
		_, _, showErr = resultsCLI(dir, big)
	})
	if n > 8<<20 {
		t.Errorf("consult results with a 300 MB record allocated %d bytes", n)
	}
	if listErr != nil || !strings.Contains(list, good) || strings.Contains(list, big) {
		t.Errorf("listing: %v\n%s", listErr, list)
	}
	if showErr == nil || !strings.Contains(showErr.Error(), "300.0 MiB") || !strings.Contains(showErr.Error(), "not read") {
		t.Errorf("showing the planted record: got %v, want a refusal naming its size", showErr)
	}
}

// TestResultsUnsafeDir: `consult results` on a directory others may write refuses it,
// saying how to fix it, and prints nothing from it.
func TestResultsUnsafeDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "results")
	store := results.Open(dir, 0, 0, 0)
	id := results.NewID(time.Now())
	if err := store.Save(results.Record{ID: id, Status: results.Done, Created: time.Now(), Query: "q", Answer: "planted answer", Summary: mustJSON(t, consultation.Summary{Kind: consultation.KindAnswer, Answer: "planted answer"})}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {id}, {"--cancel", id}} {
		out, _, err := resultsCLI(dir, args...)
		if !errors.Is(err, results.ErrUnsafeDir) || !strings.Contains(err.Error(), "chmod go-w "+dir) {
			t.Errorf("consult results %v: got %v, want a refusal naming chmod go-w", args, err)
		}
		if out != "" {
			t.Errorf("consult results %v printed %q", args, out)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResultsShowsNobodyWaits: `consult results` marks a consultation whose client stopped
// waiting without asking for a stop, in the listing and in --json, until it is named.
func TestResultsShowsNobodyWaits(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "results")
	store := results.Open(dir, 0, 0, 0)
	left, named := results.NewID(time.Now()), results.NewID(time.Now())
	for _, id := range []string{left, named} {
		rec := results.Record{ID: id, Status: results.Done, Created: time.Now(), Model: "m", Query: "q", Answer: "a",
			Summary: mustJSON(t, consultation.Summary{Kind: consultation.KindAnswer, Model: "m", Answer: "a"})}
		if err := store.Save(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.WriteOrphan(left, ""); err != nil {
		t.Fatal(err)
	}
	list, _, err := resultsCLI(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(list, "\n") {
		switch {
		case strings.HasPrefix(line, left) && !strings.Contains(line, "nobody waits"):
			t.Errorf("the consultation nobody waits for is not marked: %q", line)
		case strings.HasPrefix(line, named) && strings.Contains(line, "nobody waits"):
			t.Errorf("another consultation is marked: %q", line)
		}
	}
	js, _, err := resultsCLI(dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	if err := json.Unmarshal([]byte(js), &entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if got, want := e["nobody_waits"] == true, e["id"] == left; got != want {
			t.Errorf("%v: nobody_waits = %v, want %v", e["id"], got, want)
		}
	}
}
