package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestDailyBudgetAcrossServers: two servers share a results directory and a --budget-usd;
// the first spends (OpenRouter's reported cost) most of the budget, and the second refuses a
// call whose estimate is more than what is left, before it sends anything, saying what is
// left and when the budget resets. `consult results` shows the day's spend and what is left.
func TestDailyBudgetAcrossServers(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	srv.SetModels(fake.Model{ID: "google/gemini-2.5-pro", Context: 1_048_576, MaxOutput: 65_536,
		Pricing: map[string]string{"prompt": "0.00000125", "completion": "0.00001"}})
	srv.SetDefault(fake.Script{Steps: []fake.Step{fake.Text("ok")}, Usage: &fake.Usage{Input: 50, Output: 1, Cost: 0.99}})
	results := t.TempDir()
	dir := fixture(t)
	server := func() func(map[string]any) *mcp.CallToolResult {
		c := stdioClient(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", results, "--budget-usd", "1")
		return func(extra map[string]any) *mcp.CallToolResult {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, consultReq(dir, extra))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	first, second := server(), server()

	dry := first(map[string]any{"dry_run": true})
	if !strings.Contains(resultText(dry), "Expected price: $") || !strings.Contains(resultText(dry), "OpenRouter's model list") {
		t.Errorf("dry run lacks the estimate:\n%s", resultText(dry))
	}
	if res := first(nil); res.IsError {
		t.Fatalf("first call, within budget: %s", resultText(res))
	}
	res := second(nil)
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "left of the server's daily budget") {
		t.Fatalf("second server's call with $0.01 left: error=%v\n%s", res.IsError, text)
	}
	for _, want := range []string{consultation.FormatUSD(0.01) + " left", "resets at 00:00 UTC"} {
		if !strings.Contains(text, want) {
			t.Errorf("refusal lacks %q:\n%s", want, text)
		}
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d model requests, want only the first call's", n)
	}
	out, stderr, err := runCmd(t, "results", "--results-dir", results, "--budget-usd", "1")
	if err != nil {
		t.Fatalf("consult results: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "Spent today") || !strings.Contains(out, consultation.FormatUSD(0.99)) || !strings.Contains(out, consultation.FormatUSD(0.01)+" left") {
		t.Errorf("consult results lacks the day's spend:\n%s", out)
	}
}

// TestBudgetWithUnusableResultsDir: with --budget-usd and a results directory that fails its
// check (writable by others), the server starts, keeps the budget, and refuses every model
// call saying why, instead of dropping the budget and paying for every call.
func TestBudgetWithUnusableResultsDir(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions to make the directory unsafe")
	}
	srv := fake.New(t, fake.OpenRouter)
	srv.SetModels(fake.Model{ID: "google/gemini-2.5-pro", Context: 1_048_576, MaxOutput: 65_536})
	unsafe := t.TempDir()
	if err := os.Chmod(unsafe, 0o777); err != nil {
		t.Fatal(err)
	}
	c := stdioClient(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", filepath.Join(unsafe, "results"), "--budget-usd", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, consultReq(fixture(t), nil))
	if err != nil {
		t.Fatal(err)
	}
	if text := resultText(res); !res.IsError || !strings.Contains(text, "--budget-usd") || !strings.Contains(text, "spend ledger cannot be used") {
		t.Errorf("a call under a budget without a usable ledger: error=%v\n%s", res.IsError, text)
	}
	if n := srv.Count("/chat/completions"); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
}
