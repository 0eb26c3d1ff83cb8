package consultation

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// This file is why a call ended without an answer: one small type per cause, holding what
// its words need, with its words beside it. A Result carries its cause in its Facts, and
// Facts travel with the Result into a background consultation's record as one flat JSON
// object: {"reason": the cause's name, its fields, the notes}.

// A Cause is why a call failed (or, for said, a result worded where it arose).
type Cause interface {
	// reason names the cause in records.
	reason() Reason
	// write words the outcome and what to do about it, in n's vocabulary, from the call's
	// summary.
	write(b *strings.Builder, sum *Summary, n Names)
}

// Reason names a cause in records ("gather_failed", "timeout").
type Reason string

// Facts are what an outcome's words need beyond its Summary: its cause, and notes on how it
// ended. They travel with the Result (to a background consultation's record too), so that
// the words are made only at the edge.
type Facts struct {
	// Cause is why the call failed; nil for an answer or a dry run.
	Cause Cause `json:"-"`
	// Lead is said before the outcome (e.g. that a consultation was cancelled).
	Lead string `json:"lead,omitempty"`
	// PartialWhy says why a partial answer was cut.
	PartialWhy string `json:"partial_why,omitempty"`
	// UnknownStop says the model stopped for a reason consult does not know.
	UnknownStop bool `json:"unknown_stop,omitempty"`
	// Requested is the output_file asked for, when the answer was written under another
	// name; Written the size written.
	Requested string        `json:"requested,omitempty"`
	Written   consult.Bytes `json:"written,omitempty"`
}

// NothingGathered says the call stopped before any file was gathered.
func (f *Facts) NothingGathered() bool {
	switch c := f.Cause.(type) {
	case idleTimeout:
		return c.NothingGathered
	case timedOut:
		return c.NothingGathered
	case stoppedBy:
		return c.NothingGathered
	}
	return false
}

// MarshalJSON writes the facts as one object: the cause's reason and fields, then the notes.
func (f Facts) MarshalJSON() ([]byte, error) {
	type notes Facts
	out, err := json.Marshal(notes(f))
	if err != nil || f.Cause == nil {
		return out, err
	}
	cause, err := json.Marshal(f.Cause)
	if err != nil {
		return nil, err
	}
	reason, _ := json.Marshal(f.Cause.reason())
	return joinObjects([]byte(`{"reason":`+string(reason)+`}`), cause, out), nil
}

// UnmarshalJSON reads what MarshalJSON writes. A reason this consult does not know (a newer
// one's) is read as said: its detail, when it has one, is the message.
func (f *Facts) UnmarshalJSON(data []byte) error {
	type notes Facts
	var n notes
	var r struct {
		Reason Reason `json:"reason"`
	}
	if err := json.Unmarshal(data, &n); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	*f = Facts(n)
	if r.Reason == "" {
		return nil
	}
	decode, ok := causes[r.Reason]
	if !ok {
		decode = causes[said{}.reason()]
	}
	c, err := decode(data)
	f.Cause = c
	return err
}

// joinObjects is one JSON object with the members of objs (objects without common names).
func joinObjects(objs ...[]byte) []byte {
	b := []byte{'{'}
	for _, o := range objs {
		inner := bytes.TrimSpace(o[1 : len(o)-1])
		if len(inner) == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, inner...)
	}
	return append(b, '}')
}

// causes decodes each cause from its record's JSON, by reason.
var causes = map[Reason]func([]byte) (Cause, error){}

func init() {
	register[said]()
	register[gatherFailed]()
	register[overInflight]()
	register[countFailed]()
	register[overCap]()
	register[noMatch]()
	register[modelUnavailable]()
	register[noProvider]()
	register[noModel]()
	register[tooLarge]()
	register[capUnpriced]()
	register[badPrice]()
	register[overMaxCost]()
	register[ledgerUnreadable]()
	register[budgetUnpriced]()
	register[overBudget]()
	register[noMoreAttempts]()
	register[contextLength]()
	register[outputLimit]()
	register[filtered]()
	register[dailyQuota]()
	register[authRejected]()
	register[upstreamFailed]()
	register[refusal]()
	register[answerFiltered]()
	register[noAnswer]()
	register[writeFailed]()
	register[idleTimeout]()
	register[timedOut]()
	register[stoppedBy]()
	register[cancelled]()
}

