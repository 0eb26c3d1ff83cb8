package files

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// asNobody runs f with the effective user id of nobody, so that permission bits apply even
// when the tests run as root (root reads anything). Only the effective id changes; the saved
// id stays 0, which lets the deferred call switch back.
func asNobody(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		t.Skipf("running as root and cannot drop privileges: %v", err)
	}
	defer func() {
		if err := syscall.Setresuid(-1, 0, -1); err != nil {
			panic(fmt.Sprintf("cannot restore root: %v", err)) // later tests would fail obscurely
		}
	}()
	f()
}
