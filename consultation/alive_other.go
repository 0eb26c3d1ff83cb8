//go:build !unix

package consultation

import "os"

// processAlive reports whether a process with this pid may exist. Without a portable probe
// it trusts FindProcess, which on Windows fails for a process that is gone.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
