package consultation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/providers"
)

var counter = tokens.NewCounter()

// writeTree creates files (path -> content) under a new temporary directory.
func writeTree(t *testing.T, tree map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range tree {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func sampleTree(t *testing.T) string {
	t.Helper()
	return writeTree(t, map[string]string{
		"main.go":               "package main\n\nfunc main() { println(\"hello\") }\n",
		"internal/big/big.go":   "package big\n\n" + strings.Repeat("// a comment line that adds tokens\n", 200),
		"internal/small/s.go":   "package small\n",
		"README.md":             "# sample\n",
		".gitignore":            "generated/\n",
		"generated/gen.go":      "package generated\n",
		"node_modules/x/x.go":   "package x\n",
		"go.sum":                "example.com/x v1.0.0 h1:abc=\n",
		".env":                  "TOKEN=secret\n",
		"internal/bin/blob.go":  "pack\x00age\n",
		"internal/small/s2.txt": "not go\n",
	})
}

// countingGather wraps files.Gather and counts its calls.
func countingGather(n *atomic.Int32) func(context.Context, files.Options) (*files.Gathered, error) {
	return func(ctx context.Context, o files.Options) (*files.Gathered, error) {
		n.Add(1)
		return files.Gather(ctx, o)
	}
}

// TestGatheredCountedMeanwhile: the call hands each file gathering keeps to the counter as
// it is kept (Counter.Prefetch counts them while the rest are gathered).
func TestGatheredCountedMeanwhile(t *testing.T) {
	t.Parallel()
	var handed int
	var g *files.Gathered
	svc := &Service{Counter: counter, gather: func(ctx context.Context, o files.Options) (*files.Gathered, error) {
		if o.Kept == nil {
			t.Fatal("gathering was given no Kept: the count waits for the whole gathering")
		}
		kept := o.Kept
		o.Kept = func(b []byte) { handed++; kept(b) }
		var err error
		g, err = files.Gather(ctx, o)
		return g, err
	}}
	if res := svc.Consult(t.Context(), Request{Path: sampleTree(t), Pattern: "**/*.go", Query: "q", DryRun: true}, nil); res.IsError {
		t.Fatal(res.Text())
	}
	if handed == 0 || handed != len(g.Files) {
		t.Errorf("%d files handed to the counter as they were kept, of %d gathered", handed, len(g.Files))
	}
}

func TestDryRunReport(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	svc := &Service{Counter: counter, Catalog: catalog.New(catalog.Config{Provider: providers.NameOpenAI})} // the fallback table
	res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.go", Query: "What is here?", DryRun: true, Model: "gpt-4.1"}, nil)
	if res.IsError {
		t.Fatalf("dry run failed: %s", res.Text())
	}
	rep := reportOf(t, res)
	if rep.Files != 3 {
		t.Errorf("files = %d, want 3 (main.go, big.go, s.go): %s", rep.Files, res.Text())
	}
	want := counter.Count([]byte("package main\n\nfunc main() { println(\"hello\") }\n")) +
		counter.Count([]byte("package big\n\n"+strings.Repeat("// a comment line that adds tokens\n", 200))) +
		counter.Count([]byte("package small\n"))
	if rep.Tokens != want {
		t.Errorf("tokens = %d, want %d (sum of exact counts)", rep.Tokens, want)
	}
	if rep.PromptTokens <= rep.Tokens {
		t.Errorf("prompt tokens %d should exceed file tokens %d (headers and query)", rep.PromptTokens, rep.Tokens)
	}
	if len(rep.LargestFiles) == 0 || rep.LargestFiles[0].Path != "internal/big/big.go" {
		t.Errorf("largest file = %+v, want internal/big/big.go first", rep.LargestFiles)
	}
	if rep.ContextWindow != 1_047_576 || rep.Fits == nil || !*rep.Fits {
		t.Errorf("window = %d fits = %v, want 1,047,576 and fits", rep.ContextWindow, rep.Fits)
	}
	if rep.Counting != tokens.Encoding {
		t.Errorf("counting = %q, want %q", rep.Counting, tokens.Encoding)
	}
	reasons := map[string]int{}
	for _, s := range rep.Skipped {
		reasons[s.Reason] = s.Count
	}
	if len(reasons) < 3 {
		t.Errorf("skipped reasons = %v: want at least ignored, default-excluded and binary", reasons)
	}
	for _, frag := range []string{"Dry run", "3 files", "Largest files", "internal/big/big.go", "Left out", "fits"} {
		if !strings.Contains(res.Text(), frag) {
			t.Errorf("report text lacks %q:\n%s", frag, res.Text())
		}
	}
}

func TestDryRunTooLargeSuggestsExclude(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"a/huge.txt":  strings.Repeat("alpha beta gamma delta ", 30000),
		"b/small.txt": "small file\n",
	})
	svc := &Service{Counter: counter, Catalog: fileCatalog(t, providers.NameOpenAI, `{"models": {"gpt-4o": {"context": 128000}}}`)}
	res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.txt", Query: "q", DryRun: true, Model: "gpt-4o"}, nil)
	rep := reportOf(t, res)
	if rep.Fits == nil || *rep.Fits {
		t.Fatalf("fits = %v, want false for %d tokens in a 128k window", rep.Fits, rep.PromptTokens)
	}
	if rep.Shrink != "a/**" && rep.Shrink != "a/huge.txt" {
		t.Errorf("suggested exclude = %q, want the huge directory or file", rep.Shrink)
	}
	if !strings.Contains(res.Text(), "does NOT fit") || !strings.Contains(res.Text(), rep.Shrink) {
		t.Errorf("text should say it does not fit and suggest %q:\n%s", rep.Shrink, res.Text())
	}
}

