package files

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// chunkReader returns its data at most chunk bytes per call, then io.EOF, or err after
// failAfter bytes when err is set.
type chunkReader struct {
	data      string
	chunk     int
	err       error
	failAfter int
	calls     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	r.calls++
	if r.err != nil && r.failAfter <= 0 {
		return 0, r.err
	}
	if r.data == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	r.failAfter -= n
	return n, nil
}

func TestReadAll(t *testing.T) {
	content := strings.Repeat("0123456789", 100) // 1,000 bytes
	big := strings.Repeat("abcdefghij", 2000)    // 20,000 bytes, more than the sniff window
	binary := "\x00" + big[1:]
	for _, tc := range []struct {
		name      string
		r         *chunkReader
		size      int64
		limit     int64
		want      string
		reason    Reason
		wantCalls int // 0: do not check
	}{
		{"stat size right", &chunkReader{data: content, chunk: 1 << 20}, 1000, 2000, content, 0, 1},
		{"proc file says 0", &chunkReader{data: content, chunk: 100}, 0, 2000, content, 0, 0},
		{"grew", &chunkReader{data: content, chunk: 1 << 20}, 500, 2000, content, 0, 0},
		{"shrank", &chunkReader{data: content[:300], chunk: 1 << 20}, 1000, 2000, content[:300], 0, 0},
		{"partial reads", &chunkReader{data: content, chunk: 7}, 1000, 2000, content, 0, 0},
		{"exactly at the limit", &chunkReader{data: content, chunk: 64}, 0, 1000, content, 0, 0},
		{"stat size over the limit", &chunkReader{data: content, chunk: 1 << 20}, 1000, 999, "", TooLarge, -1},
		{"grew over the limit", &chunkReader{data: content, chunk: 1 << 20}, 500, 999, "", TooLarge, 0},
		{"proc file over the limit", &chunkReader{data: content, chunk: 100}, 0, 999, "", TooLarge, 0},
		{"empty", &chunkReader{chunk: 1}, 0, 10, "", 0, 0},
		{"error at once", &chunkReader{data: content, chunk: 1, err: errors.New("EIO")}, 1000, 2000, "", Unreadable, 0},
		{"error later", &chunkReader{data: content, chunk: 100, err: errors.New("EIO"), failAfter: 200}, 0, 2000, "", Unreadable, 0},
		{"large, stat size right", &chunkReader{data: big, chunk: 1 << 20}, 20000, 1 << 20, big, 0, 2},
		{"large, partial reads", &chunkReader{data: big, chunk: 999}, 20000, 1 << 20, big, 0, 0},
		{"large, shrank below the window", &chunkReader{data: big[:100], chunk: 1 << 20}, 20000, 1 << 20, big[:100], 0, 0},
		{"large, shrank", &chunkReader{data: big[:10000], chunk: 1 << 20}, 20000, 1 << 20, big[:10000], 0, 0},
		{"large, grew over the limit", &chunkReader{data: big, chunk: 1 << 20}, 10000, 15000, "", TooLarge, 0},
		{"large binary: one read of the window", &chunkReader{data: binary, chunk: 1 << 20}, 20000, 1 << 20, "", Binary, 1},
		{"small binary", &chunkReader{data: "ab\x00c", chunk: 1 << 20}, 4, 100, "", Binary, 0},
		{"proc binary", &chunkReader{data: "ab\x00c", chunk: 1}, 0, 100, "", Binary, 0},
		{"large, error in the window", &chunkReader{data: big, chunk: 100, err: errors.New("EIO"), failAfter: 100}, 20000, 1 << 20, "", Unreadable, 0},
		{"large, error after the window", &chunkReader{data: big, chunk: 5000, err: errors.New("EIO"), failAfter: 10000}, 20000, 1 << 20, "", Unreadable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, reason := readAll(tc.r, tc.size, tc.limit, make([]byte, SniffBytes), nil)
			if string(got) != tc.want || reason != tc.reason || len(got) != cap(got) {
				t.Errorf("got %d bytes, %v; want %d bytes, %v", len(got), reason, len(tc.want), tc.reason)
			}
			switch {
			case tc.wantCalls > 0 && tc.r.calls != tc.wantCalls:
				t.Errorf("%d reads, want %d", tc.r.calls, tc.wantCalls)
			case tc.wantCalls < 0 && tc.r.calls != 0:
				t.Errorf("%d reads of a file known to be too large", tc.r.calls)
			}
		})
	}
}
