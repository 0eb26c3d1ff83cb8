package consultation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// cliNames are a command line's names for the arguments, as consult dry-run has them.
var cliNames = Names{ArgPath: "--path", ArgPattern: "--pattern", ArgExclude: "--exclude", ArgTimeout: "--timeout"}

// TestRenderInTheCallersWords: the same outcome, rendered for the tool and for a command
// line, tells each its own names for what to change: a refused argument, and the advice of
// a request that matched nothing; a result handed over as data (a record) is worded the same.
func TestRenderInTheCallersWords(t *testing.T) {
	t.Parallel()
	svc := &Service{Counter: counter}
	dir := sampleTree(t)
	for _, tc := range []struct {
		name     string
		in       Request
		tool, cl string // what the tool's and the command line's words say
	}{
		{"bad exclude", goReq(Request{Path: dir, Exclude: "[", DryRun: true}), `exclude_pattern "["`, `--exclude "["`},
		{"absolute pattern", goReq(Request{Path: dir, Pattern: "/abs/**", DryRun: true}), `pattern "/abs/**" is absolute`, `--pattern "/abs/**" is absolute`},
		{"relative path", goReq(Request{Path: "rel", DryRun: true}), `path "rel" is not absolute`, `--path "rel" is not absolute`},
		{"timeout", goReq(Request{Path: dir, Timeout: time.Hour, DryRun: true}), "timeout must be", "--timeout must be"},
		{"no match", Request{Path: dir, Pattern: "**/*.rs", Query: "q", DryRun: true}, `Check that pattern "**/*.rs" is relative to path`, `Check that --pattern "**/*.rs" is relative to --path`},
	} {
		res := svc.Consult(context.Background(), tc.in, nil)
		if !res.IsError {
			t.Fatalf("%s: not refused: %s", tc.name, res.Text())
		}
		tool, toolSum := Render(res, ToolNames)
		cl, clSum := Render(res, cliNames)
		if !strings.Contains(tool, tc.tool) || !strings.Contains(inWords(toolSum), tc.tool) {
			t.Errorf("%s: the tool's words lack %q:\n%s", tc.name, tc.tool, tool)
		}
		if !strings.Contains(cl, tc.cl) || !strings.Contains(inWords(clSum), tc.cl) || strings.Contains(cl, "exclude_pattern") {
			t.Errorf("%s: the command line's words lack %q (or name exclude_pattern):\n%s", tc.name, tc.cl, cl)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := Render(back, cliNames); again != cl {
			t.Errorf("%s: the command line's words after a record:\n%s\nwant:\n%s", tc.name, again, cl)
		}
	}
}

// TestRenderAfterTheRecord: a result handed over as data (a worker's pipe, a record) is
// worded exactly as it was where it arose: the words need nothing the data does not carry.
func TestRenderAfterTheRecord(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	srv, svc := upstream(t, 1)
	out := t.TempDir() + "/answer.md"
	scripts := []struct {
		name   string
		script fake.Script
		in     Request
	}{
		{"answer", fake.Script{Steps: []fake.Step{fake.Text("It prints.")}}, Request{}},
		{"answer to a file", fake.Script{Steps: []fake.Step{fake.Text("It prints.")}}, Request{OutputFile: out}},
		{"cut mid-answer", fake.Script{Steps: []fake.Step{fake.Text("Half an answer"), fake.Fail(502, "provider returned error")}}, Request{}},
		{"key rejected", fake.Script{Status: 401}, Request{}},
		{"timeout with a partial answer", fake.Script{Steps: []fake.Step{fake.Text("The first half"), fake.Hang()}}, Request{Timeout: time.Second}},
		{"dry run", fake.Script{}, Request{DryRun: true}},
	}
	for _, sc := range scripts {
		if !sc.in.DryRun {
			srv.Push(sc.script)
		}
		in := sc.in
		in.Path = dir
		res := svc.Consult(context.Background(), goReq(in), nil)
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		text, sum := Render(res, ToolNames)
		text2, sum2 := Render(back, ToolNames)
		if text != text2 || sum.Message != sum2.Message {
			t.Errorf("%s: worded differently after the hand-over:\n%s\n---\n%s", sc.name, text, text2)
		}
		if res.IsError && (sum.Message == "" || strings.Contains(sum.Message, "Partial answer")) {
			t.Errorf("%s: structured message %q: want the words without the partial answer", sc.name, sum.Message)
		}
	}
}

// TestEachOutcomeSaidOnce: the structured result says what each outcome is, once: a dry run
// and a refusal have a message, a partial answer is marked as one, an error's message is
// not repeated as error.message nor its figures (in report) in words, a refusal names the
// phase it stopped in, and a share under 1% of a window is not said as "1%".
func TestEachOutcomeSaidOnce(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	srv, svc := upstream(t, 1)
	for _, tc := range []struct {
		name   string
		script *fake.Script
		in     Request
		check  func(t *testing.T, text string, sum *Summary)
	}{
		{"dry run", nil, Request{DryRun: true}, func(t *testing.T, text string, sum *Summary) {
			for _, want := range []string{"Dry run", "3 files", "prompt tokens", "price expected", "under 1%"} {
				if !strings.Contains(sum.Message, want) {
					t.Errorf("message %q lacks %q", sum.Message, want)
				}
			}
			if strings.Contains(text, "uses 1%") || !strings.Contains(text, "uses under 1%") {
				t.Errorf("a share under 1%% said otherwise:\n%s", text)
			}
		}},
		{"timeout with a partial answer", &fake.Script{Steps: []fake.Step{fake.Text("The first half"), fake.Hang()}}, Request{Timeout: time.Second}, func(t *testing.T, text string, sum *Summary) {
			if !sum.Truncated || !strings.Contains(sum.Message, "partial answer, cut off at the deadline") {
				t.Errorf("partial answer not marked: truncated %v, message %q", sum.Truncated, sum.Message)
			}
		}},
		{"key rejected", &fake.Script{Status: 401}, Request{}, func(t *testing.T, text string, sum *Summary) {
			if sum.Error == nil || sum.Error.Message == "" || strings.Contains(sum.Message, sum.Error.Message) {
				t.Errorf("error %+v, message %q: want the failure's line once, in error.message", sum.Error, sum.Message)
			}
		}},
		{"over max_cost_usd", nil, Request{MaxCostUSD: 1e-9}, func(t *testing.T, text string, sum *Summary) {
			if got, want := sum.Phase, string(PhaseChecking); got != want {
				t.Errorf("phase %q, want %q", got, want)
			}
			if sum.Message == "" || strings.Contains(sum.Message, "Expected price:") || sum.Report == nil {
				t.Errorf("message says the report's figures again (or no report): %q", sum.Message)
			}
			if sum.Estimate != nil {
				t.Errorf("cost_estimate said twice: top level and in report")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.script != nil {
				srv.Push(*tc.script)
			}
			in := tc.in
			in.Path = dir
			text, sum := Render(svc.Consult(context.Background(), goReq(in), nil), ToolNames)
			tc.check(t, text, sum)
			if first, _, _ := strings.Cut(text, "\n"); len(first) > 20 && strings.Count(text, first) > 1 {
				t.Errorf("the text says its first line %q again:\n%s", first, text)
			}
			raw, _ := json.Marshal(sum)
			t.Logf("%s\n%s", text, raw)
		})
	}
}

// inWords is what a structured result says in words: an error's line, then its message.
func inWords(sum *Summary) string {
	if sum.Error != nil && sum.Error.Message != "" {
		return sum.Error.Message + "\n" + sum.Message
	}
	return sum.Message
}
