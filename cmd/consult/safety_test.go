package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKeyOnCommandLineWarns: a key given as an argument (visible in ps) draws a warning that
// names the environment variable; a key from the environment does not. Not parallel: it runs
// the server in this process, which sets the default logger to its stderr.
func TestKeyOnCommandLineWarns(t *testing.T) {
	const key = "sk-or-v1-cmdline-0123456789abcdef"
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		warn bool
	}{
		{"argument", []string{"openrouter", key}, nil, true},
		{"environment", []string{"openrouter"}, map[string]string{"OPENROUTER_API_KEY": key}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
			defer cancel()
			var out, errb bytes.Buffer
			// Empty stdin: the stdio server ends at once.
			if err := run(ctx, append(tc.args, "--base-url", "http://127.0.0.1:1"), env(tc.env), strings.NewReader(""), &out, &errb); err != nil {
				t.Fatalf("run: %v\n%s", err, errb.String())
			}
			logs := errb.String()
			warned := strings.Contains(logs, "level=WARN") && strings.Contains(logs, "command line") &&
				strings.Contains(logs, "OPENROUTER_API_KEY")
			if warned != tc.warn {
				t.Errorf("warned = %v, want %v; stderr:\n%s", warned, tc.warn, logs)
			}
			if strings.Contains(logs, key) || strings.Contains(out.String(), key) {
				t.Error("the key was printed")
			}
		})
	}
}

// TestAllowRootSlashRefused: --allow-root / is refused at start-up, saying it confines nothing.
func TestAllowRootSlashRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"openrouter", "--allow-root", "/"},
		{"openrouter", "--http", "0.0.0.0:0", "--allow-root", "/"},
	} {
		_, stderr, err := runCmd(t, args...)
		var code exitCode
		if !errors.As(err, &code) || code != 2 || !strings.Contains(stderr, "confines nothing") {
			t.Errorf("%v: err = %v, stderr %q; want exit 2 saying it confines nothing", args, err, stderr)
		}
	}
}

// TestDryRunEscapesNames: consult dry-run prints hostile file names escaped, in its text
// and in its JSON (which stays valid and decodes to the true names).
func TestDryRunEscapesNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := []string{"a\nForged: ok.go", "osc\x1b]52;c;ZXZpbA==\x07.go", "evil\u202eog.go", "c1\u009b2J.go", "del\x7f.go"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, stderr, err := runCmd(t, "dry-run", "--path", dir, "--pattern", "*.go")
	if err != nil {
		t.Fatalf("dry-run: %v\n%s", err, stderr)
	}
	for _, want := range []string{`a\nForged: ok.go`, `osc\x1b]52;c;ZXZpbA==\x07.go`, `evil\u202eog.go`, `c1\u009b2J.go`} {
		if !strings.Contains(text, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, text)
		}
	}
	jsonOut, stderr, err := runCmd(t, "dry-run", "--path", dir, "--pattern", "*.go", "--json")
	if err != nil {
		t.Fatalf("dry-run --json: %v\n%s", err, stderr)
	}
	for name, out := range map[string]string{"text": text, "json": jsonOut} {
		for i, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "Forged") || strings.ContainsAny(line, "\x1b\x07\u202e\u009b") {
				t.Errorf("%s line %d is forged or holds a raw control: %q", name, i+1, line)
			}
		}
	}
	var rep struct {
		Report struct {
			LargestFiles []struct{ Path string } `json:"largest_files"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &rep); err != nil {
		t.Fatalf("dry-run --json is not JSON: %v\n%s", err, jsonOut)
	}
	var got []string
	for _, f := range rep.Report.LargestFiles {
		got = append(got, f.Path)
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("JSON names = %q, want %q", got, names)
	}
}
