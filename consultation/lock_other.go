//go:build !unix

package consultation

import "os"

// holdLock opens path; this system gets no lock, and a worker is known by its pid alone.
func holdLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// lockHeld cannot tell on this system: it trusts the pid.
func lockHeld(string) bool { return true }

// stopProcess ends process pid; this system cannot say why.
func stopProcess(pid int, _ error) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
