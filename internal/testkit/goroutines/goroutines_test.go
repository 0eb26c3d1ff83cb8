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

// TestCountSkipsExiting: in a goroutine profile, a goroutine of the group that has returned
// and is only exiting (its one frame runtime.goexit1, as a profile taken just after a
// WaitGroup's Wait can show it) is not counted; one running is, with its stack; another
// group's is not.
func TestCountSkipsExiting(t *testing.T) {
	t.Parallel()
	const profile = "goroutine profile: total 3\n" +
		"1 @ 0x481b11 0x4c44dd\n# labels: {\"consult-goroutines\":\"7\"}\n" +
		"#\t0x6cc729\truntime/pprof.writeRuntimeProfile+0xc9\t/usr/local/go/src/runtime/pprof/pprof.go:851\n" +
		"#\t0x96909a\texample.TestPrefetch+0x53a\t/src/tokens_test.go:222\n\n" +
		"1 @ 0x494ef0 0x4cd6e6\n# labels: {\"consult-goroutines\":\"7\"}\n" +
		"#\t0x494eef\truntime.goexit1+0xef\t/usr/local/go/src/runtime/proc.go:4475\n\n" +
		"2 @ 0x494ef0\n# labels: {\"consult-goroutines\":\"8\"}\n" +
		"#\t0x96909a\texample.other+0x53a\t/src/other.go:1\n\n"
	n, stacks := Group{label: "7"}.count(profile)
	if n != 1 || !strings.Contains(stacks, "TestPrefetch") || strings.Contains(stacks, "goexit1") {
		t.Errorf("count = %d, stacks:\n%s\nwant 1, the running test's stack only", n, stacks)
	}
}
