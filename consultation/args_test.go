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

// validArgs returns arguments that pass validation, rooted at dir.
func validArgs(dir string) map[string]any {
	return map[string]any{"path": dir, "pattern": "**/*.go", "query": "What does it do?"}
}

func with(base map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for key, val := range base {
		out[key] = val
	}
	if v == deleteArg {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

type deleteMarker struct{}

var deleteArg any = deleteMarker{}

func TestParseArgsRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := validArgs(dir)
	for _, tc := range []struct {
		name    string
		args    map[string]any
		arg     string // the argument the error must name
		mention []string
	}{
		{"missing path", with(ok, "path", deleteArg), "path", []string{`missing required argument "path"`}},
		{"missing pattern", with(ok, "pattern", deleteArg), "pattern", []string{`"pattern"`, "**/*.go"}},
		{"missing query", with(ok, "query", deleteArg), "query", []string{`"query"`}},
		{"empty path", with(ok, "path", ""), "path", []string{"empty"}},
		{"blank query", with(ok, "query", "  \n"), "query", []string{"empty"}},
		{"null query", with(ok, "query", nil), "query", []string{"missing"}},
		{"path not string", with(ok, "path", 42.0), "path", []string{"must be a string", "42"}},
		{"relative path", with(ok, "path", "src"), "path", []string{`"src"`, "not absolute"}},
		{"tilde path", with(ok, "path", "~/src"), "path", []string{"not expanded"}},
		{"missing dir", with(ok, "path", filepath.Join(dir, "nope")), "path", []string{"does not exist"}},
		{"file as path", with(ok, "path", file), "path", []string{"is a file", "main.go"}},
		{"root", with(ok, "path", "/"), "path", []string{"filesystem root"}},
		{"proc", with(ok, "path", "/proc"), "path", []string{"pseudo-filesystem"}},
		{"proc child", with(ok, "path", "/proc/self"), "path", []string{"pseudo-filesystem"}},
		{"timeout zero", with(ok, "timeout", 0.0), "timeout", []string{"from 1 to 600", "got 0"}},
		{"timeout negative", with(ok, "timeout", -1.0), "timeout", []string{"from 1 to 600", "got -1"}},
		{"timeout 601", with(ok, "timeout", 601.0), "timeout", []string{"from 1 to 600", "got 601"}},
		{"timeout huge", with(ok, "timeout", 1e308), "timeout", []string{"from 1 to 600", "1e+308"}},
		{"timeout NaN", with(ok, "timeout", math.NaN()), "timeout", []string{"from 1 to 600", "NaN"}},
		{"timeout string", with(ok, "timeout", "30"), "timeout", []string{"number of seconds", `the string "30"`}},
		{"timeout bool", with(ok, "timeout", true), "timeout", []string{"number of seconds", "boolean true"}},
		{"dry_run string", with(ok, "dry_run", "yes"), "dry_run", []string{"true or false"}},
		{"unknown argument", with(ok, "timeout_seconds", 30.0), "timeout_seconds", []string{`"timeout_seconds"`, "exclude_pattern"}},
		{"invalid utf8 query", with(ok, "query", "why\xff?"), "query", []string{"UTF-8"}},
		{"huge query", with(ok, "query", strings.Repeat("q", int(consult.MaxQueryBytes)+1)), "query", []string{"limit"}},
		{"bad model suffix", with(ok, "model", "o3|fast"), "model", []string{"|thinking"}},
		{"escaping pattern", with(ok, "pattern", "../*.go"), "pattern", []string{`"../*.go"`}},
		{"absolute pattern", with(ok, "pattern", "/etc/*"), "pattern", []string{`"/etc/*"`}},
		{"malformed pattern", with(ok, "pattern", "src/[a-"), "pattern", []string{`"src/[a-"`}},
		{"escaping exclude", with(ok, "exclude_pattern", "../**"), "exclude_pattern", []string{"exclude_pattern"}},
		{"relative output", with(ok, "output_file", "answer.md"), "output_file", []string{"not an absolute path"}},
		{"output is dir", with(ok, "output_file", dir), "output_file", []string{"is a directory"}},
		{"output parent missing", with(ok, "output_file", filepath.Join(dir, "no", "a.md")), "output_file", []string{"does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseArgs(tc.args, consult.DefaultTimeout)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParseArgs error = %v, want ErrInvalidArgument", err)
			}
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T is not an *ArgError", err)
			}
			if ae.Arg != tc.arg {
				t.Errorf("error names argument %q, want %q (%v)", ae.Arg, tc.arg, err)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestParseArgsAccepts(t *testing.T) {
	dir := t.TempDir()
	ok := validArgs(dir)
	for _, tc := range []struct {
		name     string
		args     map[string]any
		timeout  time.Duration
		warnings int
	}{
		{"defaults", ok, 22 * time.Second, 0},
		{"min timeout", with(ok, "timeout", 1.0), time.Second, 0},
		{"fractional", with(ok, "timeout", 2.5), 2500 * time.Millisecond, 0},
		{"just under warning", with(ok, "timeout", 24.9), 24900 * time.Millisecond, 0},
		{"warning at 25", with(ok, "timeout", 25.0), 25 * time.Second, 1},
		{"max timeout", with(ok, "timeout", 600.0), 600 * time.Second, 1},
		{"int timeout", with(ok, "timeout", 30), 30 * time.Second, 1},
		{"null optional", with(ok, "model", nil), 22 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseArgs(tc.args, consult.DefaultTimeout)
			if err != nil {
				t.Fatalf("ParseArgs: %v", err)
			}
			if req.Timeout != tc.timeout {
				t.Errorf("timeout = %v, want %v", req.Timeout, tc.timeout)
			}
			if got := len(req.Warnings); got != tc.warnings {
				t.Errorf("got %d warnings %q, want %d", got, req.Warnings, tc.warnings)
			}
			if req.Path != dir {
				t.Errorf("path = %q, want %q", req.Path, dir)
			}
		})
	}
}

func TestParseArgsFields(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "answer.md")
	req, err := ParseArgs(map[string]any{
		"path": dir + "/./", "pattern": "src/**/*.{ts,tsx}", "query": "q", "model": "o3|thinking=2048",
		"exclude_pattern": "**/*.test.ts", "output_file": out, "dry_run": true,
	}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if req.Path != dir || req.Pattern != "src/**/*.{ts,tsx}" || req.Exclude != "**/*.test.ts" || req.OutputFile != out || !req.DryRun {
		t.Errorf("fields not carried over: %+v", req)
	}
	if req.Model.ID != "o3" || !req.Model.Thinking || req.Model.Budget != 2048 {
		t.Errorf("model = %+v, want o3 thinking 2048", req.Model)
	}
	if req.Timeout != 10*time.Second {
		t.Errorf("timeout = %v, want the default passed in (10s)", req.Timeout)
	}
}
