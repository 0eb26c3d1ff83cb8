package files

import (
	"errors"
	"io"
)

// fileReader is the little a read needs from an open file.
type fileReader interface {
	Read(p []byte) (int, error)
}

// readAll reads a regular file whose stat size is size, returning its content or TooLarge if
// it holds more than limit bytes. The stat size is a hint, not trusted: files in /proc say 0
// and a file may grow or shrink while it is read, so reading stops at EOF or at limit+1.
func readAll(f fileReader, size, limit int64) ([]byte, Reason) {
	if size > limit {
		return nil, TooLarge
	}
	var buf []byte
	if size > 0 {
		// One read asks for a byte more than the stat size: getting fewer means EOF (a
		// regular file returns short reads only at its end), so most files cost one call.
		buf = make([]byte, size+1)
		n, err := f.Read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, Unreadable
		}
		if int64(n) == size || err != nil {
			return buf[:n:n], 0
		}
		buf = buf[:n] // shorter (a partial read, or it shrank) or longer: read on to EOF
	} else {
		buf = make([]byte, 0, 512)
	}
	for {
		if int64(len(buf)) > limit {
			return nil, TooLarge
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := cap(buf) - len(buf)
		if over := limit + 1 - int64(len(buf)); int64(room) > over {
			room = int(over)
		}
		n, err := f.Read(buf[len(buf) : len(buf)+room])
		buf = buf[:len(buf)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				if int64(len(buf)) > limit {
					return nil, TooLarge
				}
				return buf, 0
			}
			return nil, Unreadable
		}
	}
}
