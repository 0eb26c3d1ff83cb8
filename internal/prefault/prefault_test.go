package prefault

import (
	"bytes"
	"testing"
)

// TestBufferKeepsContents: mapping a buffer in changes none of its bytes, whatever its
// length, capacity and alignment, including bytes past its length within its capacity.
func TestBufferKeepsContents(t *testing.T) {
	t.Parallel()
	backing := make([]byte, 1<<20)
	for i := range backing {
		backing[i] = byte(i*7 + i>>12)
	}
	want := bytes.Clone(backing)
	for _, tc := range []struct {
		name        string
		lo, hi, max int
	}{
		{"empty", 0, 0, 0},
		{"under two pages", 3, 5000, 5000},
		{"unaligned, several pages", 123, 70000, 70000},
		{"capacity past the length", 4096, 4096, 200000},
		{"whole", 0, len(backing), len(backing)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Buffer(backing[tc.lo:tc.hi:tc.max])
			if !bytes.Equal(backing, want) {
				t.Errorf("Buffer(b[%d:%d:%d]) changed the memory", tc.lo, tc.hi, tc.max)
			}
		})
	}
	Buffer(nil)
}
