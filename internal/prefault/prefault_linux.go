//go:build linux

package prefault

import (
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the range in, writable, as
// writes would, without changing its contents. Older kernels answer EINVAL: then it is not
// asked again.
const madvPopulateWrite = 23

var unsupported atomic.Bool

var pageSize = uintptr(os.Getpagesize())

// populate maps in the pages wholly inside b.
func populate(b []byte) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first := (start + pageSize - 1) &^ (pageSize - 1)
	end := (start + uintptr(len(b))) &^ (pageSize - 1)
	if end <= first || unsupported.Load() {
		return
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, first, end-first, madvPopulateWrite)
	if errno == syscall.EINVAL {
		unsupported.Store(true)
	}
	runtime.KeepAlive(b)
}
