package providers

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// readEvents reads every event of in, given in reads of at most size bytes, and the error
// that ended them, which the next call must return again.
func readEvents(t *testing.T, in string, size int, setup func(*sseReader)) ([]sseEvent, error) {
	t.Helper()
	r := newSSEReader(&chunkReader{r: strings.NewReader(in), n: size})
	if setup != nil {
		setup(r)
	}
	var evs []sseEvent
	for {
		ev, err := r.Next()
		if err != nil {
			if ev, again := r.Next(); again != err || ev.Data != nil {
				t.Errorf("after %v, Next = %q, %v; want no event and the same error", err, ev.Data, again)
			}
			return evs, err
		}
		ev.Data = []byte(string(ev.Data)) // valid only until the next call
		evs = append(evs, ev)
	}
}

// TestSSEReader: the event stream interpretation of the HTML standard
// (html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation), its
// line endings split across reads of every size.
func TestSSEReader(t *testing.T) {
	t.Parallel()
	type ev = sseEvent
	cases := []struct {
		name string
		in   string
		want []ev
	}{
		{"LF", "data: a\n\ndata: b\n\n", []ev{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"CR", "data: a\r\rdata: b\r\r", []ev{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []ev{{Data: []byte("a\nb\nc")}}},
		{"data lines joined", "data: {\"a\":\ndata: 1}\n\n", []ev{{Data: []byte("{\"a\":\n1}")}}},
		{"no space after the colon", "data:x\n\n", []ev{{Data: []byte("x")}}},
		{"one space dropped", "data:  x \n\n", []ev{{Data: []byte(" x ")}}},
		{"colon in the value", "data: a: b\n\n", []ev{{Data: []byte("a: b")}}},
		{"event type", "event: error\ndata: {}\n\ndata: x\n\n", []ev{{Type: "error", Data: []byte("{}")}, {Data: []byte("x")}}},
		{"comments skipped", ": OPENROUTER PROCESSING\n\n:keep-alive\ndata: a\n: between\ndata: b\n\n", []ev{{Data: []byte("a\nb")}}},
		{"no data, no event", "event: ping\n\ndata: x\n\n", []ev{{Data: []byte("x")}}},
		{"empty data line", "data\n\ndata:\n\n", []ev{{Data: []byte("")}, {Data: []byte("")}}},
		{"other fields ignored", "id: 7\nretry: 100\nfoo: bar\ndata: x\n\n", []ev{{Data: []byte("x")}}},
		{"field without a colon", "data\ndata: x\n\n", []ev{{Data: []byte("\nx")}}},
		{"unknown field named like data", "data : x\ndatax: y\ndata: z\n\n", []ev{{Data: []byte("z")}}},
		{"BOM skipped", "\ufeffdata: x\n\n", []ev{{Data: []byte("x")}}},
		{"only the first BOM skipped", "\ufeff\ufeffdata: x\n\ndata: y\n\n", []ev{{Data: []byte("y")}}},
		{"unended event discarded", "data: a\n\ndata: b\n", []ev{{Data: []byte("a")}}},
		{"unended line discarded", "data: a\n\ndata: b", []ev{{Data: []byte("a")}}},
		{"blank lines alone", "\n\r\n\r\n", nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 2, 3, 7, 4096} {
			got, err := readEvents(t, tc.in, size, nil)
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s (reads of %d): err = %v, want io.EOF", tc.name, size, err)
			}
			if !sameEvents(got, tc.want) {
				t.Errorf("%s (reads of %d):\n got  %q\n want %q", tc.name, size, showEvents(got), showEvents(tc.want))
			}
		}
	}
}

// TestSSEReaderEndAtEOF: with endAtEOF, an event the stream ends without its blank line is
// dispatched, its last line whether ended or not; a read error still discards it.
func TestSSEReaderEndAtEOF(t *testing.T) {
	t.Parallel()
	type ev = sseEvent
	cases := []struct {
		name string
		in   string
		want []ev
	}{
		{"unended line", "data: a\n\ndata: b", []ev{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"unended event", "data: a\r\n\r\ndata: b\r\ndata: c\r\n", []ev{{Data: []byte("a")}, {Data: []byte("b\nc")}}},
		{"ended event", "data: a\n\n", []ev{{Data: []byte("a")}}},
		{"a comment last", "data: a\n\n: bye", []ev{{Data: []byte("a")}}},
		{"an event type only", "data: a\n\nevent: x", []ev{{Data: []byte("a")}}},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 2, 4096} {
			got, err := readEvents(t, tc.in, size, func(r *sseReader) { r.endAtEOF = true })
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s (reads of %d): err = %v, want io.EOF", tc.name, size, err)
			}
			if !sameEvents(got, tc.want) {
				t.Errorf("%s (reads of %d):\n got  %q\n want %q", tc.name, size, showEvents(got), showEvents(tc.want))
			}
		}
	}
	boom := errors.New("connection reset")
	r := newSSEReader(&failingReader{text: "data: a\n\ndata: b", err: boom})
	r.endAtEOF = true
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("Next = %q, %v; want \"a\", nil", ev.Data, err)
	}
	if ev, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("Next = %q, %v; want no event, %v", ev.Data, err, boom)
	}
}

