// Package cputime measures the CPU time this process has used, for benchmarks that report
// it per operation (cpu-ns/op): on a shared machine wall time says more about the
// neighbours than about the code.
package cputime

import (
	"testing"
	"time"
)

// Report adds the CPU time used since start (from Now) per operation to b's results, as
// cpu-ns/op; nothing where the system cannot tell.
func Report(b *testing.B, start time.Duration) {
	b.Helper()
	if now := Now(); now > 0 {
		b.ReportMetric(float64(now-start)/float64(b.N), "cpu-ns/op")
	}
}
