package consultation

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// This file is where outcomes become words. A call's control flow returns data (a Result:
// its Summary and, for what the Summary does not hold, its Facts); Render turns that into
// the text a person or an agent's model reads, in the vocabulary of whoever asked (the tool's
// argument names, or the command line's flags). A failure's words are its cause's, beside
// the cause's data (causes.go), and a report's and a price's beside theirs (report.go,
// estimate.go); a result's, an answer's and a dry run's are here.

// Result is what a call returns to the caller, as data: the figures for programs, what its
// words need beyond them, and whether it is a failure. Render words it at the edge.
type Result struct {
	// IsError marks a failed call: bad arguments, timeout, too large, upstream failure.
	IsError bool
	// Summary is the outcome in machine-readable form: kind, id, answer, usage, report,
	// error details. Nil for a plain acknowledgement.
	Summary *Summary
	// Facts are what the outcome's words need beyond the Summary: why it failed, and the
	// figures of that failure.
	Facts *Facts `json:",omitempty"`
	// Answer is the model's answer as received, whole or partial, even when it was written
	// to output_file: what a background consultation keeps in its record.
	Answer string `json:"-"`
	// Digests are the SHA-256 digests (hex) of the gathered files as sent, by path: a
	// follow-up compares them to name the files that changed.
	Digests map[string]string `json:"-"`
}

// Text is Render's text in the tool's vocabulary.
func (r Result) Text() string {
	text, _ := Render(r, ToolNames)
	return text
}

// Render words r for whoever asked, in n's vocabulary: the text, and the Summary with its
// Message (the text without any partial answer, for every kind but answer and dry run)
// filled in. A result without a Summary gets none.
func Render(r Result, n Names) (string, *Summary) {
	var f Facts
	if r.Facts != nil {
		f = *r.Facts
	}
	said, isSaid := f.Cause.(said)
	if r.Summary == nil {
		return said.Detail, nil
	}
	sum := r.Summary
	out := *sum
	out.Warnings = printables(sum.Warnings) // they may quote a file name or a provider's words
	var b strings.Builder
	b.WriteString(f.Lead)
	switch {
	case f.Cause != nil:
		f.Cause.write(&b, sum, n)
	case sum.Kind == KindAnswer:
		writeAnswer(&b, sum, f)
	case sum.Kind == KindDryRun:
		b.WriteString("Dry run (nothing sent to a model).\n")
		sum.Report.write(&b, n)
		out.Message = dryRunWords(sum)
	default:
		b.WriteString(cmp.Or(errorOf(sum).Message, "The consultation failed."))
	}
	if isSaid || sum.Kind != KindAnswer && sum.Kind != KindDryRun {
		out.Message = structuredMessage(b.String(), &out, n)
		if out.Error != nil {
			// The failure in one line is error.message; message goes on from there (what
			// caused it and what to do), so the structured result says each thing once.
			info := *out.Error
			first, rest, _ := strings.Cut(out.Message, "\n")
			info.Message, out.Message = first, strings.TrimLeft(rest, "\n")
			out.Error = &info
		}
		if out.Answer != "" && f.PartialWhy != "" {
			if !strings.HasSuffix(b.String(), "\n") {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "\nPartial answer (%s):\n%s", f.PartialWhy, out.Answer)
			out.Truncated = true
			out.Message += fmt.Sprintf("\nanswer holds a partial answer, %s.", f.PartialWhy)
		}
	}
	if out.Report != nil && out.Report.Cost != nil {
		out.Estimate = nil // report holds it
	}
	if sum.Page != nil && sum.Page.Offset > 0 {
		// A later page is the page and the way to the next: the call's figures and notes
		// came with the first.
		return b.String(), &Summary{Kind: out.Kind, ID: out.ID, Answer: out.Answer, Page: out.Page, Next: out.Next}
	}
	if sum.Page == nil || sum.Page.Offset == 0 {
		for _, w := range out.Warnings {
			b.WriteString("\n\nWarning: " + w)
		}
		if sum.Kind == KindAnswer && sum.ID != "" && !isSaid {
			fmt.Fprintf(&b, "\n\nid %s: pass it as follow_up_of to ask more about these files.", sum.ID)
		}
	}
	return b.String(), &out
}

