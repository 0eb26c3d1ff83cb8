package providers

import (
	"cmp"
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/consultmcp/consult"
)

// PriceTableDate is the day the prices in [TablePrice] were taken from the providers'
// pricing pages: OpenAI's https://platform.openai.com/docs/pricing and the Gemini API's
// https://ai.google.dev/gemini-api/docs/pricing (standard tier, text, paid). It is shown
// with every estimate made from the table: prices change, and an estimate says how old
// its figures are.
const PriceTableDate = "2025-11-20"

// PriceSourceTable and PriceSourceOpenRouter name where a [Price] came from.
const (
	PriceSourceTable      = "consult's price table of " + PriceTableDate
	PriceSourceOpenRouter = "OpenRouter's model list"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	// Input is the price of a prompt token; Output of an answer token.
	Input, Output float64
	// Reasoning is the price of a reasoning token; 0 means the same as Output (every
	// provider in the table bills reasoning as output).
	Reasoning float64
	// CacheRead is the price of a prompt token served from the provider's prompt cache; 0
	// means no discount is known (Input).
	CacheRead float64
	// CacheWrite is the price of a prompt token written to the cache where writing costs
	// more than reading it fresh (Anthropic's models: 1.25 times Input); 0 means Input.
	CacheWrite float64
	// LongOver, when positive, is the prompt size above which Long's prices apply to the
	// whole request (Gemini 2.5 Pro and 3 Pro: prompts over 200k tokens).
	LongOver consult.Tokens
	// Long are the prices of a prompt over LongOver.
	Long *Price
	// MaxOutput is the most answer tokens the model gives in one response, when the
	// provider lists it (OpenRouter's top_provider.max_completion_tokens); 0 is unknown.
	MaxOutput consult.Tokens
	// Source says where the prices come from (PriceSourceTable, PriceSourceOpenRouter).
	Source string
}

// At is the prices that apply to a prompt of this many tokens: Long's over LongOver.
func (p Price) At(prompt consult.Tokens) Price {
	if p.LongOver > 0 && p.Long != nil && prompt > p.LongOver {
		l := *p.Long
		l.Source = p.Source
		return l
	}
	return p
}

// The prices that default to another when 0 (see [Price]); none is ever negative.
func (p Price) reasoning() float64  { return cmp.Or(p.Reasoning, p.Output) }
func (p Price) cacheRead() float64  { return cmp.Or(p.CacheRead, p.Input) }
func (p Price) cacheWrite() float64 { return cmp.Or(p.CacheWrite, p.Input) }

// perToken turns a price per million tokens and a count into dollars.
func perToken(perMillion float64, n consult.Tokens) float64 {
	return perMillion * float64(n) / 1e6
}

// Estimate is the price of a request before it is sent: prompt tokens at the prompt price
// (cached of them at the cache-read price, written of them at the cache-write price) plus
// answer tokens at the completion price.
func (p Price) Estimate(prompt, cached, written, answer consult.Tokens) float64 {
	t := p.At(prompt)
	cached = min(max(cached, 0), prompt)
	written = min(max(written, 0), prompt-cached)
	fresh := prompt - cached - written
	return perToken(t.Input, fresh) + perToken(t.cacheRead(), cached) + perToken(t.cacheWrite(), written) +
		perToken(t.Output, answer)
}

// Cost is what u costs at these prices: the prompt (its cached and cache-written tokens at
// their own prices), the answer and the reasoning. It is the figure for a provider that
// reports no cost of its own (OpenAI, Gemini).
func (p Price) Cost(u Usage) float64 {
	t := p.At(u.Input)
	cached := min(u.Cached, u.Input)
	written := min(u.CacheWrite, u.Input-cached)
	fresh := u.Input - cached - written
	return perToken(t.Input, fresh) + perToken(t.cacheRead(), cached) + perToken(t.cacheWrite(), written) +
		perToken(t.Output, u.Output) + perToken(t.reasoning(), u.Reasoning)
}

// Saved is what the prompt cache saved on u: its cached tokens at the prompt price less
// the cache-read price, less what writing to the cache cost above the prompt price. It may
// be negative (a first call that only wrote the cache).
func (p Price) Saved(u Usage) float64 {
	t := p.At(u.Input)
	return perToken(t.Input-t.cacheRead(), u.Cached) - perToken(t.cacheWrite()-t.Input, u.CacheWrite)
}

// Pricer is implemented by the providers of this package: the price of a model, when known.
type Pricer interface {
	// Price returns model's prices; ok is false when they are unknown (a model not in the
	// table, or one OpenRouter lists without a fixed price). The look-up is bounded by ctx.
	Price(ctx context.Context, model string) (price Price, ok bool, err error)
}

var (
	_ Pricer = (*OpenRouter)(nil)
	_ Pricer = (*OpenAI)(nil)
	_ Pricer = (*Gemini)(nil)
)

// priceRow is one family of models in the table: every id that starts with prefix (the
// longest prefix wins), in dollars per million tokens.
type priceRow struct {
	prefix                   string
	input, cacheRead, output float64
	// longOver and long are the prices of a prompt over longOver tokens, when they differ.
	longOver                             consult.Tokens
	longInput, longCacheRead, longOutput float64
}

