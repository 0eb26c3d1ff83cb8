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
)

// startTarget is the time from process start to the tools/list answer that issue 14 asks
// for; BenchmarkStartToToolsList reports the figure beside it.
const startTarget = 80 * time.Millisecond

// startBound is what TestStartToToolsList asserts: far above startTarget, so that a busy
// machine does not fail the test, and far below the vocabulary load plus library init
// that a server blocking on them would take on a busy machine.
const startBound = time.Second

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

// TestStartToToolsList: the binary answers tools/list soon after it starts, without
// waiting for the token vocabulary, and lists the consultation tool. It takes the best of
// three starts and is not parallel (it runs before this package's parallel tests), so
// that a busy machine does not fail it.
func TestStartToToolsList(t *testing.T) {
	best := time.Duration(math.MaxInt64)
	for range 3 {
		elapsed, names := startToToolsList(t)
		if !slices.Contains(names, "consultation") {
			t.Fatalf("tools/list = %q, want it to list consultation", names)
		}
		best = min(best, elapsed)
	}
	t.Logf("process start to tools/list answer: %v, the best of 3 (target %v)", best, startTarget)
	if best > startBound {
		t.Errorf("process start to tools/list answer took %v, want under %v", best, startBound)
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
