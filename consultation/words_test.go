package consultation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/fake"
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
		if !strings.Contains(tool, tc.tool) || !strings.Contains(toolSum.Message, tc.tool) {
			t.Errorf("%s: the tool's words lack %q:\n%s", tc.name, tc.tool, tool)
		}
		if !strings.Contains(cl, tc.cl) || !strings.Contains(clSum.Message, tc.cl) || strings.Contains(cl, "exclude_pattern") {
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