// register adds cause type C to causes.
func register[C Cause]() {
	var zero C
	causes[zero.reason()] = func(data []byte) (Cause, error) {
		var c C
		err := json.Unmarshal(data, &c)
		return c, err
	}
}

// said is an outcome worded where it arose (a background consultation's state, a listing),
// or an argument refused, worded from its fields in the caller's names for it.
type said struct {
	Detail  string            `json:"detail,omitempty"` // kept with Refused for records read by an older consult
	Refused *consult.ArgError `json:"refused,omitempty"`
}

func (said) reason() Reason { return "said" }

func (c said) write(b *strings.Builder, _ *Summary, n Names) {
	if c.Refused != nil {
		b.WriteString(c.Refused.Named(n.of(c.Refused.Arg)))
		return
	}
	b.WriteString(c.Detail)
}

// gatherFailed: the files could not be gathered.
type gatherFailed struct {
	Path   string `json:"path,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func (gatherFailed) reason() Reason { return "gather_failed" }

func (c gatherFailed) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "Could not gather files from %s: %s", c.Path, c.Detail)
}

// overInflight: what was gathered needs more memory in flight (Need) than the server's
// whole bound (Limit).
type overInflight struct {
	Need  consult.Bytes `json:"need,omitempty"`
	Limit consult.Bytes `json:"limit,omitempty"`
}

func (overInflight) reason() Reason { return "over_inflight" }

func (c overInflight) write(b *strings.Builder, sum *Summary, n Names) {
	fmt.Fprintf(b, "This request gathered %s, which takes about %s of memory while in flight: more than the server's whole bound on bytes in flight (--max-inflight %s), so it could never run. Narrow %s or exclude files to gather less than %s, or raise --max-inflight where the server is started. Collected: ",
		sum.Report.Bytes, c.Need, c.Limit, n.of(ArgPattern), c.Limit/memoryPerByte)
	sum.Report.write(b, n)
}

// countFailed: the tokens could not be counted.
type countFailed struct {
	Detail string `json:"detail,omitempty"`
}

func (countFailed) reason() Reason { return "count_failed" }

func (c countFailed) write(b *strings.Builder, _ *Summary, _ Names) {
	b.WriteString("Could not count tokens: " + c.Detail)
}

// overCap: files matched, but each was over a size cap (the report's skipped files).
type overCap struct{}

func (overCap) reason() Reason { return "over_cap" }

func (overCap) write(b *strings.Builder, sum *Summary, n Names) {
	over, example := overCapCount(sum.Report)
	fmt.Fprintf(b, "Files matched, but none could be sent: %s %s over the per-file cap of %s (e.g. %s), which no option raises: such files are generated code, data or bundles. Narrow %s to the source files the question is about.\n",
		consult.Thousands(int64(over)), plural(over, "was", "were"), consult.MaxFileBytes, consult.Printable(example), n.of(ArgPattern))
	sum.Report.write(b, n)
}

// noMatch: no file matched the pattern.
type noMatch struct{}

func (noMatch) reason() Reason { return "no_match" }

func (noMatch) write(b *strings.Builder, sum *Summary, n Names) {
	rep := sum.Report
	b.WriteString("No files matched. ")
	rep.write(b, n)
	fmt.Fprintf(b, "Check that %s %q is relative to %s (e.g. \"**/*.go\" for every Go file, \"src/**/*.{ts,tsx}\"), and that the files are not listed in .gitignore.", n.of(ArgPattern), rep.Pattern, n.of(ArgPath))
}

// modelUnavailable: no source knows the model.
type modelUnavailable struct {
	Detail string `json:"detail,omitempty"`
}

func (modelUnavailable) reason() Reason { return "model_unavailable" }

func (c modelUnavailable) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "Not sent: %s. Check the model id (the provider's own name for it, e.g. \"google/gemini-3.5-flash\" on OpenRouter); a model no source knows can be given in a prices file (--prices) where the server is started.", c.Detail)
}

// noProvider: the server has no model provider (Detail: why, e.g. no key).
type noProvider struct {
	Detail string `json:"detail,omitempty"`
}

func (noProvider) reason() Reason { return "no_provider" }

func (c noProvider) write(b *strings.Builder, sum *Summary, n Names) {
	b.WriteString(cmp.Or(c.Detail, "no model provider is configured") + "\nDry runs (dry_run: true) work without one.\n")
	sum.Report.write(b, n)
}

// noModel: no model was named, and the server has no default.
type noModel struct{}

func (noModel) reason() Reason { return "no_model" }

func (noModel) write(b *strings.Builder, _ *Summary, _ Names) {
	b.WriteString("No model named: pass model, or start the server with --model.")
}

// tooLarge: by consult's count the request does not fit the model's window.
type tooLarge struct{}

func (tooLarge) reason() Reason { return "too_large" }

func (tooLarge) write(b *strings.Builder, sum *Summary, n Names) {
	fmt.Fprintf(b, "Not sent: the request is too large for %s.\n", sum.Model)
	sum.Report.write(b, n)
}

// capUnpriced: max_cost_usd cannot be checked, for no source gives the model's price.
type capUnpriced struct{}

func (capUnpriced) reason() Reason { return "cap_unpriced" }

func (capUnpriced) write(b *strings.Builder, sum *Summary, n Names) {
	fmt.Fprintf(b, "Not sent: max_cost_usd is %s, but no source gives the price of %s, so the cap cannot be checked. Use a model whose price is known, give its prices in a prices file (--prices) where the server is started, or leave out max_cost_usd.\n",
		FormatUSD(errorOf(sum).MaxCostUSD), consult.Printable(sum.Model))
	sum.Report.write(b, n)
}

// badPrice: a cap cannot be checked because the model's prices are bad data.
type badPrice struct {
	Detail string `json:"detail,omitempty"`
}

func (badPrice) reason() Reason { return "bad_price" }

func (c badPrice) write(b *strings.Builder, sum *Summary, n Names) {
	fmt.Fprintf(b, "Not sent: the prices listed for %s are not prices (%s), so no cap can be checked with them and none is trusted. Use another model, or leave out the cap.\n", consult.Printable(sum.Model), c.Detail)
	sum.Report.write(b, n)
}

// overMaxCost: max_cost_usd cannot pay for the prompt and the shortest useful answer.
type overMaxCost struct{}

func (overMaxCost) reason() Reason { return "over_max_cost" }

func (overMaxCost) write(b *strings.Builder, sum *Summary, n Names) {
	info, est := errorOf(sum), sum.Estimate
	fmt.Fprintf(b, "Not sent: max_cost_usd %s cannot pay for this request. Its prompt and the shortest useful answer (%s output tokens) can cost up to %s (%s).\n",
		FormatUSD(info.MaxCostUSD), est.leastAnswer(), FormatUSD(deref(info.NeedsUSD)), est.Prices)
	fmt.Fprintf(b, "A max_cost_usd of %s or more would admit it", FormatUSD(deref(info.NeedsUSD)))
	if est.MaxUSD != nil {
		fmt.Fprintf(b, " (%s lets the model write its whole %s output tokens)", FormatUSD(*est.MaxUSD), est.OutputLimit)
	}
	fmt.Fprintf(b, ". Or make the prompt smaller: narrow %s or exclude files (the largest are listed below); or use a cheaper model.\n", n.of(ArgPattern))
	sum.Report.write(b, n)
}

// ledgerUnreadable: the daily budget's spend cannot be read.
type ledgerUnreadable struct {
	Detail string `json:"detail,omitempty"`
}

func (ledgerUnreadable) reason() Reason { return "ledger_unreadable" }

func (c ledgerUnreadable) write(b *strings.Builder, sum *Summary, _ Names) {
	fmt.Fprintf(b, "Not sent: the server has a daily budget of %s (--budget-usd), but its spend ledger cannot be used, so the budget cannot be kept: %s. Fix the results directory (or remove --budget-usd) where the server is started.", FormatUSD(errorOf(sum).BudgetUSD), c.Detail)
}

// budgetUnpriced: the daily budget cannot count the request, for no source gives the
// model's price.
type budgetUnpriced struct{}

func (budgetUnpriced) reason() Reason { return "budget_unpriced" }

func (budgetUnpriced) write(b *strings.Builder, sum *Summary, n Names) {
	info := errorOf(sum)
	resets, until := budgetReset(info)
	fmt.Fprintf(b, "Not sent: the server has a daily budget of %s (--budget-usd), and no source gives the price of %s, so it cannot be counted. Use a model whose price is known, or give its prices in a prices file (--prices). %s of the budget is left until it resets at %s (in %s).\n",
		FormatUSD(info.BudgetUSD), consult.Printable(sum.Model), FormatUSD(deref(info.BudgetLeftUSD)), resets, until)
	sum.Report.write(b, n)
}

// overBudget: the daily budget has too little left (Spent: today's spend).
type overBudget struct {
	Spent float64 `json:"spent,omitempty"`
}

func (overBudget) reason() Reason { return "over_budget" }

func (c overBudget) write(b *strings.Builder, sum *Summary, n Names) {
	info, est := errorOf(sum), sum.Estimate
	resets, until := budgetReset(info)
	fmt.Fprintf(b, "Not sent: the %s left of the server's daily budget of %s (--budget-usd; %s spent today) cannot pay for this request: its prompt and the shortest useful answer (%s output tokens) can cost up to %s (%s). It would be admitted with %s left; the budget resets at %s (in %s). Make the request smaller or cheaper, or wait.\n",
		FormatUSD(deref(info.BudgetLeftUSD)), FormatUSD(info.BudgetUSD), FormatUSD(c.Spent), est.leastAnswer(), FormatUSD(deref(info.NeedsUSD)), est.Prices,
		FormatUSD(deref(info.NeedsUSD)), resets, until)
	sum.Report.write(b, n)
}

// errorOf is the summary's error, or none.
func errorOf(sum *Summary) ErrorInfo {
	if sum.Error == nil {
		return ErrorInfo{}
	}
	return *sum.Error
}

// budgetReset is when the daily budget resets, and how long until then, in words.
func budgetReset(info ErrorInfo) (at, in string) {
	return info.ResetsAt.Format("15:04 UTC"), consult.FormatDuration(max(time.Until(info.ResetsAt), 0).Truncate(time.Minute))
}

// noMoreAttempts: attempts failed and no more could be made.
type noMoreAttempts struct {
	Phase   string        `json:"phase,omitempty"`
	Elapsed time.Duration `json:"elapsed,omitempty"`
	GaveUp  *GaveUp       `json:"gave_up,omitempty"`
	Failed  []Attempt     `json:"failed,omitempty"`
}

func (noMoreAttempts) reason() Reason { return "gave_up" }

func (c noMoreAttempts) write(b *strings.Builder, _ *Summary, _ Names) {
	why := "gave up"
	if c.GaveUp != nil {
		why = c.GaveUp.words()
	}
	fmt.Fprintf(b, "The model call failed while %s: %s, %s in all. Attempts:%s", c.Phase, why, consult.FormatDuration(c.Elapsed), attemptsWords(c.Failed))
}

// contextLength: the provider refused the request as too large (Overflow: its own count).
type contextLength struct {
	Detail   string              `json:"detail,omitempty"`
	Overflow *providers.Overflow `json:"overflow,omitempty"`
}

func (contextLength) reason() Reason { return "context_length" }

func (c contextLength) write(b *strings.Builder, sum *Summary, n Names) {
	rep := sum.Report
	window, count := "window unknown", rep.PromptTokens.String()+" tokens by consult's count"
	of := c.Overflow
	switch {
	case of != nil && of.Window > 0:
		window = "the provider's window " + of.Window.String()
	case rep.ContextWindow > 0:
		window = "window " + rep.ContextWindow.String()
	}
	if of != nil && of.Prompt > 0 {
		count = of.Prompt.String() + " tokens by the provider's count"
	}
	fmt.Fprintf(b, "Too large for %s (%s, %s): the provider refused it (%s). More time will not help.\n", consult.Printable(sum.Model), count, window, c.Detail)
	rep.write(b, n)
	if of.ReservationTipped() {
		fmt.Fprintf(b, "The prompt alone fits; the %s tokens reserved for the answer pushed it over: use a model with a larger window, or a smaller thinking budget (model %q).\n", of.Completion, sum.Model+"|thinking=4000")
	} else {
		fmt.Fprintf(b, "Make it smaller: %s; or use a model with a larger context window.\n", sizeTips(rep, n))
	}
}

// outputLimit: the model reached its output limit mid-answer.
type outputLimit struct {
	Detail string `json:"detail,omitempty"`
}

func (outputLimit) reason() Reason { return "output_limit" }

func (c outputLimit) write(b *strings.Builder, sum *Summary, _ Names) {
	fmt.Fprintf(b, "The model reached its output limit before it finished (%s).\n", c.Detail)
	writeLimitAdvice(b, sum)
}

// writeLimitAdvice says what to do about an output limit reached: the cap that set it, if
// one did, and a smaller reasoning budget.
func writeLimitAdvice(b *strings.Builder, sum *Summary) {
	if e := sum.Estimate; e.capped() {
		fmt.Fprintf(b, "%s\n", e.capAdvice())
	}
	fmt.Fprintf(b, "With a thinking model, give it a smaller reasoning budget (model %q) or ask a narrower question.", sum.Model+"|thinking=8000")
}

// filtered: the provider's content filter refused the request.
type filtered struct {
	Detail string `json:"detail,omitempty"`
}

func (filtered) reason() Reason { return "content_filtered" }

func (c filtered) write(b *strings.Builder, _ *Summary, n Names) {
	fmt.Fprintf(b, "The provider's content filter stopped the request (%s).\nLeave out the files that may set it off (%s), rephrase the question, or try another model.", c.Detail, n.of(ArgExclude))
}

// dailyQuota: the key's daily quota is spent.
type dailyQuota struct {
	Detail string `json:"detail,omitempty"`
}

func (dailyQuota) reason() Reason { return "daily_quota" }

func (c dailyQuota) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "The model call failed: %s\nRetrying today will not help: use another model, or a key on a paid tier.", c.Detail)
}

// authRejected: the provider rejected the key (its HTTP status, its words, and where the
// server's key comes from).
type authRejected struct {
	Provider string `json:"provider,omitempty"`
	Status   int    `json:"status,omitempty"`
	Detail   string `json:"detail,omitempty"`
	KeyHint  string `json:"key_hint,omitempty"`
}

func (authRejected) reason() Reason { return "auth" }

func (c authRejected) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "The provider rejected the API key (%s, HTTP %d): %s\nCheck the key the server was started with (%s).",
		c.Provider, c.Status, consult.Printable(c.Detail), c.KeyHint)
}

// upstreamFailed: the model call failed otherwise.
type upstreamFailed struct {
	Phase  string    `json:"phase,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Failed []Attempt `json:"failed,omitempty"`
}

