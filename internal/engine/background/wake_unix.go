//go:build unix

package background

import (
	"os"
	"os/signal"
	"syscall"
)

// wakeSignal tells a worker to read its cancel marker at once: SIGWINCH, whose default action
// is to be ignored (and a worker has no terminal), so one that reaches another process (the
// worker ended and its number was reused between the check and the signal) does no harm.
var wakeSignal os.Signal = syscall.SIGWINCH

// signalWorker tells process pid to read its cancel marker.
func signalWorker(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(wakeSignal)
	}
}

// notifyWake relays the wake signal to c until stopWake.
func notifyWake(c chan<- os.Signal) { signal.Notify(c, wakeSignal) }

func stopWake(c chan<- os.Signal) { signal.Stop(c) }
