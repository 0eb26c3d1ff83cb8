//go:build !unix

package background

import "os"

// Without Unix signals a worker finds its cancel marker by its fallback poll alone.

func signalWorker(int)            {}
func notifyWake(chan<- os.Signal) {}
func stopWake(chan<- os.Signal)   {}
