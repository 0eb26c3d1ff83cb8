package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// partAnswers are answers whose JSON form has every kind of escape: quotes, backslashes,
// control characters, the line separators encoding/json escapes, HTML characters, and
// characters of two, three and four bytes.
var partAnswers = map[string]string{
	"empty":     "",
	"ascii":     strings.Repeat("plain text line\n", 3000),
	"escapes":   strings.Repeat("a \"quote\" and a \\ back\tslash\x01\x1f <b>&amp;</b>\u2028\u2029\r\n", 700),
	"multibyte": strings.Repeat("é世🙂\n", 9000),
}

// TestLoadPartMatchesLoad: LoadPart returns the same stretch of the answer as slicing
// Load's answer, at every offset and size tried, and the same record less the large
// fields and those after the summary, its summary less the answer it repeats.
func TestLoadPartMatchesLoad(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, time.Hour, 0, 0)
	for name, answer := range partAnswers {
		t.Run(name, func(t *testing.T) {
			id := NewID(t0)
			sum, _ := json.Marshal(map[string]any{"kind": "answer", "answer": answer, "model": "m", "withheld": []map[string]string{{"path": ".env", "reason": "env"}}})
			want := Record{ID: id, Status: Done, Owner: "me", Created: t0, Path: "/src", Pattern: "**", Model: "m", Query: "q",
				Facts: json.RawMessage(`{"lead":"x"}`), Answer: answer, Summary: sum, Exclude: "x/**", Question: "the whole question",
				Thread: []Turn{{Query: "before", Answer: answer}}, Digests: map[string]string{"a.go": "00"}}
			if err := s.Save(want); err != nil {
				t.Fatal(err)
			}
			full, err := s.Load(id)
			if err != nil {
				t.Fatal(err)
			}
			for _, off := range []int{0, 1, 7, len(answer) / 3, len(answer) - 1, len(answer), len(answer) + 5} {
				if off < 0 {
					continue
				}
				for _, n := range []int{0, 1, 4, 30_000, 1 << 30} {
					rec, part, err := s.LoadPart(id, off, n)
					if err != nil {
						t.Fatalf("LoadPart(%d, %d): %v", off, n, err)
					}
					lo, hi := min(off, len(answer)), min(off+n, len(answer))
					wantText := ""
					if lo < hi {
						wantText = answer[lo:hi]
					}
					if part.Text != wantText || part.Total != len(answer) || part.Offset != off {
						t.Fatalf("LoadPart(%d, %d): %d bytes at %d of %d, want %d bytes of %d", off, n, len(part.Text), part.Offset, part.Total, len(wantText), len(answer))
					}
					if off == 1 && n == 4 {
						checkPartRecord(t, rec, full)
					}
				}
			}
		})
	}
}

// checkPartRecord compares a record LoadPart returned with the one Load returned.
func checkPartRecord(t *testing.T, got, full Record) {
	t.Helper()
	var gotSum, wantSum map[string]any
	if err := json.Unmarshal(got.Summary, &gotSum); err != nil {
		t.Fatalf("summary %s: %v", got.Summary, err)
	}
	if err := json.Unmarshal(full.Summary, &wantSum); err != nil {
		t.Fatal(err)
	}
	delete(wantSum, "answer")
	if !reflect.DeepEqual(gotSum, wantSum) {
		t.Errorf("summary %v, want %v", gotSum, wantSum)
	}
	want := full
	want.Answer, want.Exclude, want.Question, want.Thread, want.Digests = "", "", "", nil, nil
	got.Summary, want.Summary = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record\n%+v\nwant\n%+v", got, want)
	}
}

// TestLoadPartErrors: LoadPart refuses what Load refuses, the same way, and a record whose
// small fields pass its bound is corrupt rather than read whole.
func TestLoadPartErrors(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, time.Hour, 0, 0)
	id := NewID(t0)
	if _, _, err := s.LoadPart("../x", 0, 10); !errors.Is(err, ErrBadID) {
		t.Errorf("malformed id: %v", err)
	}
	if _, _, err := s.LoadPart(id, 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("no directory: %v", err)
	}
	if err := s.Save(Record{ID: id, Status: Done, Owner: "me", Created: t0, Answer: "abc"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LoadPart(NewID(t0), 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	big := NewID(t0)
	huge := strings.Repeat("x", maxPartMeta)
	if err := s.Save(Record{ID: big, Status: Done, Created: t0, Answer: "abc", Summary: json.RawMessage(`{"message":"` + huge + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LoadPart(big, 0, 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a summary larger than a part read keeps: %v", err)
	}
	for name, body := range map[string]string{
		"truncated":     `{"version":2,"id":"` + id + `","status":"done","answer":"ab`,
		"not an object": `["version"]`,
		"bad escape":    `{"version":2,"answer":"a\q"}`,
		"bad literal":   `{"version":2,"pid":12x}`,
		"cut short":     "consult-record 3 40 3 3\n{}",
		"not a header":  "consult-record three\n{}",
		"old version":   "consult-record 2 2 0 2\n{}{}",
		"head not JSON": "consult-record 3 2 0 2\n{x{}",
	} {
		if err := os.WriteFile(filepath.Join(s.Dir(), id+".json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LoadPart(id, 0, 10); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if err := s.Save(Record{ID: id, Status: Done, Owner: "me", Created: t0, Answer: "abc"}); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Hour)
	rec, _, err := s.LoadPart(id, 0, 10)
	if !errors.Is(err, ErrExpired) || rec.Owner != "me" {
		t.Errorf("expired: %v, owner %q", err, rec.Owner)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), id+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the expired record is still there: %v", err)
	}
}

// FuzzRecordFile: decoding any file neither panics nor reads past it, and a record that
// decodes encodes back to the same file.
func FuzzRecordFile(f *testing.F) {
	sum, _ := json.Marshal(map[string]any{"kind": "answer", "answer": "é\n\"x\"", "model": "m"})
	full, err := encode(Record{Version: recordVersion, ID: "x", Status: Done, Answer: "é\n\"x\"", Summary: sum, Question: "q", Thread: []Turn{{Query: "a", Answer: "b"}}})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(full), "consult-record 3 2 0 3\n{}{}\n", "consult-record 3 99 0 0\n{}", `{"version":2,"answer":"a"}`, "", "consult-record 3 -1 0 0\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := decode([]byte(in))
		if err != nil || len(in) == 0 || in[0] == '{' {
			return
		}
		again, err := encode(r)
		if err != nil {
			t.Fatalf("encode of a decoded record: %v", err)
		}
		r2, err := decode(again)
		if err != nil || !reflect.DeepEqual(normal(r), normal(r2)) {
			t.Fatalf("decode(encode(decode(%q))) = %+v, %v; want %+v", in, r2, err, r)
		}
	})
}

// normal is r with its summary compacted, for comparing records that went through encode.
func normal(r Record) Record {
	var m any
	if json.Unmarshal(r.Summary, &m) == nil {
		r.Summary, _ = json.Marshal(m)
	}
	return r
}

// TestAppendJSONString: what appendJSONString writes decodes to the string it was given
// (invalid UTF-8 as encoding/json reads it, U+FFFD).
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "a \"q\" \\ b\n\t\r\x00\x1f\x7f <&> é世🙂 \u2028", "bad \xff utf8"} {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil || got != strings.ToValidUTF8(s, "\uFFFD") {
			t.Errorf("appendJSONString(%q) decodes to %q, %v", s, got, err)
		}
	}
}
