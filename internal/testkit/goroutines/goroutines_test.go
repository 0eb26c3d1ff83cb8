package goroutines

import (
	"context"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// Run runs f on the calling goroutine under a label of its own and returns the group of
// goroutines f started.
func Run(f func()) Group {
	g := newGroup()
	pprof.Do(context.Background(), pprof.Labels(labelKey, g.label), func(context.Context) { f() })
	return g
}

// TestRunCountsOnlyItsOwn: a group counts the goroutines its code started and those they
// started, not another group's nor ones started outside, and none once they have ended.
func TestRunCountsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	started := make(chan struct{}, 4)
	wait := func() { started <- struct{}{}; <-stop }
	mine := Run(func() {
		go wait()
		go func() { go wait(); wait() }()
	})
	other := Run(func() { go wait() })
	go wait()
	for range 5 {
		<-started
	}
	if n, stacks := mine.Running(); n != 3 || !strings.Contains(stacks, "goroutines.TestRunCountsOnlyItsOwn") {
		t.Errorf("mine: %d running, want 3; stacks:\n%s", n, stacks)
	}
	if n, _ := other.Running(); n != 1 {
		t.Errorf("other: %d running, want 1", n)
	}
	close(stop)
	mine.Ended(t, 5*time.Second, nil)
	other.Ended(t, 5*time.Second, nil)
}

// TestEndedFails: a goroutine still running at the timeout fails the test.
func TestEndedFails(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	defer close(stop)
	g := Run(func() { go func() { <-stop }() })
	ft := &fakeT{TB: t}
	g.Ended(ft, 50*time.Millisecond, nil)
	if !ft.failed {
		t.Error("Ended did not fail with a goroutine still running")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }

// TestCheck: Check counts the goroutines the rest of the test starts, not one started before
// it, and lets them end in a cleanup registered after it.
func TestCheck(t *testing.T) {
	t.Parallel()
	before := make(chan struct{})
	defer close(before)
	ft := &fakeT{TB: t}
	t.Run("ends in a cleanup", func(t *testing.T) {
		ft.TB = t
		go func() { <-before }()
		g := Check(ft, nil)
		stop := make(chan struct{})
		go func() { <-stop }()
		if n, stacks := g.Running(); n != 2 {
			t.Errorf("%d running, want 2 (the test's and the one it started):\n%s", n, stacks)
		}
		t.Cleanup(func() { close(stop) })
	})
	if ft.failed {
		t.Error("Check failed")
	}
}
