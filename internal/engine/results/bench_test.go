package results

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fullStore returns a store at its count limit (MaxResults records of about 20 KB,
// a typical answer), the case where every Save also prunes.
func fullStore(b *testing.B) *Store {
	b.Helper()
	s := Open(b.TempDir(), 0, 0, 0)
	answer := strings.Repeat("An answer line that quotes some code.\n", 500)
	base := time.Now().Add(-time.Hour)
	for i := range MaxResults {
		at := base.Add(time.Duration(i) * time.Second)
		if err := s.Save(Record{ID: NewID(at), Status: Done, Created: at, Query: "q", Answer: answer}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkSaveFull: saving a result into a full directory, pruning included.
func BenchmarkSaveFull(b *testing.B) {
	s := fullStore(b)
	answer := strings.Repeat("An answer line that quotes some code.\n", 500)
	b.ResetTimer()
	for b.Loop() {
		now := time.Now()
		if err := s.Save(Record{ID: NewID(now), Status: Done, Created: now, Query: "q", Answer: answer}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad: collecting one result.
func BenchmarkLoad(b *testing.B) {
	s := fullStore(b)
	recs, err := s.List(1)
	if err != nil || len(recs) != 1 {
		b.Fatal(recs, err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Load(recs[0].ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListFull: consultation_result without an id over a full directory.
func BenchmarkListFull(b *testing.B) {
	s := fullStore(b)
	b.ResetTimer()
	for b.Loop() {
		recs, err := s.List(0)
		if err != nil || len(recs) != MaxResults {
			b.Fatal(len(recs), err)
		}
	}
}

// largeRecord saves a record whose answer is 8 MiB (the answer cap, providers.MaxAnswerBytes)
// with its summary repeating it, as a paged answer's record is, and returns its id.
func largeRecord(b *testing.B) (*Store, string) {
	b.Helper()
	s := Open(b.TempDir(), 0, 0, 0)
	answer := strings.Repeat("An answer line that quotes \"some\" code: fmt.Println(x)\n", (8<<20)/55)
	sum, _ := json.Marshal(map[string]any{"kind": "answer", "model": "m", "answer": answer, "files": 120, "bytes": 480000})
	id := NewID(time.Now())
	if err := s.Save(Record{ID: id, Status: Done, Created: time.Now(), Query: "q", Answer: answer, Summary: sum}); err != nil {
		b.Fatal(err)
	}
	return s, id
}

// BenchmarkPageRead: reading one 30,000-byte page from the middle of an 8 MiB answer, as
// consultation_result with an offset does. B/op is the memory one page read takes.
func BenchmarkPageRead(b *testing.B) {
	s, id := largeRecord(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, part, err := s.LoadPart(id, 4<<20, 30_000); err != nil || len(part.Text) != 30_000 {
			b.Fatal(len(part.Text), err)
		}
	}
}

// BenchmarkLoadLarge: loading the same record whole, as a page read did before LoadPart:
// the figure BenchmarkPageRead is to be compared with.
func BenchmarkLoadLarge(b *testing.B) {
	s, id := largeRecord(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Load(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProgressSaveFull: a running consultation's progress written into a full
// directory, as a worker does at every heartbeat: no pruning.
func BenchmarkProgressSaveFull(b *testing.B) {
	s := fullStore(b)
	now := time.Now()
	rec := Record{ID: NewID(now), Status: Running, Created: now, Query: "q", Progress: &Progress{Phase: "receiving the answer"},
		Answer: strings.Repeat("A partial answer line.\n", 200)}
	if err := s.Save(rec); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.Save(rec); err != nil {
			b.Fatal(err)
		}
	}
}
