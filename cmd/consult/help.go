package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/consultmcp/consult/providers"
)

// The help of each command, in the words of `consult --help`: what it does, its usage, its
// flags. `consult <command> --help` prints it to stdout and exits 0; a mistake on the command
// line prints the mistake and where the help is.

// serveHelp is `consult <provider> --help`.
func serveHelp(provider string) string {
	spec, _ := providers.Lookup(provider)
	return fmt.Sprintf(`consult %[1]s: serve consult's tools over MCP, answered by models on %[1]s.

Usage:
  consult %[1]s [api-key] [flags]      serve MCP over stdio (what MCP clients launch)
  consult %[1]s [api-key] --http ADDR  serve MCP over streamable HTTP at ADDR, path /mcp
  consult %[1]s [api-key] --test       ask the model one question and say whether the key works

The API key comes from the argument or from %[2]s.
The default model is %[3]s (--model changes it).

`, provider, strings.Join(spec.KeyEnv, ", then "), spec.DefaultModel) + serverFlagsText
}

// dryRunHelp is `consult dry-run --help`.
const dryRunHelp = `consult dry-run: gather and count the files a consultation would send, and print the report:
files, bytes, tokens, what was left out and why, and whether it fits the model. No model is
asked, no key is needed, nothing leaves the machine.

Usage:
  consult dry-run --path DIR --pattern GLOB [--exclude GLOB] [--model M] [--query Q]
                  [--timeout DUR] [--json]

Flags:
  --path DIR        absolute directory to gather from (required)
  --pattern GLOB    glob relative to --path, e.g. '**/*.go' or 'src/**/*.{ts,tsx}' (required)
  --exclude GLOB    glob of files to leave out
  --model ID        model whose context window and price to check against (default
                    CONSULT_MODEL)
  --query TEXT      the question, counted as part of the prompt (default "What does this
                    code do?")
  --timeout DUR     deadline for gathering and counting (default 22s)
  --json            print the report as JSON

Exit status: 0 for the report, 1 when it is a failure (e.g. nothing matched), 2 for a
mistake on the command line.
`

// resultsHelp is `consult results --help`.
const resultsHelp = `consult results: the background consultations (on_timeout "continue") saved in the results
directory, for a person, without an agent. It shows every owner's: whoever can read the
directory owns them.

Usage:
  consult results [--json]        list them, newest first
  consult results ID [--json]     print one's answer (--json: its whole record)
  consult results --cancel ID     stop one and print what it had

Flags:
  --results-dir DIR   the results directory (CONSULT_RESULTS_DIR; default
                      $XDG_STATE_HOME/consult/results, else ~/.local/state/consult/results)
  --budget-usd USD    the servers' daily budget, to show what is left of it
                      (CONSULT_BUDGET_USD)
  --json              print records as JSON
  --cancel ID         stop the consultation with this id
`

// quietUsage makes fs print, after a mistake the flag package reports, only where the help
// is (command is what precedes --help, e.g. "consult dry-run"); --help itself prints nothing
// there, and the caller prints the help (see helpAsked).
func quietUsage(fs *flag.FlagSet, stderr io.Writer, command string) {
	fs.Usage = func() {}
	fs.SetOutput(&usageOnMistake{w: stderr, command: command})
}

// usageOnMistake passes on what the flag package writes (its one-line error), led by the
// command, and says after it where the help is.
type usageOnMistake struct {
	w       io.Writer
	command string
}

func (u *usageOnMistake) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(u.w, "%s: %s", u.command, p); err != nil {
		return 0, err
	}
	if strings.HasSuffix(string(p), "\n") {
		if _, err := fmt.Fprintf(u.w, "run %s --help for the usage and the flags\n", u.command); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// helpAsked reports whether err from parsing a command line is its asking for the help.
func helpAsked(err error) bool { return errors.Is(err, flag.ErrHelp) }

// helpRequest is a command line's asking for its help (flag.ErrHelp), with the command's
// flag set, whose flags the tests hold its help text to.
type helpRequest struct{ fs *flag.FlagSet }

func (h helpRequest) Error() string { return flag.ErrHelp.Error() }
func (h helpRequest) Unwrap() error { return flag.ErrHelp }

// showHelp prints help to stdout for the command whose flag set is fs, and returns the
// helpRequest that ends it (with exit status 0: see helped).
func showHelp(fs *flag.FlagSet, help string, stdout io.Writer) error {
	fmt.Fprint(stdout, help)
	return helpRequest{fs}
}

// helped is err, or nil when err is a command's having shown its help.
func helped(err error) error {
	if helpAsked(err) {
		return nil
	}
	return err
}

// waitingLine is what the stdio server says on stderr when its stdin is a terminal: a
// person ran it by hand, and an MCP server that prints nothing and waits looks broken.
const waitingLine = "consult: waiting for an MCP client on stdin (MCP clients start this command themselves); to try it by hand: consult dry-run --path \"$PWD\" --pattern '**/*.go'; Ctrl-D ends\n"

// isTerminal reports whether r is a terminal (a character device: also /dev/null, which no
// MCP client passes as stdin).
func isTerminal(r io.Reader) bool {
	f, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