func (upstreamFailed) reason() Reason { return "upstream" }

func (c upstreamFailed) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "The model call failed while %s: %s", c.Phase, c.Detail)
	if len(c.Failed) > 0 {
		fmt.Fprintf(b, "\nEarlier attempts:%s", attemptsWords(c.Failed))
	}
}

// refusal: the model refused to answer.
type refusal struct {
	Refusal string `json:"refusal,omitempty"`
}

func (refusal) reason() Reason { return "refusal" }

func (c refusal) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "The model refused to answer: %q\nRephrase the question, or try another model.", consult.Printable(c.Refusal))
}

// answerFiltered: a content filter stopped the answer (StopDetail: the provider's detail).
type answerFiltered struct {
	StopDetail string `json:"stop_detail,omitempty"`
}

func (answerFiltered) reason() Reason { return "answer_filtered" }

func (c answerFiltered) write(b *strings.Builder, sum *Summary, n Names) {
	fmt.Fprintf(b, "The provider's content filter stopped the answer (stop reason %s", consult.Printable(sum.StopReason))
	if c.StopDetail != "" {
		fmt.Fprintf(b, "; %s", consult.Printable(c.StopDetail))
	}
	fmt.Fprintf(b, ").\nRephrase the question, leave out the files that may set the filter off (%s), or try another model.", n.of(ArgExclude))
}

