package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/background"
	"github.com/consultmcp/consult/internal/results"
)

// runResults is `consult results [ID] [--json] [--cancel ID] [--results-dir DIR]`: the
// saved background consultations for a person, without an agent. It shows every owner's:
// whoever can read the results directory owns them.
func runResults(_ context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consult results", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := defaultResultsDir(getenv)
	if d := getenv("CONSULT_RESULTS_DIR"); d != "" {
		dir = d
	}
	fs.StringVar(&dir, "results-dir", dir, "the results directory")
	asJSON := fs.Bool("json", false, "print records as JSON")
	cancel := fs.String("cancel", "", "stop the consultation with this id")
	var budget float64
	if v := getenv("CONSULT_BUDGET_USD"); v != "" {
		if err := (dollarsValue{&budget}).Set(v); err != nil {
			fmt.Fprintf(stderr, "consult results: CONSULT_BUDGET_USD: %v\n", err)
			return exitCode(2)
		}
	}
	fs.Var(dollarsValue{&budget}, "budget-usd", "the servers' daily budget, to show what is left of it")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return exitCode(2)
	}
	if dir == "" {
		fmt.Fprintln(stderr, "consult results: no results directory: pass --results-dir")
		return exitCode(2)
	}
	if len(positional) > 1 || (*cancel != "" && len(positional) > 0) {
		fmt.Fprintln(stderr, "consult results: give at most one id, or --cancel ID")
		return exitCode(2)
	}
	jobs := background.New(background.Config{Store: results.Open(dir, 0, 0, 0)})
	switch {
	case *cancel != "":
		msg, err := jobs.Stop(*cancel)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	case len(positional) == 1:
		rec, err := jobs.Lookup(positional[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, rec)
		}
		fmt.Fprintln(stdout, jobs.Describe(rec))
		if rec.IsError {
			return exitCode(1)
		}
		return nil
	}
	recs, err := jobs.Store().List(0)
	if err != nil {
		return err
	}
	type entry struct {
		results.Record
		State string `json:"state"`
	}
	entries := make([]entry, len(recs))
	for i, r := range recs {
		entries[i] = entry{r, jobs.State(r)}
	}
	if *asJSON {
		return printJSON(stdout, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintf(stdout, "No consultations in %s.\n", dir)
	}
	for _, e := range entries {
		fmt.Fprintf(stdout, "%s  %-24s  %12s ago  %s  %s\n", e.ID, e.State, consult.FormatDuration(time.Since(e.Created)), e.Model, oneLine(e.Query))
	}
	line, err := spendLine(jobs.Store(), budget, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, line)
	return nil
}

// spendLine says what consultations cost today (UTC), and with a budget what is left of it
// and when it resets.
func spendLine(store *results.Store, budget float64, now time.Time) (string, error) {
	spent, err := store.Spent(now)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("Spent today (%s UTC): %s", now.UTC().Format(time.DateOnly), consultation.FormatUSD(spent))
	if budget > 0 {
		resets := consultation.NextUTCDay(now)
		line += fmt.Sprintf(" of the daily budget %s; %s left until it resets at 00:00 UTC (in %s)",
			consultation.FormatUSD(budget), consultation.FormatUSD(max(budget-spent, 0)), consult.FormatDuration(resets.Sub(now).Truncate(time.Minute)))
	}
	return line + ".", nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// oneLine is the head of a query on one line.
func oneLine(q string) string {
	b := []rune(q)
	for i, r := range b {
		if r == '\n' || r == '\t' {
			b[i] = ' '
		}
	}
	if len(b) > consult.MaxProgressMessage/2 {
		b = append(b[:consult.MaxProgressMessage/2], '…')
	}
	return string(b)
}
