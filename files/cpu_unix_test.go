//go:build unix

package files

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used; benchmarks report it per operation
// (cpu-ns/op) because wall time is unreliable on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.Helper()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
