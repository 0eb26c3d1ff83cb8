package providers

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/consultmcp/consult"
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
	// whole request (Gemini's Pro models over 200k prompt tokens, GPT-5.4 and 5.5 over 272k).
	LongOver consult.Tokens
	// Long are the prices of a prompt over LongOver.
	Long *Price
	// Request is the price of one request in US dollars, whatever its size (OpenRouter's
	// pricing.request); 0 is none.
	Request float64
	// MaxOutput is the most output tokens the model gives in one response, when it is
	// listed (OpenRouter's top_provider.max_completion_tokens); 0 is unknown.
	MaxOutput consult.Tokens
	// Source says where the prices come from, with their date.
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

// Sanity bounds of a price: no model costs more than a dollar a token, or a hundred dollars a
// request. A figure beyond them (a unit mistake, 1e303) is bad data, not a price.
const (
	// MaxPerMillion is the most a token may cost, in US dollars per million tokens.
	MaxPerMillion = 1e6
	// MaxPerRequest is the most a request may cost by itself, in US dollars.
	MaxPerRequest = 100.0
)

// ErrBadPrice is wrapped by [Price.Check]'s errors.
var ErrBadPrice = errors.New("bad price data")

// Check refuses prices that cannot be true: a rate that is not a number, infinite, negative
// or over a dollar a token, or a per-request price over MaxPerRequest, here or in the long
// tier. A cap must not be checked with them.
func (p Price) Check() error {
	rates := []struct {
		name string
		v    float64
	}{{"prompt", p.Input}, {"completion", p.Output}, {"reasoning", p.Reasoning}, {"cache read", p.CacheRead}, {"cache write", p.CacheWrite}}
	for _, r := range rates {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) || r.v < 0 || r.v > MaxPerMillion {
			return fmt.Errorf("%w: the %s price is %v dollars per million tokens (a price is a finite number from 0 to %g)", ErrBadPrice, r.name, r.v, MaxPerMillion)
		}
	}
	if v := p.Request; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > MaxPerRequest {
		return fmt.Errorf("%w: the price per request is %v dollars (a price is a finite number from 0 to %g)", ErrBadPrice, v, MaxPerRequest)
	}
	if p.Long != nil {
		if p.Long.Long != nil {
			return fmt.Errorf("%w: a long-prompt tier has a tier of its own", ErrBadPrice)
		}
		if err := p.Long.Check(); err != nil {
			return fmt.Errorf("over %s prompt tokens: %w", p.LongOver, err)
		}
	}
	return nil
}

// The prices that default to another when 0 (see [Price]); none is ever negative.
func (p Price) reasoning() float64  { return cmp.Or(p.Reasoning, p.Output) }
func (p Price) cacheRead() float64  { return cmp.Or(p.CacheRead, p.Input) }
func (p Price) cacheWrite() float64 { return cmp.Or(p.CacheWrite, p.Input) }

// boundRates are what the most expensive way to bill a prompt and an output token costs
// at these prices: a prompt token written to the cache where that costs more than reading
// it fresh, and the dearer of an answer and a reasoning token.
func (p Price) boundRates() (prompt, output float64) {
	return max(p.Input, p.cacheWrite()), max(p.Output, p.reasoning())
}

// Bound is the most a request can cost at these prices: prompt tokens (as many as the
// provider may count; the tier is chosen by them) each at the dearest prompt rate, limit
// output tokens (answer and reasoning) each at the dearest output rate, and the price per
// request. A request that carries limit as its output limit cannot be billed more.
func (p Price) Bound(prompt, limit consult.Tokens) float64 {
	t := p.At(prompt)
	in, out := t.boundRates()
	return perToken(in, prompt) + perToken(out, max(limit, 0)) + p.Request
}

// LimitFor is the largest output limit whose [Price.Bound] with prompt tokens is at most usd;
// -1 when even no output passes usd. It is at most 1<<40 (free output).
func (p Price) LimitFor(usd float64, prompt consult.Tokens) consult.Tokens {
	if p.Bound(prompt, 0) > usd {
		return -1
	}
	_, out := p.At(prompt).boundRates()
	if out <= 0 {
		return 1 << 40
	}
	n := consult.Tokens(min((usd-p.Bound(prompt, 0))*1e6/out, 1<<40))
	for n > 0 && p.Bound(prompt, n) > usd { // floating point: never over usd
		n--
	}
	for i := 0; i < 2 && n < 1<<40 && p.Bound(prompt, n+1) <= usd; i++ { // nor a token short of it
		n++
	}
	return n
}

// perToken turns a price per million tokens and a count into dollars.
func perToken(perMillion float64, n consult.Tokens) float64 {
	return perMillion * float64(n) / 1e6
}

// Estimate is the price of a request before it is sent: prompt tokens at the prompt price
// (cached of them at the cache-read price, written of them at the cache-write price) plus
// answer tokens at the completion price.
func (p Price) Estimate(prompt, cached, written, answer consult.Tokens) float64 {
	return p.Cost(Usage{Input: prompt, Cached: max(cached, 0), CacheWrite: max(written, 0), Output: answer})
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

// OpenRouterPricing is an OpenRouter model's pricing object: US dollars per token (per
// request for Request), as decimal strings, as GET /models lists it
// (https://openrouter.ai/docs/models; the fields of PublicPricing in
// github.com/OpenRouterTeam/go-sdk models/components/publicpricing.go).
type OpenRouterPricing struct {
	Prompt            string `json:"prompt"`
	Completion        string `json:"completion"`
	Request           string `json:"request"`
	InternalReasoning string `json:"internal_reasoning"`
	InputCacheRead    string `json:"input_cache_read"`
	InputCacheWrite   string `json:"input_cache_write"`
}

// Price turns the pricing object into a Price. ok is false when the prompt or completion
// price is missing or "-1" (OpenRouter's mark of a router whose price varies): the price
// is unknown. A figure that is not a number, or fails [Price.Check], is an error wrapping
// ErrBadPrice: bad data, which no cap may be checked with.
func (o OpenRouterPricing) Price() (p Price, ok bool, err error) {
	prompt, completion := strings.TrimSpace(o.Prompt), strings.TrimSpace(o.Completion)
	if prompt == "" || completion == "" || prompt == "-1" || completion == "-1" {
		return Price{}, false, nil
	}
	parse := func(name, s string, perToken bool) float64 {
		s = strings.TrimSpace(s)
		if s == "" || err != nil {
			return 0
		}
		v, perr := strconv.ParseFloat(s, 64)
		if perr != nil && !errors.Is(perr, strconv.ErrRange) {
			err = fmt.Errorf("%w: the %s price %q is not a number", ErrBadPrice, name, s)
			return 0
		}
		if perToken {
			v *= 1e6
		}
		return v
	}
	p = Price{Input: parse("prompt", prompt, true), Output: parse("completion", completion, true),
		Reasoning: parse("internal_reasoning", o.InternalReasoning, true), CacheRead: parse("input_cache_read", o.InputCacheRead, true),
		CacheWrite: parse("input_cache_write", o.InputCacheWrite, true), Request: parse("request", o.Request, false)}
	if err == nil {
		err = p.Check()
	}
	if err != nil {
		return Price{}, false, err
	}
	return p, true, nil
}
