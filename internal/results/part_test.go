package results

import (
	"bufio"
	"bytes"
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

// FuzzPartString: the stream decoder of a part read decodes every JSON string as
// encoding/json does, and refuses what it refuses (lone surrogates become U+FFFD in both).
func FuzzPartString(f *testing.F) {
	for _, seed := range []string{`""`, `"abc"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e16"`, `"\ud83d\ude42"`, `"\ud83d"`,
		`"\ud83dx"`, `"\ud83d\u0041"`, `"\ude42\ud83d"`, `"\u12"`, `"\q"`, "\"a\x01\"", `"unterminated`, `"é世🙂"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want string
		wantErr := json.Unmarshal([]byte(in), &want)
		if wantErr != nil || !strings.HasPrefix(strings.TrimLeft(in, " \t\r\n"), `"`) {
			return // not a JSON string: the scanner need only refuse it, which the record check does
		}
		sc := &scanner{r: bufio.NewReaderSize(strings.NewReader(in), 16), room: maxPartMeta}
		var got []byte
		n, err := sc.str(func(p []byte, at int) {
			if at != len(got) {
				t.Fatalf("emitted at %d after %d bytes", at, len(got))
			}
			got = append(got, p...)
		})
		if err != nil {
			t.Fatalf("str(%q): %v; encoding/json reads %q", in, err, want)
		}
		if string(got) != want || n != len(want) {
			t.Fatalf("str(%q) = %q (%d), want %q", in, got, n, want)
		}
	})
}

// FuzzPartValue: the stream reader copies a JSON value as json.Compact writes it, skips
// it reading as far, refuses (or copies into invalid JSON) what is not one, and never
// panics.
func FuzzPartValue(f *testing.F) {
	for _, seed := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":"x\"y"}`, ` [ true , false , -1.5e3 ] `, `{"a":}`, `[1,]`,
		`{"a" 1}`, `{1:2}`, `"\u00e9"`, `[[[[[]]]]]`, `{"a":{"b":{"c":[{}]}}}`, `nul`, `[1 2]`, `{"a":1]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sc := &scanner{r: bufio.NewReaderSize(strings.NewReader(in), 16), room: maxPartMeta}
		got, err := sc.capture()
		rest := sc.r.Buffered()
		skip := &scanner{r: bufio.NewReaderSize(strings.NewReader(in), 16), room: maxPartMeta}
		skipErr := skip.skip()
		if errors.Is(err, errLongLiteral) {
			return // a bound of the reader, not a fault
		}
		// capture leaves checking a string's escapes to the decoding of what it copied.
		if err != nil && skipErr == nil || err == nil && skipErr != nil && json.Valid(got) {
			t.Fatalf("capture(%q) = %q, %v; skip: %v", in, got, err, skipErr)
		}
		if err == nil && skipErr == nil && skip.r.Buffered() != rest && len(in) <= 16 {
			t.Fatalf("capture(%q) left %d bytes, skip %d", in, rest, skip.r.Buffered())
		}
		var want bytes.Buffer
		if !json.Valid([]byte(in)) || json.Compact(&want, []byte(in)) != nil {
			return
		}
		if err != nil {
			t.Fatalf("capture(%q): %v", in, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("capture(%q) = %q, want %q", in, got, want.Bytes())
		}
	})
}
