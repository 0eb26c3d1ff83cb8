//go:build unix && !linux

package files

import (
	"os"
	"testing"
)

// asNobody runs f; as root, where permission bits do not apply, it skips the test.
func asNobody(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission bits do not apply")
	}
	f()
}