func TestNoMatchIsError(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	svc := &Service{Counter: counter}
	res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.rs", Query: "q", DryRun: true}, nil)
	if !res.IsError || !strings.Contains(res.Text(), "No files matched") {
		t.Errorf("want a no-match error, got error=%v %q", res.IsError, res.Text())
	}
}

func TestNoModelRefusesWithReason(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	svc := &Service{Counter: counter, NoModel: "no API key: set OPENROUTER_API_KEY"}
	res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.go", Query: "q"}, nil)
	if !res.IsError || !strings.Contains(res.Text(), "set OPENROUTER_API_KEY") || !strings.Contains(res.Text(), "dry_run") {
		t.Errorf("want an error naming the missing key and the dry-run way out, got error=%v %q", res.IsError, res.Text())
	}
}

func TestBadArgumentsReadNothing(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	var calls atomic.Int32
	svc := &Service{Counter: counter, gather: countingGather(&calls)}
	for _, args := range []Request{
		{Path: dir, Pattern: "**/*.go", Query: "q", Timeout: -time.Second},
		{Path: dir, Pattern: "../**", Query: "q"},
		{Path: "relative", Pattern: "**", Query: "q"},
		{Path: dir, Pattern: "**", Query: ""},
	} {
		res := svc.Consult(context.Background(), args, nil)
		if !res.IsError {
			t.Errorf("args %v: want an error result, got %q", args, res.Text())
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("gather ran %d times for invalid arguments, want 0", n)
	}
}

func TestCancelledBeforeStartDoesNothing(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	var calls atomic.Int32
	svc := &Service{Counter: counter, gather: countingGather(&calls)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := svc.Consult(ctx, Request{Path: dir, Pattern: "**/*.go", Query: "q", DryRun: true}, nil)
	if !res.IsError || !strings.Contains(res.Text(), "Cancelled") {
		t.Errorf("want a cancelled result, got %q", res.Text())
	}
	if calls.Load() != 0 {
		t.Error("gather ran for a call cancelled before it started")
	}
}

func TestTimeoutWhileGathering(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		svc := &Service{Counter: counter, gather: func(ctx context.Context, o files.Options) (*files.Gathered, error) {
			g := &files.Gathered{Files: []files.File{
				{Path: "internal/big/big.go", Size: 1000, Content: []byte("package big")},
				{Path: "main.go", Size: 10, Content: []byte("package main")},
			}, Bytes: 1010}
			<-ctx.Done() // a tree so slow to walk that the deadline passes first
			return g, ctx.Err()
		}}
		start := time.Now()
		res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.go", Query: "q", Timeout: 3 * time.Second}, nil)
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("returned after %v, want exactly the 3 s deadline", got)
		}
		for _, frag := range []string{"Request timed out after 3 seconds", "while gathering files", "2 files", "1010 B", "tokens not counted yet", "internal/big/big.go", "raise timeout"} {
			if !strings.Contains(res.Text(), frag) {
				t.Errorf("timeout text lacks %q:\n%s", frag, res.Text())
			}
		}
		if !res.IsError {
			t.Error("a timeout must be an error result")
		}
		// What Codex shows its model is the structured result alone: it must hold the timeout
		// used, the cause and the remedies too.
		sum := summaryOf(t, res)
		if e := sum.Error; e == nil || e.Class != ClassTimeout || !strings.HasPrefix(e.Message, "Request timed out after 3 seconds while gathering files") || strings.Contains(sum.Message, e.Message) {
			t.Errorf("structured error %+v (its line once, in error.message; message %q)", e, sum.Message)
		}
		if m := inWords(sum); !strings.Contains(m, "Request timed out after 3 seconds") || !strings.Contains(m, "raise timeout") {
			t.Errorf("structured message lacks the cause or the remedy: %q", m)
		}
	})
}