// noAnswer: the output limit came before any answer.
type noAnswer struct{}

func (noAnswer) reason() Reason { return "no_answer" }

func (noAnswer) write(b *strings.Builder, sum *Summary, _ Names) {
	var u UsageSummary
	if sum.Usage != nil {
		u = *sum.Usage
	}
	fmt.Fprintf(b, "The model reached its output limit before it wrote any answer (stop reason %s; %s, %s).\n",
		consult.Printable(sum.StopReason), tokensWord(u.Reasoning, "reasoning token"), tokensWord(u.Output, "answer token"))
	writeLimitAdvice(b, sum)
}

// writeFailed: the answer arrived but output_file could not be written.
type writeFailed struct {
	Detail string `json:"detail,omitempty"`
}

func (writeFailed) reason() Reason { return "write_failed" }

func (c writeFailed) write(b *strings.Builder, sum *Summary, _ Names) {
	fmt.Fprintf(b, "The answer arrived but could not be written to output_file: %s\n\nAnswer:\n%s", c.Detail, sum.Answer)
}

// stopState is where a call whose context ended stood: the phase, the time, whether it had
// gathered anything, how far the model got, and the attempts that failed before.
type stopState struct {
	Phase           string         `json:"phase,omitempty"`
	Elapsed         time.Duration  `json:"elapsed,omitempty"`
	NothingGathered bool           `json:"nothing_gathered,omitempty"`
	Reasoning       consult.Tokens `json:"reasoning,omitempty"`
	Attempt         int            `json:"attempt,omitempty"`
	Failed          []Attempt      `json:"failed,omitempty"`
}

