//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// peakWatcher follows a child's peak resident memory (VmHWM in /proc/PID/status) while it
// runs. The rusage that Wait reports is no use for this: a child started from the test
// process inherits the test process's high-water mark through exec, so it reads hundreds of
// megabytes for a program that used forty.
type peakWatcher struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak int64 // bytes
}

// watchPeak starts following cmd, which must have been started.
func watchPeak(cmd *exec.Cmd) *peakWatcher {
	w := &peakWatcher{stop: make(chan struct{})}
	path := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if hwm := vmHWM(path); hwm > w.peak {
				w.peak = hwm
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// Peak stops following (call it after Wait) and returns the highest peak read, in bytes.
func (w *peakWatcher) Peak() int64 {
	close(w.stop)
	w.wg.Wait()
	return w.peak
}

// vmHWM reads the VmHWM line of a /proc status file, in bytes; 0 once the process is gone.
func vmHWM(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.Index(data, []byte("VmHWM:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(data[i+len("VmHWM:"):])
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return kb << 10
}
