package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
)

// runResults is `consult results [ID] [--json] [--cancel ID] [--results-dir DIR]`: the
// saved background consultations for a person, without an agent. It shows every owner's:
// whoever can read the results directory owns them. Everything it prints from a record
// (questions, answers, models, errors) is escaped for the terminal, as in MCP results: a
// record holds what a model and a user's files said, and an escape sequence in it must not
// drive the terminal (OSC 52 writes the clipboard) or a bidi control reorder the text.
func runResults(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	err := resultsCommand(ctx, args, getenv, stdout, stderr)
	var code exitCode
	if err == nil || errors.As(err, &code) || helpAsked(err) {
		return err
	}
	return printableError{err}
}

// printableError is an error whose text is escaped for the terminal.
type printableError struct{ err error }

func (e printableError) Error() string { return consult.Printable(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }

// resultsCommand is runResults before its errors are escaped.
func resultsCommand(_ context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consult results", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir, budget := defaultResultsDir(getenv), 0.0
	if err := bind(fs, getenv, []setting{
		{"results-dir", "the results directory", &dir},
		{"budget-usd", "the servers' daily budget, to show what is left of it", newValue(&budget, parseDollars)},
	}); err != nil {
		fmt.Fprintf(stderr, "consult results: %v\n", err)
		return exitCode(2)
	}
	asJSON := fs.Bool("json", false, "print records as JSON")
	cancel := fs.String("cancel", "", "stop the consultation with this id")
	quietUsage(fs, stderr, "consult results")
	positional, err := parseInterspersed(fs, args)
	if helpAsked(err) {
		return showHelp(fs, resultsHelp, stdout)
	}
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
		fmt.Fprintln(stdout, terminalText(msg))
		return nil
	case len(positional) == 1:
		rec, err := jobs.Lookup(positional[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, rec)
		}
		fmt.Fprintln(stdout, terminalText(jobs.Describe(rec)))
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
		// NobodyWaits marks a consultation whose client stopped waiting without asking for a
		// stop, not yet named to its owner.
		NobodyWaits bool `json:"nobody_waits,omitempty"`
	}
	entries := make([]entry, len(recs))
	for i, r := range recs {
		entries[i] = entry{r, jobs.State(r), jobs.Store().IsOrphan(r.ID)}
		if entries[i].NobodyWaits {
			entries[i].State += ", nobody waits"
		}
	}
	if *asJSON {
		return printJSON(stdout, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintf(stdout, "No consultations in %s.\n", consult.Printable(dir))
	}
	for _, e := range entries {
		fmt.Fprintf(stdout, "%s  %-24s  %12s ago  %s  %s\n", e.ID, consult.Printable(e.State), consult.FormatDuration(time.Since(e.Created)),
			consult.Printable(e.Model), consult.Printable(oneLine(e.Query)))
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
	spent, held, err := store.Spent(now)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("Spent today (%s UTC): %s", now.UTC().Format(time.DateOnly), consultation.FormatUSD(spent))
	if held > 0 {
		line += fmt.Sprintf(", and %s held by calls in flight (the most they can cost)", consultation.FormatUSD(held))
	}
	if budget > 0 {
		resets := consultation.NextUTCDay(now)
		line += fmt.Sprintf("; daily budget %s, %s left until it resets at 00:00 UTC (in %s)",
			consultation.FormatUSD(budget), consultation.FormatUSD(max(budget-spent-held, 0)), consult.FormatDuration(resets.Sub(now).Truncate(time.Minute)))
	}
	return line + ".", nil
}

// printJSON prints v as indented JSON whose strings are escaped for the terminal: the
// encoder escapes C0 controls, and terminalJSON the rest of what consult.Printable escapes.
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(terminalJSON(buf.Bytes()))
	return err
}

// terminalJSON rewrites, as \uXXXX escapes, the characters of encoded JSON that a terminal
// may act on and the encoder leaves raw (DEL, C1 controls such as U+009B CSI, bidi
// controls): the same JSON value, safe to print. Outside strings, JSON holds only ASCII
// that needs no escape, so every such character is inside a string.
func terminalJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r >= 0x80 || r == 0x7f {
			if c := string(b[:size]); consult.Printable(c) != c {
				out = fmt.Appendf(out, `\u%04x`, r)
				b = b[size:]
				continue
			}
		}
		out = append(out, b[:size]...)
		b = b[size:]
	}
	return out
}

// terminalText is s escaped for the terminal with consult.Printable, line by line, keeping
// its newlines and tabs (an answer's layout) as they are; a carriage return before a
// newline goes with it.
func terminalText(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		cells := strings.Split(line, "\t")
		for j, c := range cells {
			cells[j] = consult.Printable(c)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
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
