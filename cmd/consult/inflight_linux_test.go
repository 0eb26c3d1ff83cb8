//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/fake"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// sixteenMiBTree writes a tree of Go files larger than the default total cap (16 MiB): copies
// of GOROOT/src/net/http, so the tokenizer and the request body see real source.
func sixteenMiBTree(t *testing.T) string {
	t.Helper()
	src := filepath.Join(runtimeGOROOT(t), "src", "net", "http")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Skip("no GOROOT/src/net/http to build the tree from:", err)
	}
	dir := t.TempDir()
	var total int64
	for copyN := 0; total < int64(consult.MaxTotalBytes)+(1<<20); copyN++ {
		sub := filepath.Join(dir, fmt.Sprintf("copy%02d", copyN))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
			total += int64(len(b))
		}
	}
	return dir
}

func runtimeGOROOT(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("go env GOROOT:", err)
	}
	return strings.TrimSpace(string(out))
}

// vmRSS reads the VmRSS line of a /proc status file, in bytes.
func vmRSS(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(data), "VmRSS:")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(f[0], 10, 64)
	return kb << 10
}

// TestInflightBoundsMemory: the real binary over stdio, with the default bound on bytes in
// flight, answers 64 concurrent consultations that each gather the default 16 MiB cap (and
// send it, to a fake upstream with a window that takes it), and its peak memory stays
// within the bound. It first runs one such call alone and prints its peak over idle per
// gathered byte: the figure memoryPerByte in consultation/inflight.go stands for. A load test:
// it runs with CONSULT_LOAD=1 (make bench).
func TestInflightBoundsMemory(t *testing.T) {
	testrun.Load(t)
	const calls = 64
	srv := fake.New(t, fake.OpenRouter)
	srv.SetModels(fake.Model{ID: "fake/huge", Context: 10_000_000, MaxOutput: 1000})
	srv.SetDefault(fake.Answer("ok"))
	dir := sixteenMiBTree(t)
	bound := consultation.DefaultInflight()

	cmd := exec.Command(binary, "openrouter", "--base-url", srv.BaseURL(), "--results-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "OPENROUTER_API_KEY=sk-or-test")
	stdin, stdout, errb := startPiped(t, cmd)
	status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initClient(t, c, mcp.LATEST_PROTOCOL_VERSION)
	call := func() (bytes int64, err error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "consultation"
		req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "model": "fake/huge", "timeout": 600}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return 0, err
		}
		if res.IsError {
			return 0, fmt.Errorf("error result: %.300s", resultText(res))
		}
		var sum struct {
			Bytes int64 `json:"bytes"`
		}
		if m, ok := res.StructuredContent.(map[string]any); ok {
			if b, ok := m["bytes"].(float64); ok {
				sum.Bytes = int64(b)
			}
		}
		return sum.Bytes, nil
	}
	time.Sleep(200 * time.Millisecond)
	idle := vmRSS(status)

	peak := watchPeak(cmd)
	start := time.Now()
	gathered, err := call()
	if err != nil {
		t.Fatalf("one call alone: %v\n%s", err, errb.String())
	}
	one := peak.Peak() - idle
	t.Logf("one call alone: gathered %s in %v; peak RSS %s over idle (%s): %.1f bytes per gathered byte",
		consult.Bytes(gathered), time.Since(start).Round(time.Millisecond), consult.Bytes(one), consult.Bytes(idle), float64(one)/float64(max(gathered, 1)))

	peak = watchPeak(cmd)
	start = time.Now()
	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range errs {
		wg.Go(func() { _, errs[i] = call() })
	}
	wg.Wait()
	elapsed := time.Since(start)
	p := peak.Peak()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	t.Logf("%d concurrent calls gathering %s each: all done in %v; peak RSS %s (idle %s), bound (--max-inflight default) %s",
		calls, consult.Bytes(gathered), elapsed.Round(time.Millisecond), consult.Bytes(p), consult.Bytes(idle), bound)
	if p > int64(bound) {
		t.Errorf("peak RSS %s exceeds the bound %s", consult.Bytes(p), bound)
	}
}
