//go:build linux

package prefault

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the range in, writable, as
// writes would, without changing its contents. Older kernels answer EINVAL, ignored.
const madvPopulateWrite = 23

var pageSize = uintptr(os.Getpagesize())

// populate maps in the pages wholly inside b.
func populate(b []byte) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first := (start + pageSize - 1) &^ (pageSize - 1)
	end := (start + uintptr(len(b))) &^ (pageSize - 1)
	if end <= first {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, first, end-first, madvPopulateWrite)
	runtime.KeepAlive(b)
}
