//go:build linux

package prefault

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
)

// TestBufferMapsIn: once Buffer has mapped a new buffer in, writing each of its pages
// faults (almost) never; written without it, each page faults once.
func TestBufferMapsIn(t *testing.T) {
	const size = 4 << 20
	pages := size / int(pageSize)
	for _, tc := range []struct {
		name      string
		prefault  bool
		minFaults int
		maxFaults int
	}{
		{"written as it is", false, pages * 9 / 10, size},
		{"mapped in first", true, 0, pages / 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Munmap(b)
			if tc.prefault {
				if err := syscall.Madvise(b[:pageSize], madvPopulateWrite); errors.Is(err, syscall.EINVAL) {
					t.Skip("MADV_POPULATE_WRITE needs Linux 5.14")
				}
			}
			// The fault counter of this thread alone.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if tc.prefault {
				Buffer(b)
			}
			before := threadFaults(t)
			for i := 0; i < size; i += int(pageSize) {
				b[i] = 1
			}
			got := int(threadFaults(t) - before)
			if got < tc.minFaults || got > tc.maxFaults {
				t.Errorf("writing %d new pages faulted %d times, want %d to %d", pages, got, tc.minFaults, tc.maxFaults)
			}
		})
	}
}

func threadFaults(t *testing.T) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}