// structuredMessage is the structured result's message from the text: the figures of the
// report, which the structured result holds as report, are not said again in words.
func structuredMessage(text string, out *Summary, n Names) string {
	msg := text
	if out.Report != nil {
		var rb strings.Builder
		out.Report.write(&rb, n)
		if rt := rb.String(); rt != "" {
			msg = strings.Replace(msg, rt, "(the figures are in report)\n", 1)
		}
	}
	if out.Answer != "" {
		msg = strings.Replace(msg, "\n\nAnswer:\n"+out.Answer, "\n\nThe answer is in answer.", 1)
	}
	return strings.TrimRight(msg, "\n")
}

// dryRunWords is a dry run's structured message: what it is and its figures in one line.
func dryRunWords(sum *Summary) string {
	rep := sum.Report
	if rep == nil {
		return "Dry run: nothing was sent to a model."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Dry run, nothing sent to a model: %s %s, %s, %s prompt tokens", consult.Thousands(int64(rep.Files)), plural(rep.Files, "file", "files"), rep.Bytes, rep.PromptTokens)
	model := consult.Printable(rep.Model)
	switch {
	case rep.ContextWindow > 0 && rep.Fits != nil && *rep.Fits:
		fmt.Fprintf(&b, "; fits %s's context window (uses %s of %s tokens)", model, share(rep.PromptTokens, rep.ContextWindow), rep.ContextWindow)
	case rep.ContextWindow > 0 && rep.Fits != nil:
		fmt.Fprintf(&b, "; does NOT fit %s's context window of %s tokens with room for the answer", model, rep.ContextWindow)
	case rep.Model != "":
		fmt.Fprintf(&b, "; %s's context window is unknown", model)
	}
	if e := rep.Cost; e.Known() {
		fmt.Fprintf(&b, "; price expected %s, at most %s", FormatUSD(deref(e.ExpectedUSD)), FormatUSD(*e.MaxUSD))
	} else {
		b.WriteString("; price unknown")
	}
	b.WriteString(".")
	return b.String()
}

// writeAnswer writes an answer (or the page of one it holds, or where it was written), the
// notes on how it ended, and the footer; a later page is the page alone.
func writeAnswer(b *strings.Builder, sum *Summary, f Facts) {
	switch {
	case sum.OutputFile != "":
		fmt.Fprintf(b, "Answer written to %s (%s).", consult.Printable(sum.OutputFile), f.Written)
		if f.Requested != "" {
			fmt.Fprintf(b, " %s already existed, so a new name was chosen.", consult.Printable(f.Requested))
		}
	default:
		b.WriteString(sum.Answer)
	}
	if p := sum.Page; p != nil {
		end := p.Offset + len(sum.Answer)
		switch {
		case p.NextOffset > 0:
			fmt.Fprintf(b, "\n\n[Bytes %d-%d of a %d-byte answer. The rest: consultation_result {\"id\": %q, \"offset\": %d}.]", p.Offset, end, p.TotalChars, sum.ID, p.NextOffset)
		case p.Offset > 0:
			fmt.Fprintf(b, "\n\n[Bytes %d-%d: the end of the %d-byte answer.]", p.Offset, end, p.TotalChars)
		}
		if p.Offset > 0 {
			return
		}
	}
	switch sum.TruncatedBy {
	case TruncatedByAnswerCap:
		fmt.Fprintf(b, "\n\n[The answer was cut at %d MiB, the most consult keeps of one answer; the rest was not read.]",
			providers.MaxAnswerBytes>>20)
	case TruncatedByOutputLimit:
		b.WriteString("\n\n[The answer was cut off by the model's output limit.]")
	case TruncatedByCostCap:
		fmt.Fprintf(b, "\n\n[The answer was cut off at its output limit. %s]", sum.Estimate.capAdvice())
	}
	if f.UnknownStop {
		fmt.Fprintf(b, "\n\n[The model stopped for a reason consult does not know: %s. The answer may be incomplete.]", consult.Printable(cmp.Or(sum.StopReason, "none given")))
	}
	b.WriteString("\n\n" + footer(sum))
}

// footer is a summary's figures in one short block.
func footer(s *Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nmodel %s · %s %s, %s", consult.Printable(s.Model), consult.Thousands(int64(s.Files)), plural(s.Files, "file", "files"), s.Bytes)
	if u := s.Usage; u != nil {
		fmt.Fprintf(&b, " · tokens %s in", u.Input)
		switch {
		case u.Cached > 0 && u.CacheSavedUSD != nil && *u.CacheSavedUSD > 0:
			fmt.Fprintf(&b, " (%s cached, saving %s)", u.Cached, FormatUSD(*u.CacheSavedUSD))
		case u.Cached > 0:
			fmt.Fprintf(&b, " (%s cached)", u.Cached)
		}
		if u.CacheWrite > 0 {
			fmt.Fprintf(&b, " (%s written to the cache)", u.CacheWrite)
		}
		fmt.Fprintf(&b, ", %s out", u.Output)
		if u.Reasoning > 0 {
			fmt.Fprintf(&b, ", %s reasoning", u.Reasoning)
		}
		if u.CostUSD != nil {
			b.WriteString(" · " + FormatUSD(*u.CostUSD))
			if u.CostFromPrices {
				b.WriteString(" at list prices")
			}
		}
	}
	if e := s.Estimate; e.Known() {
		fmt.Fprintf(&b, " (expected %s, at most %s)", FormatUSD(deref(e.ExpectedUSD)), FormatUSD(*e.MaxUSD))
	}
	fmt.Fprintf(&b, " · %.1f s · %d %s", s.ElapsedSeconds, s.Attempts, plural(s.Attempts, "attempt", "attempts"))
	if len(s.Withheld) > 0 || len(s.Redacted) > 0 {
		b.WriteByte('\n')
		writeSecrets(&b, s.Withheld, s.Redacted)
	}
	return strings.TrimRight(b.String(), "\n")
}

// FailureOf is the error result for err alone (an argument refused, a store that failed).
func FailureOf(err error) Result {
	info := errorInfo(err)
	s := said{Detail: err.Error()}
	if ae := (*consult.ArgError)(nil); errors.As(err, &ae) {
		s.Refused = ae
	}
	return Result{IsError: true, Summary: &Summary{Kind: KindError, Error: &info}, Facts: &Facts{Cause: s}}
}

// Failure is an error result of a class, worded where it arose, with no report: the Summary
// holds only the error. A call that failed for want of time or capacity may succeed when
// made again.
func Failure(class ErrorClass, text string) Result {
	info := ErrorInfo{Class: class, Message: firstLine(text), Retryable: retryableClass[class]}
	return Result{IsError: true, Summary: &Summary{Kind: KindError, Error: &info}, Facts: &Facts{Cause: said{Detail: text}}}
}

// Said is a result of the given kind worded where it arose (a background consultation's
// state, a listing): text is its message.
func Said(sum *Summary, text string) Result {
	return Result{Summary: sum, Facts: &Facts{Cause: said{Detail: text}}}
}

// printables is ss with each string escaped by consult.Printable; ss itself when none needs it.
func printables(ss []string) []string {
	for i, s := range ss {
		if consult.Printable(s) != s {
			out := slices.Clone(ss)
			for k := i; k < len(out); k++ {
				out[k] = consult.Printable(out[k])
			}
			return out
		}
	}
	return ss
}
