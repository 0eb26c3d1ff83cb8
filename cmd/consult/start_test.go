package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// startTarget is the time from process start to the tools/list answer that issue 14 asks
// for; BenchmarkStartToToolsList reports the figure beside it.
const startTarget = 80 * time.Millisecond

// startRatio bounds TestStartToToolsList: process start to the tools/list answer, against
// process start to exit of `consult version` in the same test (the same binary's load and
// runtime start, no server): the two take about as long. A server that blocked on the
// token vocabulary, or any other load of that size, before answering would exceed it; a
// busy machine slows both sides alike.
const startRatio = 4

// startToToolsList starts the built binary as an MCP client does (stdio, no API key, a
// fresh HOME), sends initialize, then notifications/initialized and tools/list, and
// returns the time from just before the process started to the tools/list answer, and
// the names of the tools listed. The process is killed before it returns.
func startToToolsList(tb testing.TB) (time.Duration, []string) {
	tb.Helper()
	cmd := exec.Command(binary, "openrouter")
	cmd.Env = []string{"HOME=" + tb.TempDir(), "PATH=" + os.Getenv("PATH")}
	start := time.Now()
	stdin, stdout, _ := startPiped(tb, cmd)
	defer func() { cmd.Process.Kill(); cmd.Wait() }() // now: a benchmark starts many
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<16), 1<<20)
	// await reads lines up to the response with this id (skipping notifications).
	await := func(id int) json.RawMessage {
		for lines.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(lines.Bytes(), &m) == nil && m.ID != nil && *m.ID == id {
				return m.Result
			}
		}
		tb.Fatalf("the server ended before answering request %d: %v", id, lines.Err())
		return nil
	}
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			tb.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	res := await(2)
	elapsed := time.Since(start)
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		tb.Fatalf("tools/list result %s: %v", res, err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return elapsed, names
}

// versionRun returns the time from just before the built binary started to its exit,
// run as `consult version`: the baseline TestStartToToolsList compares against.
func versionRun(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if out, err := exec.Command(binary, "version").CombinedOutput(); err != nil {
		t.Fatalf("consult version: %v\n%s", err, out)
	}
	return time.Since(start)
}

// TestStartToToolsList: the binary answers tools/list soon after it starts, without
// waiting for the token vocabulary, and lists the consultation tool. "Soon" is a ratio to
// the binary's bare start and exit (`consult version`) measured alongside, the best of at
// least five of each. A busy machine slows both, but not always alike: while the ratio is
// over the bound it measures more pairs, up to twenty, so that a burst of load passes and a
// server that really waits on something keeps failing. The ratio is asserted in `make bench`
// (testrun.Timed) and logged in the default suite, which only checks the listing.
func TestStartToToolsList(t *testing.T) {
	t.Parallel()
	best, base := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	ratio := 0.0
	for n := 1; n <= 20; n++ {
		base = min(base, versionRun(t))
		elapsed, names := startToToolsList(t)
		if !slices.Contains(names, "consultation") {
			t.Fatalf("tools/list = %q, want it to list consultation", names)
		}
		best = min(best, elapsed)
		if ratio = float64(best) / float64(base); n >= 5 && ratio <= startRatio {
			break
		}
	}
	t.Logf("process start to tools/list answer: %v; start to exit of consult version: %v (%.1fx; the best of each, target %v)", best, base, ratio, startTarget)
	if ratio > startRatio && testrun.Timed() {
		t.Errorf("process start to tools/list answer took %v, %.1f times a bare start (%v), want at most %d times", best, ratio, base, startRatio)
	}
}

// BenchmarkStartToToolsList measures process start to the tools/list answer, one process
// per iteration, and reports the median and the slowest against the 80 ms target.
func BenchmarkStartToToolsList(b *testing.B) {
	var times []time.Duration
	for b.Loop() {
		elapsed, _ := startToToolsList(b)
		times = append(times, elapsed)
	}
	slices.Sort(times)
	median := times[len(times)/2]
	b.ReportMetric(float64(median.Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "ms-max")
	b.ReportMetric(float64(startTarget.Milliseconds()), "ms-target")
}