// write says what the call had collected, how far the model got, and the advice.
func (s stopState) write(b *strings.Builder, sum *Summary, n Names, advice string) {
	if s.NothingGathered {
		b.WriteString("Nothing had been gathered yet.\n")
	} else {
		b.WriteString("Collected so far: ")
		sum.Report.write(b, n)
	}
	if s.Reasoning > 0 {
		fmt.Fprintf(b, "The model had produced %s.\n", tokensWord(s.Reasoning, "reasoning token"))
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(b, "Attempt %d was running; earlier attempts failed:%s\n", s.Attempt, attemptsWords(s.Failed))
	}
	b.WriteString(advice)
}

// idleTimeout: the upstream was silent for Idle.
type idleTimeout struct {
	stopState
	Idle time.Duration `json:"idle,omitempty"`
}

func (idleTimeout) reason() Reason { return "idle_timeout" }

func (c idleTimeout) write(b *strings.Builder, sum *Summary, n Names) {
	idle := consult.FormatDuration(c.Idle)
	fmt.Fprintf(b, "No progress for %s (idle timeout) while %s; the call was stopped after %s.\n", idle, c.Phase, consult.FormatDuration(c.Elapsed))
	c.stopState.write(b, sum, n, fmt.Sprintf("The provider sent nothing at all for %s (not even a keep-alive): the request is stuck upstream, not too large. Call again, or try another model; a model that streams nothing while it thinks (OpenAI's reasoning models) needs a longer --idle-timeout on the server.\n", idle))
}

