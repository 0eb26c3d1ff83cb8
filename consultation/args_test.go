package consultation

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	consult "github.com/consultmcp/consult"
)

// validRequest returns a request that passes validation, rooted at dir.
func validRequest(dir string) Request {
	return Request{Path: dir, Pattern: "**/*.go", Query: "What does it do?"}
}

// edit returns req changed by f.
func edit(req Request, f func(*Request)) Request {
	f(&req)
	return req
}

func TestValidateRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := validRequest(dir)
	for _, tc := range []struct {
		name    string
		req     Request
		arg     string // the argument the error must name
		mention []string
	}{
		{"empty path", edit(ok, func(r *Request) { r.Path = "" }), "path", []string{`argument "path" is empty`, "absolute directory"}},
		{"blank pattern", edit(ok, func(r *Request) { r.Pattern = " \t" }), "pattern", []string{`"pattern"`, "empty", "**/*.go"}},
		{"blank query", edit(ok, func(r *Request) { r.Query = "  \n" }), "query", []string{"empty"}},
		{"relative path", edit(ok, func(r *Request) { r.Path = "src" }), "path", []string{`"src"`, "not absolute"}},
		{"tilde path", edit(ok, func(r *Request) { r.Path = "~/src" }), "path", []string{"not expanded"}},
		{"missing dir", edit(ok, func(r *Request) { r.Path = filepath.Join(dir, "nope") }), "path", []string{"does not exist"}},
		{"file as path", edit(ok, func(r *Request) { r.Path = file }), "path", []string{"is a file", "main.go"}},
		{"root", edit(ok, func(r *Request) { r.Path = "/" }), "path", []string{"filesystem root"}},
		{"proc", edit(ok, func(r *Request) { r.Path = "/proc" }), "path", []string{"pseudo-filesystem"}},
		{"proc child", edit(ok, func(r *Request) { r.Path = "/proc/self" }), "path", []string{"pseudo-filesystem"}},
		{"timeout negative", edit(ok, func(r *Request) { r.Timeout = -time.Second }), "timeout", []string{"from 1 to 600 (default 22 seconds)", "got -1"}},
		{"timeout just below one", edit(ok, func(r *Request) { r.Timeout = 999 * time.Millisecond }), "timeout", []string{"got 0.999"}},
		{"timeout 601", edit(ok, func(r *Request) { r.Timeout = 601 * time.Second }), "timeout", []string{"from 1 to 600", "got 601"}},
		{"on_timeout other word", edit(ok, func(r *Request) { r.OnTimeout = "background" }), "on_timeout", []string{`"background"`, `"continue"`}},
		{"on_timeout upper case", edit(ok, func(r *Request) { r.OnTimeout = "CONTINUE" }), "on_timeout", []string{`"CONTINUE"`}},
		{"invalid utf8 query", edit(ok, func(r *Request) { r.Query = "why\xff?" }), "query", []string{"UTF-8"}},
		{"huge query", edit(ok, func(r *Request) { r.Query = strings.Repeat("q", int(MaxQueryBytes)+1) }), "query", []string{"limit"}},
		{"bad model suffix", edit(ok, func(r *Request) { r.Model = "o3|fast" }), "model", []string{"|thinking"}},
		{"escaping pattern", edit(ok, func(r *Request) { r.Pattern = "../*.go" }), "pattern", []string{`"../*.go"`}},
		{"absolute pattern", edit(ok, func(r *Request) { r.Pattern = "/etc/*" }), "pattern", []string{`"/etc/*"`}},
		{"malformed pattern", edit(ok, func(r *Request) { r.Pattern = "src/[a-" }), "pattern", []string{`"src/[a-"`}},
		{"escaping exclude", edit(ok, func(r *Request) { r.Exclude = "../**" }), "exclude_pattern", []string{"exclude_pattern"}},
		{"relative output", edit(ok, func(r *Request) { r.OutputFile = "answer.md" }), "output_file", []string{"not an absolute path"}},
		{"output is dir", edit(ok, func(r *Request) { r.OutputFile = dir }), "output_file", []string{"is a directory"}},
		{"output parent missing", edit(ok, func(r *Request) { r.OutputFile = filepath.Join(dir, "no", "a.md") }), "output_file", []string{"does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.req.validate(consult.DefaultTimeout)
			if !errors.Is(err, consult.ErrInvalidArgument) {
				t.Fatalf("validate error = %v, want ErrInvalidArgument", err)
			}
			var ae *consult.ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T is not an *ArgError", err)
			}
			if got, want := ae.Arg, tc.arg; got != want {
				t.Errorf("error names argument %q, want %q (%v)", got, want, err)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := validRequest(dir)
	for _, tc := range []struct {
		name     string
		req      Request
		timeout  time.Duration
		warnings int
	}{
		{"defaults", ok, 22 * time.Second, 0},
		{"min timeout", edit(ok, func(r *Request) { r.Timeout = time.Second }), time.Second, 0},
		{"fractional", edit(ok, func(r *Request) { r.Timeout = 2500 * time.Millisecond }), 2500 * time.Millisecond, 0},
		{"just under warning", edit(ok, func(r *Request) { r.Timeout = 24900 * time.Millisecond }), 24900 * time.Millisecond, 0},
		{"warning at 25", edit(ok, func(r *Request) { r.Timeout = 25 * time.Second }), 25 * time.Second, 1},
		{"max timeout", edit(ok, func(r *Request) { r.Timeout = 600 * time.Second }), 600 * time.Second, 1},
		{"no warning on a dry run", edit(ok, func(r *Request) { r.Timeout, r.DryRun = 600*time.Second, true }), 600 * time.Second, 0},
		{"on_timeout fail", edit(ok, func(r *Request) { r.OnTimeout = OnTimeoutFail }), 22 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := tc.req.validate(consult.DefaultTimeout)
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if got, want := req.Timeout, tc.timeout; got != want {
				t.Errorf("timeout = %v, want %v", got, want)
			}
			if got, want := len(req.Warnings), tc.warnings; got != want {
				t.Errorf("got %d warnings %q, want %d", got, req.Warnings, want)
			}
			if got, want := req.Path, dir; got != want {
				t.Errorf("path = %q, want %q", got, want)
			}
		})
	}
}

func TestValidateFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "answer.md")
	req, err := Request{
		Path: dir + "/./", Pattern: "src/**/*.{ts,tsx}", Query: "q", Model: "o3|thinking=2048",
		Exclude: "**/*.test.ts", OutputFile: out, DryRun: true, OnTimeout: OnTimeoutContinue,
	}.validate(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if req.Path != dir || req.Pattern != "src/**/*.{ts,tsx}" || req.Exclude != "**/*.test.ts" || req.OutputFile != out || !req.DryRun || !req.Continue {
		t.Errorf("fields not carried over: %+v", req)
	}
	if req.Model.ID != "o3" || !req.Model.Thinking || req.Model.Budget != 2048 {
		t.Errorf("model = %+v, want o3 thinking 2048", req.Model)
	}
	if got, want := req.Timeout, 10*time.Second; got != want {
		t.Errorf("timeout = %v, want the default passed in (%v)", got, want)
	}
}

func TestSecondsRule(t *testing.T) {
	t.Parallel()
	rule := TimeoutRule(22 * time.Second).Number()
	for _, tc := range []struct {
		sec float64
		got string // "" when accepted, else what the refusal says was given
	}{
		{1, ""},
		{2.5, ""},
		{600, ""},
		{0, "got 0"},
		{0.999, "got 0.999"},
		{5e-324, "got 5e-324"},
		{600.5, "got 600.5"},
		{1e308, "got 1e+308"},
		{-1e308, "got -1e+308"},
		{math.NaN(), "got NaN"},
		{math.Inf(1), "got +Inf"},
		{math.Inf(-1), "got -Inf"},
	} {
		err := rule.Check(tc.sec)
		switch {
		case tc.got == "" && err != nil:
			t.Errorf("Check(%g) = %v; want it accepted", tc.sec, err)
		case tc.got != "" && (err == nil || !strings.Contains(err.Error(), "timeout must be a number of seconds from 1 to 600 (default 22 seconds); "+tc.got)):
			t.Errorf("Check(%g) error = %v, want one ending %q", tc.sec, err, tc.got)
		}
	}
}
