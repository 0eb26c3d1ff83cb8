package providers

import (
	"bytes"
	"fmt"
	"io"
)

// maxSSEEvent bounds the data of one server-sent event (its data lines joined), and any
// one line, in bytes: openai-go's line limit, room for three strings at [maxEventString]
// and the JSON around them. A longer event fails the stream with [errSSETooLarge] rather
// than being buffered.
const maxSSEEvent = 32 << 20

// errSSETooLarge is the error of an event longer than [maxSSEEvent].
var errSSETooLarge = fmt.Errorf("an event of the stream is longer than %d MiB", maxSSEEvent>>20)

// sseEvent is one event of a server-sent event stream.
type sseEvent struct {
	// Type is the event's type from its "event:" line, "" when it had none.
	Type string
	// Data is the event's data lines joined with "\n". It is valid until the next call
	// to Next.
	Data []byte
	// Cut says a JSON string in Data was longer than [maxEventString] raw bytes: the rest
	// of it was dropped as it was read (see [stringCap]) and Data still parses.
	Cut bool
}

// sseReader reads server-sent events as the HTML standard's event stream interpretation
// says (html.spec.whatwg.org/multipage/server-sent-events.html): lines end in CRLF, LF or
// CR; a leading BOM is skipped; comment lines (": keep-alive") are dropped unread; a line
// is split at its first colon into field and value, one space after the colon dropped;
// "data" lines are joined with "\n", "event" sets the type, other fields are ignored; an
// event is dispatched at a blank line if it has data. An event the stream does not end
// with a blank line is discarded at EOF, as the standard says (and as openai-go did),
// unless endAtEOF is set.
//
// Every JSON string in a data line is cut at [maxEventString] raw bytes as it is read, and
// an event's data is bounded by [maxSSEEvent], so a server cannot make the reader buffer
// without bound.
type sseReader struct {
	r          io.Reader
	buf        []byte // read buffer (16 KiB, a TLS record); buf[start:end] is not yet consumed
	start, end int
	err        error // the read error, reported once buf is drained

	bomChecked bool
	afterCR    bool       // the last line ended in CR: an LF next belongs to that ending
	comment    bool       // the line being read is a comment: its bytes are dropped
	lineStart  int        // where the line being read starts in data; -1 before its first byte
	limit      *stringCap // cuts over-long strings; resets at each line end
	max        int        // the bound on an event's data, maxSSEEvent
	// endAtEOF dispatches an event the stream ends (io.EOF) without its blank line rather
	// than discarding it: Gemini's own SDK reads such a last event, and a proxy may drop
	// the blank line. A read error still discards it.
	endAtEOF bool

	typ  string
	data []byte // the event's data lines so far, each followed by "\n", then the current line
	cut  bool
}

// newSSEReader returns a reader of the events in r. It does not close r.
func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: r, buf: make([]byte, 16<<10), lineStart: -1, limit: &stringCap{max: maxEventString}, max: maxSSEEvent}
}

// Next returns the next event: io.EOF when the stream ended (discarding an event not ended
// by a blank line), the read error when reading failed, [errSSETooLarge] when an event
// outgrew the bound. An error is returned again by every later call.
func (s *sseReader) Next() (sseEvent, error) {
	for {
		if s.start == s.end {
			if s.err == io.EOF && s.endAtEOF {
				s.endAtEOF = false
				if s.lineStart >= 0 {
					s.endLine() // a line that is not blank: it dispatches nothing
				}
				if ev, ok := s.endLine(); ok { // the blank line the stream left out
					return ev, nil
				}
			}
			if err := s.fill(); err != nil {
				return sseEvent{}, err
			}
			continue
		}
		b := s.buf[s.start:s.end]
		if s.afterCR && b[0] == '\n' { // the LF of a CRLF
			s.afterCR = false
			s.start++
			continue
		}
		i := lineEnd(b)
		if err := s.take(b[:i]); err != nil {
			return sseEvent{}, err
		}
		if i == len(b) { // the line goes on in the next read
			s.afterCR, s.start = false, s.end
			continue
		}
		s.afterCR, s.start = b[i] == '\r', s.start+i+1
		if ev, ok := s.endLine(); ok {
			return ev, nil
		}
	}
}

// lineEnd is the index of the first CR or LF in b, len(b) if none.
func lineEnd(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if i := bytes.IndexByte(b, '\r'); i >= 0 {
		return i
	}
	return len(b)
}

// fill reads more of the stream into the drained buffer, skipping a BOM at the stream's
// start.
func (s *sseReader) fill() error {
	if s.err != nil {
		s.data, s.lineStart = s.data[:0], -1
		return s.err
	}
	s.start, s.end = 0, 0
	for s.end == 0 || !s.bomChecked && s.end < 3 {
		n, err := s.r.Read(s.buf[s.end:])
		if s.end += n; err != nil {
			s.err = err
			break
		}
	}
	if !s.bomChecked {
		s.bomChecked = true
		if bytes.HasPrefix(s.buf[:s.end], []byte("\ufeff")) {
			s.start = 3
		}
	}
	return nil
}

// take adds p, part of a line, to the line being read: dropped when the line is a comment,
// else with its over-long strings cut.
func (s *sseReader) take(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if s.lineStart < 0 {
		s.lineStart, s.comment = len(s.data), p[0] == ':'
	}
	if s.comment {
		return nil
	}
	n := s.limit.filter(p)
	if len(s.data)+n > s.max {
		s.err, s.start, s.end = errSSETooLarge, 0, 0
		return s.err
	}
	s.data = append(s.data, p[:n]...)
	return nil
}

// endLine interprets the line just read, and returns the event when the line was blank
// and the event has data.
func (s *sseReader) endLine() (sseEvent, bool) {
	from := s.lineStart
	s.lineStart = -1
	s.limit.endLine()
	s.cut = s.limit.cut.Swap(false) || s.cut
	if from < 0 { // a blank line: dispatch
		if len(s.data) == 0 {
			s.typ, s.cut = "", false
			return sseEvent{}, false
		}
		ev := sseEvent{Type: s.typ, Data: s.data[:len(s.data)-1], Cut: s.cut}
		s.typ, s.data, s.cut = "", s.data[:0], false
		return ev, true
	}
	if s.comment {
		return sseEvent{}, false
	}
	line := s.data[from:]
	s.data = s.data[:from]
	name, value, _ := bytes.Cut(line, []byte(":"))
	value, _ = bytes.CutPrefix(value, []byte(" "))
	switch string(name) {
	case "data":
		s.data = append(s.data, value...) // value lies at or after from: copy moves it down
		s.data = append(s.data, '\n')
	case "event":
		s.typ = string(value)
	}
	return sseEvent{}, false
}