// showEvents renders events for a failure message.
func showEvents(evs []sseEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "{%q %q cut=%v} ", ev.Type, ev.Data, ev.Cut)
	}
	return b.String()
}

func sameEvents(a, b []sseEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || string(a[i].Data) != string(b[i].Data) || a[i].Cut != b[i].Cut {
			return false
		}
	}
	return true
}

// TestSSEReaderCutsStrings: a JSON string over the cap is cut in the event that holds it,
// which says so; the events after it are whole and say nothing.
func TestSSEReaderCutsStrings(t *testing.T) {
	t.Parallel()
	in := "data: {\"a\":\"abcdefgh\",\n" + `data: "b":"xy"}` + "\n\n" +
		`data: {"a":"abcd"}` + "\n\n" +
		`event: "abcdefgh"` + "\n" + `data: {"a":"ab"}` + "\n\n"
	want := []sseEvent{
		{Data: []byte("{\"a\":\"abcd\",\n\"b\":\"xy\"}"), Cut: true},
		{Data: []byte(`{"a":"abcd"}`)},
		{Type: `"abcd"`, Data: []byte(`{"a":"ab"}`), Cut: true},
	}
	for _, size := range []int{1, 3, 4096} {
		got, err := readEvents(t, in, size, func(r *sseReader) { r.limit.max = 4 })
		if !errors.Is(err, io.EOF) {
			t.Errorf("reads of %d: err = %v, want io.EOF", size, err)
		}
		if !sameEvents(got, want) {
			t.Errorf("reads of %d:\n got  %q\n want %q", size, showEvents(got), showEvents(want))
		}
	}
}

// TestSSEReaderBound: an event whose data outgrows the bound fails the stream, whether in
// one line or many; a comment of any length is dropped as it is read, never buffered.
func TestSSEReaderBound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want []sseEvent
		err  error
	}{
		{"at the bound", "data: 0123456789\n\n", []sseEvent{{Data: []byte("0123456789")}}, io.EOF},
		{"one long line", "data: x\n\ndata: 0123456789a\n\n", []sseEvent{{Data: []byte("x")}}, errSSETooLarge},
		{"many lines", "data: 0123\ndata: 4567\ndata: 89\n\n", nil, errSSETooLarge},
		{"long event type", "event: 0123456789abcdef\ndata: x\n\n", nil, errSSETooLarge},
		{"long comment", ":" + strings.Repeat("keep-alive", 1000) + "\ndata: x\n\n", []sseEvent{{Data: []byte("x")}}, io.EOF},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 4096} {
			// "data: " and the line's end count towards the line; the data kept, with its "\n",
			// towards the event.
			got, err := readEvents(t, tc.in, size, func(r *sseReader) { r.max = 16 })
			if !errors.Is(err, tc.err) {
				t.Errorf("%s (reads of %d): err = %v, want %v", tc.name, size, err, tc.err)
			}
			if !sameEvents(got, tc.want) {
				t.Errorf("%s (reads of %d):\n got  %q\n want %q", tc.name, size, showEvents(got), showEvents(tc.want))
			}
		}
	}
}

// failingReader returns its text, then err.
type failingReader struct {
	text string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.text == "" {
		return 0, f.err
	}
	n := copy(p, f.text)
	f.text = f.text[n:]
	return n, nil
}

// TestSSEReaderReadError: a read error ends the events, the one it cut short discarded, and
// is returned again by every later call.
func TestSSEReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := newSSEReader(&failingReader{text: "data: a\n\ndata: b\n", err: boom})
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "a" {
		t.Fatalf("Next = %q, %v; want \"a\", nil", ev.Data, err)
	}
	for range 2 {
		if ev, err := r.Next(); !errors.Is(err, boom) || ev.Data != nil {
			t.Errorf("Next = %q, %v; want no event, %v", ev.Data, err, boom)
		}
	}
}
