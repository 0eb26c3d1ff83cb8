package consultation

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/providers"
)

// This file is where outcomes become words. A call's control flow returns data (a Result:
// its Summary and, for what the Summary does not hold, its Facts); Render turns that into
// the text a person or an agent's model reads, in the vocabulary of whoever asked (the tool's
// argument names, or the command line's flags). A failure's words are its cause's, beside
// the cause's data (causes.go); an answer's, a dry run's and a report's are here.

// Attempt is one failed attempt of a model call: its error, how long it took, and the wait
// after it (0 for the last).
type Attempt struct {
	Err     string        `json:"error"`
	Elapsed time.Duration `json:"elapsed"`
	Wait    time.Duration `json:"wait,omitempty"`
}

// GaveUp is why a call made no more attempts: it made the most one call makes (Max), or
// too little time was Left (and the provider asked to wait RetryAfter).
type GaveUp struct {
	Attempts   int           `json:"attempts"`
	Max        bool          `json:"max,omitempty"`
	Left       time.Duration `json:"left,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
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

// sizeTips says how to make a request smaller: the largest directory to exclude, when there
// is one that is not everything, and a narrower pattern.
func sizeTips(rep *Report, n Names) string {
	var tips []string
	if len(rep.LargestDirs) > 0 {
		tips = append(tips, fmt.Sprintf("exclude the largest directories (e.g. %s %q)", n.of(ArgExclude), rep.LargestDirs[0].Path+"**"))
	}
	return strings.Join(append(tips, "narrow "+n.of(ArgPattern)+" to the files the question is about"), ", ")
}

// overCapCount counts the files a report left out for being over a size cap, with an example.
func overCapCount(rep *Report) (int, string) {
	over, example := 0, ""
	for _, sk := range rep.Skipped {
		switch sk.Reason {
		case files.TooLarge.String():
			over += sk.Count
			if len(sk.Examples) > 0 {
				example = sk.Examples[0]
			}
		case files.OverTotal.String():
			over += sk.Count
		}
	}
	return over, example
}

// words is why no more attempts were made.
func (g *GaveUp) words() string {
	if g.Max {
		return fmt.Sprintf("gave up after %d attempts, the most one call makes", g.Attempts)
	}
	why := fmt.Sprintf("gave up after %d %s: %s left before the deadline", g.Attempts, plural(g.Attempts, "attempt", "attempts"), consult.FormatDuration(g.Left))
	if g.RetryAfter > 0 {
		why += fmt.Sprintf(", and the provider asked to wait %s", consult.FormatDuration(g.RetryAfter))
	}
	return why + fmt.Sprintf("; another attempt needs at least %s", minAttemptTime)
}

// attemptsWords lists failed attempts, each once with its cause, how long it took and the
// wait after it; a cause that repeats an earlier attempt's is not written out again:
// "1) after 0.2 s: openrouter: rate limited (HTTP 429); waited 6.1 s".
func attemptsWords(failed []Attempt) string {
	var b strings.Builder
	seen := map[string]int{}
	for i, a := range failed {
		cause := a.Err
		if first, ok := seen[cause]; ok {
			cause = fmt.Sprintf("the same as %d)", first)
		} else {
			seen[cause] = i + 1
		}
		fmt.Fprintf(&b, "\n  %d) after %s: %s", i+1, consult.FormatDuration(a.Elapsed), cause)
		if a.Wait > 0 {
			fmt.Fprintf(&b, "; waited %s", consult.FormatDuration(a.Wait))
		}
	}
	return b.String()
}

// Text renders the report in the tool's vocabulary.
func (r *Report) Text() string {
	var b strings.Builder
	r.write(&b, ToolNames)
	return b.String()
}

func (r *Report) write(b *strings.Builder, n Names) {
	if r == nil {
		return
	}
	tokens := r.PromptTokens.String() + " tokens"
	switch {
	case !r.Counted && r.Tokens == 0:
		tokens = "tokens not counted yet"
	case !r.Counted:
		tokens = "at least " + tokens + " (counting did not finish)"
	}
	fmt.Fprintf(b, "Gathered %s %s from %s matching %q", consult.Thousands(int64(r.Files)), plural(r.Files, "file", "files"), consult.Printable(r.Path), r.Pattern)
	if r.Exclude != "" {
		fmt.Fprintf(b, " excluding %q", r.Exclude)
	}
	fmt.Fprintf(b, ": %s, %s with headers and query; token count %s.\n", r.Bytes, tokens, r.Counting)
	model := consult.Printable(r.Model)
	switch {
	case r.Refused:
		fmt.Fprintf(b, "Model %s: the provider refused this request as larger than its context window%s; by consult's count it is %s tokens (the provider counts with its own tokenizer).\n",
			model, windowNote(r.ContextWindow), r.PromptTokens)
	case r.ContextWindow > 0 && r.Fits != nil && *r.Fits:
		fmt.Fprintf(b, "Model %s: context window %s tokens; this request uses %s of it and fits with room for the answer.\n",
			model, r.ContextWindow, share(r.PromptTokens, r.ContextWindow))
	case r.ContextWindow > 0 && r.Fits != nil:
		fmt.Fprintf(b, "Model %s: context window %s tokens; this request needs %s plus about %s for the answer, so it does NOT fit.\n",
			model, r.ContextWindow, r.PromptTokens, r.Reserve)
	case r.Model != "":
		fmt.Fprintf(b, "Model %s: context window unknown, so whether the request fits cannot be checked.\n", model)
	}
	r.Cost.write(b)
	if len(r.LargestFiles) > 0 && r.Files > 1 {
		b.WriteString("Largest files:\n")
		for _, e := range r.LargestFiles {
			fmt.Fprintf(b, "  %10s tokens  %9s  %s\n", e.Tokens, e.Bytes, consult.Printable(e.Path))
		}
	}
	if len(r.LargestDirs) > 0 {
		b.WriteString("Largest directories:\n")
		for _, e := range r.LargestDirs {
			fmt.Fprintf(b, "  %10s tokens  %9s  %s (%s %s)\n", e.Tokens, e.Bytes, consult.Printable(e.Path), consult.Thousands(int64(e.Files)), plural(e.Files, "file", "files"))
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("Left out:\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(b, "  %s: %s", s.Reason, consult.Thousands(int64(s.Count)))
			for i, ex := range s.Examples {
				sep := ", "
				if i == 0 {
					sep = " (e.g. "
				}
				b.WriteString(sep + consult.Printable(ex))
			}
			if len(s.Examples) > 0 {
				b.WriteByte(')')
			}
			b.WriteByte('\n')
		}
	}
	writeSecrets(b, r.Withheld, r.Redacted)
	if r.Shrink != "" {
		fmt.Fprintf(b, "To fit, pass %s %q, or narrow %s to the directories the question is about.\n", n.of(ArgExclude), r.Shrink, n.of(ArgPattern))
	}
}

// secretsListed bounds the held-back and redacted files a text lists one by one; the
// structured report lists them all.
const secretsListed = 50

// writeSecrets lists the files held back as possible secrets and the files sent with secrets
// redacted, each with the reason: the user must be able to see what was not sent as it is.
func writeSecrets(b *strings.Builder, withheld []files.Withheld, redacted []files.Redacted) {
	writeListed(b, "Held back, may hold secrets", "withheld", len(withheld), func(i int) (string, string) {
		return withheld[i].Path, withheld[i].Why
	})
	writeListed(b, "Sent with secrets replaced by [REDACTED <kind>]", "redacted", len(redacted), func(i int) (string, string) {
		return redacted[i].Path, strings.Join(redacted[i].Kinds, ", ")
	})
}

// writeListed writes a titled list of n paths with their reasons, at most secretsListed of
// them; field names the structured report's list that holds them all.
func writeListed(b *strings.Builder, title, field string, n int, entry func(int) (path, why string)) {
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%s):\n", title, consult.Thousands(int64(n)))
	for i := range min(n, secretsListed) {
		p, why := entry(i)
		fmt.Fprintf(b, "  %s (%s)\n", consult.Printable(p), consult.Printable(why))
	}
	if n > secretsListed {
		fmt.Fprintf(b, "  … and %s more (all are listed in the structured report's %s)\n", consult.Thousands(int64(n-secretsListed)), field)
	}
}

// windowNote is " (N tokens)" for a known window, "" otherwise.
func windowNote(w consult.Tokens) string {
	if w <= 0 {
		return ""
	}
	return " (" + w.String() + " tokens)"
}

func percent(part, whole consult.Tokens) int64 {
	if whole <= 0 {
		return 0
	}
	return int64((part*100 + whole - 1) / whole)
}

// share is part's share of whole in words: "under 1%" below one percent, else the
// percentage rounded up ("12%").
func share(part, whole consult.Tokens) string {
	if part > 0 && part*100 < whole {
		return "under 1%"
	}
	return strconv.FormatInt(percent(part, whole), 10) + "%"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// String is the two figures for people: "expected $0.0040, at most $0.14 (prices:
// OpenRouter's model list)", "price unknown".
func (e *CostEstimate) String() string {
	if !e.Known() {
		return PriceUnknown
	}
	return fmt.Sprintf("expected %s, at most %s (prices: %s)", FormatUSD(deref(e.ExpectedUSD)), FormatUSD(*e.MaxUSD), e.Prices)
}

// figures are the two figures alone, for a progress report: "expected $0.0040, at most
// $0.14", "price unknown".
func (e *CostEstimate) figures() string {
	if !e.Known() {
		return PriceUnknown
	}
	return fmt.Sprintf("expected %s, at most %s", FormatUSD(deref(e.ExpectedUSD)), FormatUSD(*e.MaxUSD))
}

// capped says whether a cap set the output limit.
func (e *CostEstimate) capped() bool {
	return e != nil && (e.LimitedBy == LimitMaxCost || e.LimitedBy == LimitBudget)
}

// capAdvice says which cap set the output limit and what would lift it.
func (e *CostEstimate) capAdvice() string {
	capName := "max_cost_usd"
	if e.LimitedBy == LimitBudget {
		capName = "what was left of the server's daily budget (--budget-usd)"
	}
	s := fmt.Sprintf("consult set it to %s output tokens so that the call stays within %s (at most %s).", e.OutputLimit, capName, FormatUSD(deref(e.MaxUSD)))
	if e.FullUSD != nil {
		if e.LimitedBy == LimitBudget {
			s += fmt.Sprintf(" With %s of the budget left, the model could write its whole %s tokens; or make the request smaller.", FormatUSD(*e.FullUSD), e.FullLimit)
		} else {
			s += fmt.Sprintf(" Raise max_cost_usd for a longer answer (%s lets the model write its whole %s tokens), or make the request smaller.", FormatUSD(*e.FullUSD), e.FullLimit)
		}
	}
	return s
}

// leastAnswer is the least output a capped call is sent with, in words.
func (e *CostEstimate) leastAnswer() string {
	if e == nil {
		return MinAnswerTokens.String()
	}
	return min(MinAnswerTokens, e.OutputLimit).String()
}

// write writes the estimate lines of a report.
func (e *CostEstimate) write(b *strings.Builder) {
	if e == nil {
		return
	}
	if !e.Known() {
		b.WriteString("Price: unknown (no source gives this model's price; a prices file, --prices, can).\n")
		return
	}
	fmt.Fprintf(b, "Expected price: %s: %s prompt tokens", FormatUSD(deref(e.ExpectedUSD)), e.PromptTokens)
	if e.CachedTokens > 0 {
		fmt.Fprintf(b, " (%s expected from the provider's cache)", e.CachedTokens)
	}
	if e.PromptPerM != nil {
		fmt.Fprintf(b, " at $%s/M", perMillion(*e.PromptPerM))
	}
	fmt.Fprintf(b, " and a typical answer of %s tokens (%s)", e.ExpectedAnswer, cmp.Or(e.ExpectedFrom, "consult's default"))
	if e.AnswerPerM != nil {
		fmt.Fprintf(b, " at $%s/M", perMillion(*e.AnswerPerM))
	}
	if e.RequestUSD > 0 {
		fmt.Fprintf(b, ", plus %s a request", FormatUSD(e.RequestUSD))
	}
	fmt.Fprintf(b, "; prices: %s.\n", e.Prices)
	fmt.Fprintf(b, "At most: %s: the prompt as up to %s tokens and an output limit of %s tokens (%s), at the dearest rates.\n",
		FormatUSD(*e.MaxUSD), e.BoundTokens, e.OutputLimit, limitWhy(e.LimitedBy))
}

// limitWhy says what set an output limit.
func limitWhy(by string) string {
	switch by {
	case LimitWindow:
		return "the room left in the context window"
	case LimitMaxCost:
		return "sized to max_cost_usd"
	case LimitBudget:
		return "sized to what is left of the daily budget"
	}
	return "the model's largest output"
}

// deref is *p, or 0 for nil.
func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// perMillion writes a price per million tokens without trailing zeros: "1.25", "0.075".
func perMillion(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" {
		return "0"
	}
	return s
}

// FormatUSD writes a price in dollars: cents for a dollar or more, and two significant
// digits below ("$0.0000058"), never "$0.0000" for a cost that is not zero.
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	digits := int(-math.Floor(math.Log10(v))) + 1 // two significant digits
	return "$" + strconv.FormatFloat(v, 'f', min(digits, 12), 64)
}

// tokensWord is "1 reasoning token", "1,200 reasoning tokens".
func tokensWord(n consult.Tokens, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return n.String() + " " + one + "s"
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
