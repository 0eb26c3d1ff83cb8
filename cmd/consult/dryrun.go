package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/leaf/tokens"
)

// flagNames are the dry run's flags, in the words that tell its user what to change.
var flagNames = consultation.Names{
	consultation.ArgPath: "--path", consultation.ArgPattern: "--pattern", consultation.ArgExclude: "--exclude",
	consultation.ArgQuery: "--query", consultation.ArgModel: "--model", consultation.ArgTimeout: "--timeout",
}

// runDryRun gathers and counts like a consultation with dry_run: true and prints the report.
// It needs no key and no network. Exit status 1 means the report is a failure (e.g. nothing
// matched), 2 a usage mistake.
func runDryRun(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consult dry-run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("path", "", "absolute directory to gather from (required)")
	pattern := fs.String("pattern", "", "glob relative to path, e.g. '**/*.go' (required)")
	exclude := fs.String("exclude", "", "glob of files to leave out")
	model := fs.String("model", getenv("CONSULT_MODEL"), "model whose context window to check against")
	query := fs.String("query", "What does this code do?", "the question, counted as part of the prompt")
	timeout := consult.DefaultTimeout
	fs.Var(newValue(&timeout, parseDuration), "timeout", "deadline for gathering and counting")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	prices := fs.String("prices", getenv("CONSULT_PRICES"), "a prices file whose prices and windows win over every other source")
	quietUsage(fs, stderr, "consult dry-run")
	if _, err := parseInterspersed(fs, args); helpAsked(err) {
		return showHelp(fs, dryRunHelp, stdout)
	} else if err != nil {
		return exitCode(2)
	}
	if *path == "" || *pattern == "" {
		fmt.Fprintln(stderr, "consult dry-run: --path and --pattern are required, e.g.\n  consult dry-run --path \"$PWD\" --pattern '**/*.go'\nrun consult dry-run --help for the flags")
		return exitCode(2)
	}
	// Prices and windows without the network: the prices file, the model list the servers
	// cached in the results directory, the fallback table.
	cc := catalog.Config{ListURL: catalog.DefaultListURL, Offline: true}
	if dir := cmp.Or(getenv("CONSULT_RESULTS_DIR"), defaultResultsDir(getenv)); dir != "" {
		cc.Cache = results.Open(dir, 0, 0, 0)
	}
	if *prices != "" {
		pf, err := catalog.LoadPrices(*prices)
		if err != nil {
			fmt.Fprintf(stderr, "consult dry-run: --prices: %v\n", err)
			return exitCode(2)
		}
		cc.Prices = pf
	}
	svc := &consultation.Service{Counter: tokens.NewCounter(), Catalog: catalog.New(cc)}
	tokens.Preload() // while the files are gathered
	res := svc.Consult(ctx, consultation.Request{
		Path: *path, Pattern: *pattern, Exclude: *exclude, Query: *query, Model: *model,
		Timeout: timeout, DryRun: true,
	}, nil)
	text, sum := consultation.Render(res, flagNames)
	if *asJSON && sum != nil {
		if err := printJSON(stdout, sum); err != nil {
			return err
		}
	} else if res.IsError {
		fmt.Fprintln(stderr, text)
	} else {
		fmt.Fprintln(stdout, text)
	}
	if res.IsError {
		return exitCode(1)
	}
	return nil
}
