package providers

import (
	"bufio"
	"errors"
	"io"
)

// sseFilter removes SSE comment lines (": keep-alive") from a stream, together with the
// blank line that ends a comment-only block, so that a parser which does not follow the SSE
// spec (genai treats any line not starting with "data:" as an error) never sees them.
//
// A read error other than io.EOF is recorded in the capture and reported to the reader as
// io.EOF: genai would only log it to the standard logger, and the provider reports it.
type sseFilter struct {
	rc      io.ReadCloser
	br      *bufio.Reader
	capture *geminiCapture

	pending []byte // bytes ready for the reader (aliases br's buffer until the next read)
	midLine bool   // the last chunk was part of a line longer than the buffer
	data    bool   // the current block has a non-comment line
	comment bool   // the current block has a comment line
	err     error
}

func newSSEFilter(rc io.ReadCloser, capture *geminiCapture) *sseFilter {
	return &sseFilter{rc: rc, br: bufio.NewReaderSize(rc, 64<<10), capture: capture}
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.next()
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next reads one line (or one buffer of a long line) and decides whether to pass it on.
func (f *sseFilter) next() {
	line, err := f.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		err = nil
		if !f.midLine && len(line) > 0 && line[0] == ':' {
			f.comment = true
			f.midLine = true
			f.pending = nil
			f.skipRestOfLine()
			return
		}
		f.midLine = true
		f.data = true
		f.pending = line
		return
	case err == io.EOF:
		f.err = io.EOF
	case err != nil:
		if f.capture != nil {
			f.capture.setReadError(err)
		}
		f.err = io.EOF
	}
	if len(line) == 0 {
		return
	}
	wasMid := f.midLine
	f.midLine = line[len(line)-1] != '\n'
	switch {
	case wasMid:
		f.pending = line
	case isBlank(line):
		if f.comment && !f.data {
			f.pending = nil // the end of a comment-only block
		} else {
			f.pending = line
		}
		f.data, f.comment = false, false
	case line[0] == ':':
		f.comment = true
		f.pending = nil
	default:
		f.data = true
		f.pending = line
	}
}

// skipRestOfLine discards the remainder of an over-long comment line.
func (f *sseFilter) skipRestOfLine() {
	for {
		line, err := f.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF && f.capture != nil {
			f.capture.setReadError(err)
		}
		if err != nil {
			f.err = io.EOF
		}
		f.midLine = len(line) == 0 || line[len(line)-1] != '\n'
		if err != nil || !f.midLine {
			f.midLine = false
			return
		}
	}
}

func isBlank(line []byte) bool {
	return len(line) == 1 && line[0] == '\n' || len(line) == 2 && line[0] == '\r' && line[1] == '\n'
}

func (f *sseFilter) Close() error { return f.rc.Close() }
