package consultation

// What a request will cost, as data and in words: the estimate a call makes before it
// sends (cost.go), a dry run reports, and a cap's refusal quotes.

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	consult "github.com/consultmcp/consult"
)

// PriceUnknown is what an estimate says of a model with no known price.
const PriceUnknown = "price unknown"

// Output limits of a call. Every request carries an output limit (reasoning included), so
// that what it can cost is bounded.
const (
	// MinAnswerTokens is the least output a call is sent with under a cap (about 750 words:
	// a short answer, but a useful one): a cap that cannot pay for the prompt and this much
	// output (and a thinking budget, when one is asked for) refuses the call instead.
	MinAnswerTokens consult.Tokens = 1_024
	// defaultOutputLimit is the output limit of a model whose largest output no source lists.
	defaultOutputLimit consult.Tokens = 16_384
	// promptFraming is what the bound adds to consult's count of the prompt for what it does
	// not count: the system instruction and the provider's message framing.
	promptFraming consult.Tokens = 512
)

// What set a call's output limit (CostEstimate.LimitedBy).
const (
	LimitModel   = "model"        // the model's largest output (or defaultOutputLimit)
	LimitWindow  = "window"       // the room the prompt leaves in the context window
	LimitMaxCost = "max_cost_usd" // the call's max_cost_usd
	LimitBudget  = "budget_usd"   // what is left of the server's daily budget
)

// CostEstimate is the price of a request before it is sent: what it is expected to cost,
// and the most it can cost (its bound: the prompt as the provider may count it and the
// output limit the request carries, at the dearest rates).
type CostEstimate struct {
	// ExpectedUSD is what the call is expected to cost: the prompt at its prices (the part
	// expected from the provider's cache at the cache-read price) plus ExpectedAnswer tokens
	// at the completion price. Absent when the price is unknown.
	ExpectedUSD *float64 `json:"expected_usd,omitempty"`
	// MaxUSD is the most the call can cost: the bound. Absent when the price is unknown.
	MaxUSD *float64 `json:"max_usd,omitempty"`
	// PromptTokens is the prompt as consult counts it; CachedTokens the part of it expected
	// from the provider's cache (the same files were sent to this model a moment ago);
	// BoundTokens the prompt as the bound counts it (what other tokenizers may count).
	PromptTokens consult.Tokens `json:"prompt_tokens"`
	CachedTokens consult.Tokens `json:"cached_tokens,omitempty"`
	BoundTokens  consult.Tokens `json:"bound_prompt_tokens,omitempty"`
	// ExpectedAnswer is the answer (and reasoning) tokens the expected price counts, and
	// ExpectedFrom where that figure comes from: the median of this server's recent
	// answers of the model, or consult's default.
	ExpectedAnswer consult.Tokens `json:"expected_answer_tokens"`
	ExpectedFrom   string         `json:"expected_answer_from,omitempty"`
	// OutputLimit is the output limit the request carries (answer and reasoning), and
	// LimitedBy what set it (LimitModel, LimitWindow, LimitMaxCost, LimitBudget).
	OutputLimit consult.Tokens `json:"output_limit"`
	LimitedBy   string         `json:"limited_by"`
	// FullLimit and FullUSD are the output limit without the cap that set OutputLimit, and
	// its bound: what a cap would have to allow for the model's whole output.
	FullLimit consult.Tokens `json:"full_output_limit,omitempty"`
	FullUSD   *float64       `json:"full_max_usd,omitempty"`
	// Prices says where the prices come from, with their date, or "price unknown".
	Prices string `json:"prices"`
	// PromptPerM and AnswerPerM are the rates used, in US dollars per million tokens;
	// RequestUSD the price per request, when there is one.
	PromptPerM *float64 `json:"prompt_usd_per_million,omitempty"`
	AnswerPerM *float64 `json:"answer_usd_per_million,omitempty"`
	RequestUSD float64  `json:"request_usd,omitempty"`
}

// Known says whether the estimate has figures.
func (e *CostEstimate) Known() bool { return e != nil && e.MaxUSD != nil }

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
