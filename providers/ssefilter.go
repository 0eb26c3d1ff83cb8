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
	drop    bool   // the current line is not passed on
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

// next reads one line, or one buffer of a longer line, and passes it on unless it is part
// of a comment line or the blank line that ends a comment-only block.
func (f *sseFilter) next() {
	chunk, err := f.br.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		if err != io.EOF && f.capture != nil {
			f.capture.setReadError(err)
		}
		f.err = io.EOF
	}
	if len(chunk) == 0 {
		return
	}
	if !f.midLine { // a line starts here
		switch {
		case isBlank(chunk):
			f.drop = f.comment && !f.data
			f.data, f.comment = false, false
		case chunk[0] == ':':
			f.drop, f.comment = true, true
		default:
			f.drop, f.data = false, true
		}
	}
	f.midLine = chunk[len(chunk)-1] != '\n'
	if !f.drop {
		f.pending = chunk
	}
}

func isBlank(line []byte) bool {
	return len(line) == 1 && line[0] == '\n' || len(line) == 2 && line[0] == '\r' && line[1] == '\n'
}

func (f *sseFilter) Close() error { return f.rc.Close() }