// TestTimeoutWarning: a long timeout the caller chose is warned of in the first progress
// report (sent at once), in the client log and in the result; a dry run, which waits on no
// model, is not warned, nor a call that left the timeout to the server.
func TestTimeoutWarning(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	svc := &Service{Counter: counter, Heartbeat: time.Hour}
	rec := &recorder{}
	res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 30 * time.Second}), rec)
	const warning = "timeout 30 seconds accepted, but many MCP clients give up"
	if !strings.Contains(res.Text(), "Warning: "+warning) {
		t.Errorf("result lacks the long-timeout warning:\n%s", res.Text())
	}
	if len(rec.logs) != 1 || !strings.HasPrefix(rec.logs[0], "warning: "+warning) {
		t.Errorf("client log = %q, want the long-timeout warning", rec.logs)
	}
	if _, msgs, _ := rec.snapshot(); len(msgs) == 0 || !strings.Contains(msgs[0], "warning: "+warning) {
		t.Errorf("progress = %q, want the warning in the first report", msgs)
	}
	for _, args := range []Request{goReq(Request{Path: dir, Timeout: 120 * time.Second, DryRun: true}), goReq(Request{Path: dir, DryRun: true})} {
		rec := &recorder{}
		res := (&Service{Counter: counter, DefaultTimeout: time.Minute}).Consult(context.Background(), args, rec)
		if strings.Contains(res.Text(), "Warning: ") || len(rec.logs) > 0 {
			t.Errorf("%v: warned %q:\n%s", args, rec.logs, res.Text())
		}
	}
}

func TestDefaultTimeoutUsed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		svc := &Service{Counter: counter, DefaultTimeout: 7 * time.Second, gather: func(ctx context.Context, o files.Options) (*files.Gathered, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		start := time.Now()
		res := svc.Consult(context.Background(), Request{Path: t.TempDir(), Pattern: "**", Query: "q"}, nil)
		if got := time.Since(start); got != 7*time.Second {
			t.Errorf("deadline after %v, want the service default 7s", got)
		}
		if !strings.Contains(res.Text(), "Request timed out after 7 seconds") || !strings.Contains(res.Text(), "Nothing had been gathered yet") {
			t.Errorf("unexpected text:\n%s", res.Text())
		}
	})
}

func TestBytesInReport(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"a.txt": strings.Repeat("x", 2048)})
	res := (&Service{Counter: counter}).Consult(context.Background(), Request{Path: dir, Pattern: "*.txt", Query: "q", DryRun: true}, nil)
	rep := reportOf(t, res)
	if rep.Bytes != consult.Bytes(2048) || !strings.Contains(res.Text(), "2.0 KiB") {
		t.Errorf("bytes = %d, text:\n%s", rep.Bytes, res.Text())
	}
}

// reportOf returns the size report of a result's structured content.
func reportOf(t *testing.T, res Result) *Report {
	t.Helper()
	if res.Summary == nil || res.Summary.Report == nil {
		t.Fatalf("summary = %#v, want one with a report", res.Summary)
	}
	return res.Summary.Report
}
