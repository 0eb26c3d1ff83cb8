// Command consult is an MCP server that answers questions about a codebase by sending the
// matching files to a large-context model on OpenRouter, OpenAI or Gemini.
//
//	consult <provider> [api-key] [flags]      serve MCP over stdio
//	consult <provider> [api-key] --http ADDR  serve MCP over streamable HTTP at ADDR (/mcp)
//	consult dry-run --path DIR --pattern GLOB gather and count, print the report
//	consult results [ID] [--json] [--cancel ID] list, read or stop background consultations
//	consult version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		if code, ok := err.(exitCode); ok {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "consult:", err)
		os.Exit(1)
	}
}

// exitCode is an error that carries only an exit status: the message was printed already.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run is the whole program with its environment passed in, so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(2)
	}
	switch args[0] {
	case "version", "--version", "-version":
		bi, _ := debug.ReadBuildInfo()
		fmt.Fprintf(stdout, "consult %s\n", formatVersion(consult.Version, bi))
		return nil
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	case "dry-run":
		return helped(runDryRun(ctx, args[1:], getenv, stdout, stderr))
	case "results":
		return helped(runResults(ctx, args[1:], getenv, stdout, stderr))
	case workerCommand:
		return runWorker(ctx, stdin, stderr)
	}
	if _, ok := providers.Lookup(args[0]); ok {
		return helped(runServe(ctx, args[0], args[1:], getenv, stdin, stdout, stderr))
	}
	fmt.Fprintf(stderr, "consult: unknown command or provider %q\n\n%s", args[0], usage)
	return exitCode(2)
}

// usageText is the help text; {providers} stands for the paragraph on providers, which
// comes from the registry (see usage).
const usageText = `consult: ask a large-context model about a codebase, as an MCP server.

Usage:
  consult <provider> [api-key] [flags]      serve MCP over stdio (what MCP clients launch)
  consult <provider> [api-key] --http ADDR  serve MCP over streamable HTTP at ADDR, path /mcp
  consult dry-run --path DIR --pattern GLOB [--exclude GLOB] [--model M] [--json]
                                            gather and count, print the report; no model, no key
  consult results [ID] [--json] [--cancel ID] [--results-dir DIR]
                                            list the saved background consultations, print
                                            one's answer (--json: its record), or stop one
  consult version

Each command says more with --help, e.g. consult dry-run --help.

{providers}

` + serverFlagsText

// serverFlagsText is the server's flags, in `consult --help` and `consult <provider> --help`.
const serverFlagsText = `Server flags (each also an environment variable CONSULT_<NAME>, e.g. CONSULT_BASE_URL):
  --base-url URL          provider endpoint (a proxy, a local model server, a test fake)
  --model ID              default model when a call names none
  --default-timeout DUR   deadline of a call that sets none (default 22s; 1s-600s)
  --heartbeat DUR         interval between progress notifications (default 10s)
  --idle-timeout DUR      cancel a call whose upstream sent nothing for this long (default 0 = off)
  --log-level LEVEL       debug, info, warn or error (default warn: only problems); logs go
                          to stderr; info adds the start-up line and one line per call
  --http ADDR             serve streamable HTTP at ADDR instead of stdio; an address beyond
                          loopback needs --allow-root. Every request needs the header
                          "Authorization: Bearer TOKEN"; without a token configured, one is
                          generated and printed at start
  --http-token-file FILE  the token is FILE's first line (FILE must be mode 0600); else
                          CONSULT_HTTP_TOKEN holds the token itself (16 characters or more)
  --http-allow-origin O   accept requests with the header "Origin: O", O as scheme://host[:port]
                          (repeatable; CONSULT_HTTP_ALLOW_ORIGIN takes a list separated by ',');
                          a request with any other Origin is refused
  --allow-root DIR        confine path and output_file to DIR (repeatable; CONSULT_ALLOW_ROOT
                          takes a list separated by ':')
  --results-dir DIR       where answers of background consultations (on_timeout "continue")
                          are saved (default $XDG_STATE_HOME/consult/results, else
                          ~/.local/state/consult/results)
  --results-ttl DUR       how long a saved result is kept (default 24h)
  --background-limit DUR  how long a consultation may run in all (default 30m)
  --background-workers N  how many background consultations may run at once, over every
                          server sharing the results directory (default 8); each runs in a
                          worker process of its own that outlives the server
  --max-inflight SIZE     bound on the memory the calls in flight hold, server-wide (default
                          2GiB: set it lower on a machine with less than 8GiB to spare; sizes
                          as 512MiB, 1.5GB); a call that would pass it waits, its deadline running
  --page-bytes N          answers longer than N bytes are returned in pages, each saying how
                          to fetch the next with consultation_result (default 30000, under
                          what MCP clients pass on whole; 0: never; else at least 4096)
  --budget-usd USD        cap on what consultations cost per UTC day, over every server sharing
                          the results directory (default 0: none); each call holds the most it
                          can cost until it ends, its output limit sized to what is left
  --prices FILE           a prices file (JSON; format in README) whose prices, windows and
                          expiry dates win over every other source
  --models-url URL        where the model list (prices, windows, expiry dates) is fetched
                          (default: OpenRouter's public list; the provider's own endpoint for
                          openrouter; none for openai and gemini with --base-url); "off": none
  --zdr                   zero data retention (openrouter only): send every request only to
                          endpoints that keep no data (OpenRouter's zdr and data_collection
                          deny); a model without one is refused. CONSULT_ZDR=1 does the same
  --long-cache            keep the prompt cache longer where the provider allows: OpenAI 24 h
                          (same prices), Anthropic models on OpenRouter 1 h (cache writes at 2x
                          the prompt price instead of 1.25x). CONSULT_LONG_CACHE=1 does the same
  --test                  send a one-line question, print answer, model and timing, and exit
Durations take Go syntax (90s, 2m) or plain seconds (90).
`
