package results

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/testrun"
	"github.com/consultmcp/consult/providers"
)

// TestRecordCapHoldsTheLargestAnswer: MaxRecordBytes holds a record carrying the largest
// answer a provider call keeps three times over (a margin over the two a record holds: the
// answer and the structured result), each doubled by JSON escaping; such a record saves and
// loads.
func TestRecordCapHoldsTheLargestAnswer(t *testing.T) {
	t.Parallel()
	testrun.Large(t, "an 8 MiB answer escaped into a record")
	if need := consult.Bytes(3 * 2 * providers.MaxAnswerBytes); MaxRecordBytes < need+1<<20 {
		t.Fatalf("MaxRecordBytes %v cannot hold three escaped copies of a %d-byte answer (%v)", MaxRecordBytes, providers.MaxAnswerBytes, need)
	}
	s, clk := newStore(t, 0, 0, 0)
	answer := strings.Repeat("\"quoted\"\n", providers.MaxAnswerBytes/9) // every byte but letters escaped
	r := record(idAt(t0, 1), clk)
	r.Answer = answer
	r.Summary = []byte(`{"answer":` + jsonString(t, answer) + `}`)
	mustSave(t, s, r)
	got, err := s.Load(r.ID)
	if err != nil || got.Answer != answer {
		t.Fatalf("Load of the largest record: %v", err)
	}
}

// jsonString is s as a JSON string.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOversizedRecordRefusedFromItsSize: a 300 MB file planted as a record (sparse: no
// disk is spent) is refused by Load from its size, with a clear error, before a byte is
// read, and skipped by List and Prune the same way: none of them allocates more than a
// megabyte or two. Before, Load read 256 MiB of it.
func TestOversizedRecordRefusedFromItsSize(t *testing.T) {
	s, clk := newStore(t, 0, 0, 0)
	mustSave(t, s, record(idAt(t0, 1), clk))
	id := idAt(t0, 2)
	f, err := os.Create(s.path(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(300 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var loadErr error
	if n := testrun.Allocated(func() { _, loadErr = s.Load(id) }); n > 2<<20 {
		t.Errorf("Load of a 300 MB record allocated %d bytes", n)
	}
	if !errors.Is(loadErr, ErrCorrupt) || !strings.Contains(loadErr.Error(), "300.0 MiB") || !strings.Contains(loadErr.Error(), "not read") {
		t.Errorf("Load: got %v, want ErrCorrupt naming the size and that it was not read", loadErr)
	}
	var ids []string
	if n := testrun.Allocated(func() { ids = listIDs(t, s, 0) }); n > 2<<20 {
		t.Errorf("List with a 300 MB record allocated %d bytes", n)
	}
	if len(ids) != 1 || ids[0] != idAt(t0, 1) {
		t.Errorf("List: got %v, want only the real record", ids)
	}
}

// TestListReadsOnlyTheHead: a record file under the size cap whose leading fields are
// huge (a 16 MiB question, which Save never writes) costs a listing at most what it reads
// of one record's head, and is skipped. Before, the listing decoded the whole question.
func TestListReadsOnlyTheHead(t *testing.T) {
	s, clk := newStore(t, 0, 0, 0)
	mustSave(t, s, record(idAt(t0, 1), clk))
	id := idAt(t0, 2)
	writeFile(t, s.path(id), `{"version":2,"id":"`+id+`","status":"done","query":"`+strings.Repeat("a", 16<<20)+`"}`)
	var ids []string
	if n := testrun.Allocated(func() { ids = listIDs(t, s, 0) }); n > 4<<20 {
		t.Errorf("List with a 16 MiB question allocated %d bytes", n)
	}
	if len(ids) != 1 || ids[0] != idAt(t0, 1) {
		t.Errorf("List: got %v, want only the real record", ids)
	}
}
