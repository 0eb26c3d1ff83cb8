package testrun

import "runtime"

// Allocated is how many bytes the process allocated while f ran. A test that uses it must
// not run in parallel with others, so that the figure is f's.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