// priceTable holds the prices of the OpenAI and Gemini models consult knows, as the
// providers' pricing pages gave them on PriceTableDate (see there). OpenRouter's prices
// come from its model list instead.
var priceTable = map[string][]priceRow{
	NameOpenAI: {
		{prefix: "gpt-5-nano", input: 0.05, cacheRead: 0.005, output: 0.40},
		{prefix: "gpt-5-mini", input: 0.25, cacheRead: 0.025, output: 2.00},
		{prefix: "gpt-5-pro", input: 15, output: 120},
		{prefix: "gpt-5", input: 1.25, cacheRead: 0.125, output: 10}, // gpt-5, gpt-5.1, gpt-5-chat-latest
		{prefix: "gpt-4.1-nano", input: 0.10, cacheRead: 0.025, output: 0.40},
		{prefix: "gpt-4.1-mini", input: 0.40, cacheRead: 0.10, output: 1.60},
		{prefix: "gpt-4.1", input: 2, cacheRead: 0.50, output: 8},
		{prefix: "gpt-4o-mini", input: 0.15, cacheRead: 0.075, output: 0.60},
		{prefix: "gpt-4o", input: 2.50, cacheRead: 1.25, output: 10},
		{prefix: "o4-mini", input: 1.10, cacheRead: 0.275, output: 4.40},
		{prefix: "o3-mini", input: 1.10, cacheRead: 0.55, output: 4.40},
		{prefix: "o3-pro", input: 20, output: 80},
		{prefix: "o3", input: 2, cacheRead: 0.50, output: 8},
		{prefix: "o1-mini", input: 1.10, cacheRead: 0.55, output: 4.40},
		{prefix: "o1", input: 15, cacheRead: 7.50, output: 60},
	},
	NameGemini: {
		{prefix: "gemini-3-pro", input: 2, cacheRead: 0.20, output: 12,
			longOver: 200_000, longInput: 4, longCacheRead: 0.40, longOutput: 18},
		{prefix: "gemini-2.5-pro", input: 1.25, cacheRead: 0.125, output: 10,
			longOver: 200_000, longInput: 2.50, longCacheRead: 0.25, longOutput: 15},
		{prefix: "gemini-2.5-flash-lite", input: 0.10, cacheRead: 0.01, output: 0.40},
		{prefix: "gemini-2.5-flash", input: 0.30, cacheRead: 0.03, output: 2.50},
		{prefix: "gemini-2.0-flash-lite", input: 0.075, output: 0.30},
		{prefix: "gemini-2.0-flash", input: 0.10, cacheRead: 0.025, output: 0.40},
	},
}

// TablePrice looks model up in the dated price table of provider (openai or gemini): the
// row whose prefix is the longest that model's id starts with ("gpt-4.1-mini-2025-04-14"
// takes "gpt-4.1-mini"). A vendor prefix ("openai/") and Gemini's "models/" are removed
// first. ok is false for a model not in the table: its price is unknown.
func TablePrice(provider, model string) (Price, bool) {
	id := strings.ToLower(strings.TrimSpace(model))
	id = strings.TrimPrefix(id, "models/")
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	var best *priceRow
	for i, r := range priceTable[provider] {
		if strings.HasPrefix(id, r.prefix) && (best == nil || len(r.prefix) > len(best.prefix)) {
			best = &priceTable[provider][i]
		}
	}
	if best == nil {
		return Price{}, false
	}
	p := Price{Input: best.input, Output: best.output, CacheRead: best.cacheRead, Source: PriceSourceTable}
	if best.longOver > 0 {
		p.LongOver = best.longOver
		p.Long = &Price{Input: best.longInput, Output: best.longOutput, CacheRead: best.longCacheRead}
	}
	return p, true
}

// Price looks model up in the dated price table; see [Pricer].
func (p *OpenAI) Price(ctx context.Context, model string) (Price, bool, error) {
	return tablePrice(ctx, NameOpenAI, model)
}

// Price looks model up in the dated price table; see [Pricer].
func (p *Gemini) Price(ctx context.Context, model string) (Price, bool, error) {
	return tablePrice(ctx, NameGemini, model)
}

// tablePrice is [Pricer.Price] from the dated price table of provider.
func tablePrice(ctx context.Context, provider, model string) (Price, bool, error) {
	if err := ctx.Err(); err != nil {
		return Price{}, false, canceledError(provider, ctx, false)
	}
	pr, ok := TablePrice(provider, model)
	return pr, ok, nil
}

// openRouterPrice turns the pricing object of an OpenRouter model (US dollars per token,
// as decimal strings: https://openrouter.ai/docs/api-reference/list-available-models)
// into a Price. ok is false when the prompt or completion price is missing, not a number,
// or negative (OpenRouter lists "-1" for a router whose price varies).
func openRouterPrice(prompt, completion, reasoning, cacheRead, cacheWrite string) (Price, bool) {
	parse := func(s string) (float64, bool) {
		s = strings.TrimSpace(s)
		if s == "" {
			return 0, false
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, false
		}
		return v * 1e6, true
	}
	in, ok1 := parse(prompt)
	out, ok2 := parse(completion)
	if !ok1 || !ok2 {
		return Price{}, false
	}
	p := Price{Input: in, Output: out, Source: PriceSourceOpenRouter}
	p.Reasoning, _ = parse(reasoning)
	p.CacheRead, _ = parse(cacheRead)
	p.CacheWrite, _ = parse(cacheWrite)
	return p, true
}