// timedOut: the call's Timeout passed.
type timedOut struct {
	stopState
	Timeout time.Duration `json:"timeout,omitempty"`
}

func (timedOut) reason() Reason { return "timeout" }

func (c timedOut) write(b *strings.Builder, sum *Summary, n Names) {
	fmt.Fprintf(b, "Request timed out after %s while %s.\n", consult.FormatDuration(c.Timeout), c.Phase)
	c.stopState.write(b, sum, n, c.advice(sum.Report, sum.Model, n))
}

// Advice on time: a request this many prompt tokens or fewer is small for every current
// model, so a timeout on it says the model was slow, not the request large.
const smallRequest consult.Tokens = 20_000

// advice says what to do about a call that ran out of time, from what it was doing and how
// big the request is: shrinking only where size can be the cause.
func (c timedOut) advice(rep *Report, model string, n Names) string {
	more := ""
	if c.Timeout < consult.MaxTimeout {
		more = fmt.Sprintf("raise timeout (now %s, at most %s)", consult.FormatDuration(c.Timeout), consult.FormatDuration(consult.MaxTimeout))
	}
	slowModel := `pass on_timeout "continue" to let it finish in the background and collect it with consultation_result`
	if more != "" {
		slowModel = more + ", or " + slowModel
	}
	switch {
	case c.Phase == string(PhaseQueued):
		// Never started: other calls held the server the whole time.
		again := "Call again when fewer calls are running"
		if more != "" {
			again += ", or " + more
		}
		return fmt.Sprintf("The server was busy with other calls the whole time (its workers, or its bound on bytes in flight, --max-inflight): this call never started, read nothing and sent nothing to the model. %s.\n", again)
	case c.NothingGathered || !rep.Counted:
		// Still reading or counting: the tree is what took the time.
		tips := sizeTips(rep, n)
		if more != "" {
			tips += ", or " + more
		}
		return fmt.Sprintf("Gathering and counting took the whole time: %s.\n", tips)
	case rep.PromptTokens <= smallRequest:
		return fmt.Sprintf("The request is small (%s tokens): the model was slow, not the request large. To get the answer, %s; or use a faster model.\n", rep.PromptTokens, slowModel)
	case rep.ContextWindow > 0 && rep.PromptTokens*2 >= rep.ContextWindow:
		return fmt.Sprintf("The request fills %d%% of %s's context window, and the time a model takes grows with its prompt: %s; or %s.\n",
			percent(rep.PromptTokens, rep.ContextWindow), consult.Printable(model), sizeTips(rep, n), slowModel)
	}
	return fmt.Sprintf("To finish in time, %s; or make the request smaller: %s.\n", slowModel, sizeTips(rep, n))
}

// stoppedBy: a cause its caller defines (Stop) stopped the call, with its own words.
type stoppedBy struct {
	stopState
	Headline string `json:"headline,omitempty"`
	Advice   string `json:"advice,omitempty"`
}

func (stoppedBy) reason() Reason { return "stopped" }

func (c stoppedBy) write(b *strings.Builder, sum *Summary, n Names) {
	b.WriteString(c.Headline + "\n")
	c.stopState.write(b, sum, n, c.Advice)
}

// cancelled: the client cancelled the call.
type cancelled struct {
	Phase   string        `json:"phase,omitempty"`
	Elapsed time.Duration `json:"elapsed,omitempty"`
}

func (cancelled) reason() Reason { return "cancelled" }

func (c cancelled) write(b *strings.Builder, _ *Summary, _ Names) {
	fmt.Fprintf(b, "Cancelled by the client while %s after %s.", c.Phase, consult.FormatDuration(c.Elapsed))
}
