package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
)

// A record file (format 3) is a line that sizes its three sections, then the sections:
//
//	consult-record 3 HEAD ANSWER TAIL
//	{the record as JSON, less the fields of the other two sections}
//	the answer's bytes, as they are
//	{"exclude": …, "question": …, "thread": …, "digests": …}
//
// A listing reads the head's first fields; a page reads the head and its stretch of the
// answer from where it lies, whatever the answer's size; Load reads all three. The answer
// is kept once: a structured result whose "answer" member is the record's answer is stored
// without it (SummaryAnswer) and has it back from Load. Files of format 2, one JSON object,
// are still read.

// recordMagic begins the first line of a record file.
const recordMagic = "consult-record"

// maxPrefix bounds the first line: the magic, the version and three sizes.
const maxPrefix = 80

// head is a record file's first section.
type head struct {
	Record
	// SummaryAnswer says the summary's "answer" member was the record's answer, left out
	// of the summary as stored.
	SummaryAnswer bool `json:"summary_answer,omitempty"`
}

// tail is a record file's last section: the large fields neither a listing nor a page needs.
type tail struct {
	Exclude  string            `json:"exclude,omitempty"`
	Question string            `json:"question,omitempty"`
	Thread   []Turn            `json:"thread,omitempty"`
	Digests  map[string]string `json:"digests,omitempty"`
}

// sections are the sizes a record file's first line gives, and that line's length.
type sections struct{ prefix, head, answer, tail int }

// encode is the file form of a record.
func encode(r Record) ([]byte, error) {
	h := head{Record: r}
	h.Answer, h.Exclude, h.Question, h.Thread, h.Digests = "", "", "", nil, nil
	h.Summary, h.SummaryAnswer = withoutAnswer(r.Summary, r.Answer)
	hb, err := marshal(h)
	if err != nil {
		return nil, err
	}
	tb, err := marshal(tail{Exclude: r.Exclude, Question: r.Question, Thread: r.Thread, Digests: r.Digests})
	if err != nil {
		return nil, err
	}
	data := fmt.Appendf(nil, "%s %d %d %d %d\n", recordMagic, recordVersion, len(hb), len(r.Answer), len(tb))
	data = append(append(append(data, hb...), r.Answer...), tb...)
	return data, nil
}

// marshal is v as JSON without HTML escaping (the text holds code, and "<" should stay
// readable in the file), ending in a newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// decode is the record a whole file holds.
func decode(data []byte) (Record, error) {
	if len(data) > 0 && data[0] == '{' {
		return decodeV2(data)
	}
	sec, err := parsePrefix(data[:min(len(data), maxPrefix)], len(data))
	if err != nil {
		return Record{}, err
	}
	body := data[sec.prefix:]
	var h head
	if err := json.Unmarshal(body[:sec.head], &h); err != nil {
		return Record{}, err
	}
	var t tail
	if err := json.Unmarshal(body[sec.head+sec.answer:], &t); err != nil {
		return Record{}, err
	}
	r := h.Record
	r.Answer = string(body[sec.head : sec.head+sec.answer])
	r.Exclude, r.Question, r.Thread, r.Digests = t.Exclude, t.Question, t.Thread, t.Digests
	if h.SummaryAnswer {
		r.Summary = withAnswer(r.Summary, r.Answer)
	}
	return r, nil
}

// decodeV2 reads a record of format 2, one JSON object, as a current one.
func decodeV2(data []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, err
	}
	if r.Version != 2 {
		return Record{}, fmt.Errorf("a one-object record of format version %d, want 2", r.Version)
	}
	r.Version = recordVersion
	return r, nil
}

// parsePrefix reads the first line of a record file of size bytes (line holds at least
// the line) and checks that its sections fill the file.
func parsePrefix(line []byte, size int) (sections, error) {
	end := bytes.IndexByte(line, '\n')
	if end < 0 {
		return sections{}, errors.New("no record header line")
	}
	f := strings.Fields(string(line[:end]))
	if len(f) != 5 || f[0] != recordMagic {
		return sections{}, fmt.Errorf("not a record header: %.40q", line[:end])
	}
	if v, err := strconv.Atoi(f[1]); err != nil || v != recordVersion {
		return sections{}, fmt.Errorf("format version %s, want %d", f[1], recordVersion)
	}
	var n [3]int
	for i := range n {
		v, err := strconv.Atoi(f[2+i])
		if err != nil || v < 0 || v > int(MaxRecordBytes) {
			return sections{}, fmt.Errorf("bad section size %.20q", f[2+i])
		}
		n[i] = v
	}
	sec := sections{prefix: end + 1, head: n[0], answer: n[1], tail: n[2]}
	if sec.prefix+sec.head+sec.answer+sec.tail != size {
		return sections{}, fmt.Errorf("the sections add up to %d bytes, the file has %d (cut short?)", sec.prefix+sec.head+sec.answer+sec.tail, size)
	}
	return sec, nil
}

