// Package goroutines checks, in tests, that the goroutines a piece of code started have all
// ended. It counts only the goroutines started under that code's profiler label, which a
// goroutine passes on to every goroutine it starts, so the check holds while other tests run
// in parallel (runtime.NumGoroutine counts theirs too).
package goroutines

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// labelKey is the profiler label that marks a Group's goroutines.
const labelKey = "consult-goroutines"

var groups atomic.Int64

// Group is the goroutines started, directly or through others, by one Run.
type Group struct{ label string }

// Check puts the rest of test t in a group: every goroutine t starts from now on, directly or
// through others, until its end. When t and the cleanups it registers after Check have run,
// Check waits up to five seconds for the group to end, calling tidy (if not nil) on each
// round, and fails t with the stacks of the goroutines still running. Until then the group
// holds t's own goroutine too.
func Check(t testing.TB, tidy func()) Group {
	t.Helper()
	g := newGroup()
	t.Cleanup(func() {
		pprof.SetGoroutineLabels(context.Background())
		g.Ended(t, 5*time.Second, tidy)
	})
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(labelKey, g.label)))
	return g
}

func newGroup() Group { return Group{label: strconv.FormatInt(groups.Add(1), 10)} }

// Running returns how many of g's goroutines are running, and their stacks.
func (g Group) Running() (int, string) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		panic(err)
	}
	return g.count(buf.String())
}

// count reads a goroutine profile (debug=1): a header line, then one block per distinct
// stack and labels, each ending in a blank line: "COUNT @ pcs", the labels line if any,
// the frames.
func (g Group) count(profile string) (int, string) {
	mark := `"` + labelKey + `":"` + g.label + `"`
	n := 0
	var stacks strings.Builder
	_, profile, _ = strings.Cut(profile, "\n")
	for _, block := range strings.Split(profile, "\n\n") {
		head, rest, _ := strings.Cut(block, "\n")
		labels, _, _ := strings.Cut(rest, "\n")
		// Not counted: one that returned, listed for a moment at runtime.goexit1 alone.
		exiting := strings.Count(rest, "#\t0x") == 1 && strings.Contains(rest, "\truntime.goexit1+")
		if strings.HasPrefix(labels, "# labels: ") && strings.Contains(labels, mark) && !exiting {
			count, _, _ := strings.Cut(head, " ")
			c, _ := strconv.Atoi(count)
			n += c
			stacks.WriteString(block + "\n\n")
		}
	}
	return n, stacks.String()
}

// Ended waits up to timeout for every goroutine of g to end, calling tidy (if not nil) on
// each round, say to close idle connections a late dial pooled; it fails t with the stacks
// of those still running.
func (g Group) Ended(t testing.TB, timeout time.Duration, tidy func()) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if tidy != nil {
			tidy()
		}
		n, stacks := g.Running()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines still running %v after the code that started them ended:\n%s", n, timeout, stacks)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
