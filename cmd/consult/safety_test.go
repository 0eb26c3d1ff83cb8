package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestKeyOnCommandLineWarns: a key given as an argument (visible in ps) draws a warning that
// names the environment variable; a key from the environment does not.
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
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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
