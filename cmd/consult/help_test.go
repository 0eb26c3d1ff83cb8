package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCommandHelp: every command's --help (and -h) prints its help to stdout, in the form of
// `consult --help` (what it does, its usage, its flags), writes nothing to stderr and exits 0;
// the help names every flag the command takes.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		command []string
		// flags returns the flag set of the command's help request.
		flags func(t *testing.T) *flag.FlagSet
	}{
		{[]string{"openrouter"}, func(t *testing.T) *flag.FlagSet {
			_, err := parseServe("openrouter", []string{"--help"}, env(nil), io.Discard)
			return requestedFlags(t, err)
		}},
		{[]string{"gemini"}, nil},
		{[]string{"dry-run"}, func(t *testing.T) *flag.FlagSet {
			return requestedFlags(t, runDryRun(ctx, []string{"--help"}, env(nil), io.Discard, io.Discard))
		}},
		{[]string{"results"}, func(t *testing.T) *flag.FlagSet {
			return requestedFlags(t, runResults(ctx, []string{"--help"}, env(map[string]string{"HOME": t.TempDir()}), io.Discard, io.Discard))
		}},
	} {
		for _, asked := range []string{"--help", "-h"} {
			t.Run(strings.Join(tc.command, " ")+" "+asked, func(t *testing.T) {
				t.Parallel()
				var stdout, stderr bytes.Buffer
				err := run(ctx, append(tc.command, asked), env(map[string]string{"HOME": t.TempDir()}), strings.NewReader(""), &stdout, &stderr)
				if err != nil {
					t.Fatalf("consult %s %s: %v, want exit status 0", tc.command[0], asked, err)
				}
				if stderr.Len() > 0 {
					t.Errorf("stderr: %q, want nothing", stderr.String())
				}
				help := stdout.String()
				for _, want := range []string{"consult " + tc.command[0] + ": ", "\nUsage:\n  consult " + tc.command[0] + " "} {
					if !strings.Contains(help, want) {
						t.Errorf("help lacks %q:\n%s", want, help)
					}
				}
				if tc.flags == nil {
					return
				}
				tc.flags(t).VisitAll(func(f *flag.Flag) {
					if !strings.Contains(help, "\n  --"+f.Name+" ") {
						t.Errorf("help does not list --%s:\n%s", f.Name, help)
					}
				})
			})
		}
	}
}

// requestedFlags is the flag set of the help request err, failing the test when err is not
// one.
func requestedFlags(t *testing.T, err error) *flag.FlagSet {
	t.Helper()
	var help helpRequest
	if !errors.As(err, &help) {
		t.Fatalf("--help: %v, want a help request", err)
	}
	return help.fs
}

// TestCommandLineMistake: a flag the command does not take is named on stderr, led by the
// command, with where the help is, and exit status 2; nothing goes to stdout.
func TestCommandLineMistake(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"openai", "dry-run", "results"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{command, "--no-such-flag"}, env(map[string]string{"HOME": t.TempDir()}), strings.NewReader(""), &stdout, &stderr)
			if code, ok := err.(exitCode); !ok || code != 2 {
				t.Errorf("err = %v, want exit status 2", err)
			}
			want := "consult " + command + ": flag provided but not defined: -no-such-flag\nrun consult " + command + " --help for the usage and the flags\n"
			if got := stderr.String(); got != want {
				t.Errorf("stderr = %q, want %q", got, want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// terminal is a stdin that reads as a terminal does to isTerminal (a character device) and
// ends at once, as if the person pressed Ctrl-D.
type terminal struct{ io.Reader }

func (terminal) Stat() (os.FileInfo, error) { return ttyInfo{}, nil }

type ttyInfo struct{}

func (ttyInfo) Name() string       { return "tty" }
func (ttyInfo) Size() int64        { return 0 }
func (ttyInfo) Mode() fs.FileMode  { return fs.ModeDevice | fs.ModeCharDevice | 0o620 }
func (ttyInfo) ModTime() time.Time { return time.Time{} }
func (ttyInfo) IsDir() bool        { return false }
func (ttyInfo) Sys() any           { return nil }

// TestWaitingLineOnTerminal: the stdio server started in a terminal says on stderr, in one
// line, that it waits for an MCP client on stdin and how to try a dry run; started by a client
// (stdin a pipe) it says nothing. Not parallel: the server sets the default logger.
func TestWaitingLineOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin io.Reader
		want  bool
	}{
		{"terminal", terminal{strings.NewReader("")}, true},
		{"pipe", strings.NewReader(""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"openai", "--base-url", "http://127.0.0.1:1", "--results-dir", t.TempDir()},
				env(map[string]string{"OPENAI_API_KEY": "sk-test-key-123456789"}), tc.stdin, &stdout, &stderr)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			got := strings.Count(stderr.String(), waitingLine)
			if want := map[bool]int{true: 1, false: 0}[tc.want]; got != want {
				t.Errorf("the waiting line appears %d times on stderr, want %d:\n%s", got, want, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q: stdout is the protocol", stdout.String())
			}
		})
	}
	if strings.Count(waitingLine, "\n") != 1 || !strings.HasSuffix(waitingLine, "\n") || !strings.Contains(waitingLine, "MCP client on stdin") || !strings.Contains(waitingLine, "consult dry-run") {
		t.Errorf("waitingLine %q: want one line saying what it waits for and how to try a dry run", waitingLine)
	}
}