// withoutAnswer is the summary without its "answer" member when that member is answer,
// and whether it was; else the summary as it is.
func withoutAnswer(sum json.RawMessage, answer string) (json.RawMessage, bool) {
	if len(sum) == 0 || answer == "" {
		return sum, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(sum, &m) != nil {
		return sum, false
	}
	var s string
	if raw, ok := m["answer"]; !ok || json.Unmarshal(raw, &s) != nil || s != answer {
		return sum, false
	}
	delete(m, "answer")
	out, err := json.Marshal(m)
	if err != nil {
		return sum, false
	}
	return out, true
}

// withAnswer is the summary (an object) with an "answer" member holding answer, written
// into one buffer of its final size.
func withAnswer(sum json.RawMessage, answer string) json.RawMessage {
	sum = bytes.TrimSpace(sum)
	if len(sum) < 2 || sum[len(sum)-1] != '}' {
		return sum
	}
	out := make([]byte, 0, len(sum)+len(answer)+len(answer)/8+16)
	out = append(out, sum[:len(sum)-1]...)
	if len(bytes.TrimSpace(sum[1:len(sum)-1])) > 0 {
		out = append(out, ',')
	}
	return append(appendJSONString(append(out, `"answer":`...), answer), '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, everything else as it is (encoding/json reads any invalid UTF-8 as U+FFFD,
// as it would have written it).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}

// Part is a stretch of a record's answer, read without the rest of it.
type Part struct {
	// Offset is where Text starts in the answer, in bytes.
	Offset int
	// Text is the answer's bytes from Offset on, as many as were asked for (fewer at the
	// end of the answer).
	Text string
	// Total is the answer's length in bytes.
	Total int
}

// maxPartMeta bounds the head a part read keeps: every field but the answer, the question,
// the thread and the digests. The summary's lists of withheld and redacted files are the
// large part of it; 4 MiB holds tens of thousands of them.
const maxPartMeta = 4 << 20

// LoadPart returns the record with this id and the part of its answer that starts at byte
// offset, at most n bytes of it, reading the head of the record's file and that stretch of
// its answer: the memory it takes is the part and the record's small fields, whatever the
// answer's size. The record comes without Answer, Exclude, Question, Thread and Digests,
// and with its Summary less any "answer" member. An offset past the answer's end gives an
// empty Text (check it against Total). The errors are Load's (with the record and
// ErrExpired for an expired one), and ErrCorrupt for a record whose head passes maxPartMeta.
func (s *Store) LoadPart(id string, offset, n int) (Record, Part, error) {
	root, err := s.dirOf(id)
	if err != nil {
		return Record{}, Part{}, err
	}
	defer root.Close()
	f, fi, err := s.open(root, id)
	if err != nil {
		return Record{}, Part{}, err
	}
	defer f.Close()
	r, part, err := readPart(f, int(fi.Size()), max(offset, 0), max(n, 0))
	if err != nil {
		return Record{}, Part{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, id, err)
	}
	if err := check(r, id); err != nil {
		return Record{}, Part{}, err
	}
	if exp := s.expiry(r); exp.Before(s.now()) {
		_ = removeIfSame(root, recordName(id), fi)
		return r, Part{}, fmt.Errorf("%w: %s (last written %s, kept until %s)",
			ErrExpired, id, r.Updated.Format(time.RFC3339), exp.Format(time.RFC3339))
	}
	return r, part, nil
}

// readPart reads the head of the record file f (of size bytes) and n bytes of its answer
// from offset.
func readPart(f *os.File, size, offset, n int) (Record, Part, error) {
	br := bufio.NewReaderSize(f, maxPrefix)
	line, _ := br.Peek(maxPrefix)
	if len(line) > 0 && line[0] == '{' {
		// Format 2: read whole, as Load does; such a file was written by an earlier version.
		data, err := io.ReadAll(br)
		if err != nil {
			return Record{}, Part{}, err
		}
		r, err := decodeV2(data)
		if err != nil {
			return Record{}, Part{}, err
		}
		part := Part{Offset: offset, Total: len(r.Answer)}
		if offset < len(r.Answer) {
			part.Text = r.Answer[offset:min(len(r.Answer), offset+n)]
		}
		r.Answer, r.Exclude, r.Question, r.Thread, r.Digests = "", "", "", nil, nil
		r.Summary = dropAnswer(r.Summary)
		return r, part, nil
	}
	sec, err := parsePrefix(line, size)
	if err != nil {
		return Record{}, Part{}, err
	}
	if sec.head > maxPartMeta {
		return Record{}, Part{}, fmt.Errorf("its fields besides the answer pass %v", consult.Bytes(maxPartMeta))
	}
	data := make([]byte, sec.head)
	if _, err := f.ReadAt(data, int64(sec.prefix)); err != nil {
		return Record{}, Part{}, err
	}
	var h head
	if err := json.Unmarshal(data, &h); err != nil {
		return Record{}, Part{}, err
	}
	r := h.Record
	r.Summary = dropAnswer(r.Summary)
	part := Part{Offset: offset, Total: sec.answer}
	if offset < sec.answer {
		text := make([]byte, min(n, sec.answer-offset))
		if _, err := f.ReadAt(text, int64(sec.prefix+sec.head+offset)); err != nil {
			return Record{}, Part{}, err
		}
		part.Text = string(text)
	}
	return r, part, nil
}

// dropAnswer is the summary without any "answer" member; null or none stays nil.
func dropAnswer(sum json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(sum) == 0 || json.Unmarshal(sum, &m) != nil || m == nil {
		return nil
	}
	if _, ok := m["answer"]; !ok {
		return sum
	}
	delete(m, "answer")
	out, _ := json.Marshal(m)
	return out
}
