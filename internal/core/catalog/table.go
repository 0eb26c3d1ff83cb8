package catalog

import (
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// TableDate is the day the fallback table's figures were checked against the sources each
// row names. The table answers only when no model list can be had (no network, and no list
// cached on disk): prices change, and every figure from it says how old it is.
const TableDate = "2026-11-27"

// SourceTable names the fallback table as a source of figures.
const SourceTable = "consult's fallback table of " + TableDate

// row is one model of the fallback table, by its OpenRouter id, in US dollars per million
// tokens. A model whose current price could not be sourced is left out.
type row struct {
	id                       string
	input, cacheRead, output float64
	window, maxOutput        consult.Tokens
	expires                  string // "2006-01-02", "" for none
}

// table is the fallback: exact ids only. Sources, as read on TableDate:
//   - openai/gpt-5.4: https://developers.openai.com/api/docs/models/gpt-5.4 ($2.50 input,
//     $0.25 cached, $15 output; 1,050,000 context window, 128,000 max output tokens).
//   - openai/gpt-5.5: https://www.benchr.org/articles/gpt-5-5-pricing-explained, quoting
//     OpenAI's pricing page ($5, $0.50 cached, $30); window and output as GPT-5.4's
//     (https://devbriefs.com/gpt-5-5-api-spec-price-context-window/: 128,000 output).
//   - openai/gpt-5.4-mini: https://vercel.com/ai-gateway/models/openai/gpt-5.4-mini ($0.75,
//     $4.50; 400,000 context, 128,000 output); no cached price found, so none is assumed.
//   - openai/gpt-4.1: OpenAI's pricing ($2, $0.50 cached, $8; 1,047,576 context, 32,768
//     output); expiration_date 2027-01-14 in OpenRouter's model list.
//   - google/gemini-3.5-flash: https://docs.apiyi.com/models/gemini-3-5-flash (list price
//     $1.50, $0.15 cached, $9); 1,048,576 input and 65,536 output tokens from Google's model
//     page as quoted by https://www.bearplex.com/ai/gemini-3-5-flash.
//   - google/gemini-3.1-flash-lite, google/gemini-3-flash-preview,
//     google/gemini-3.1-pro-preview: https://claw-planet.pages.dev/google/gemini-api/models/
//     (Google's pricing page; $0.25 and $1.50; $0.50, $0.05 cached, $3; $2 and $12 up to
//     200k prompt tokens), 1,048,576 input and 65,536 output tokens.
//
// Left out for want of a current source: gemini-3.8-flash (its listed $0.75 holds only
// through 2026-12-31), gpt-5.4-pro and gpt-5.5-pro (the Responses API only), and the
// Gemini 2.5 models (shut down or rerouted).
var table = []row{
	{id: "openai/gpt-5.5", input: 5, cacheRead: 0.5, output: 30, window: 1_050_000, maxOutput: 128_000},
	{id: "openai/gpt-5.4", input: 2.5, cacheRead: 0.25, output: 15, window: 1_050_000, maxOutput: 128_000},
	{id: "openai/gpt-5.4-mini", input: 0.75, output: 4.5, window: 400_000, maxOutput: 128_000},
	{id: "openai/gpt-4.1", input: 2, cacheRead: 0.5, output: 8, window: 1_047_576, maxOutput: 32_768, expires: "2027-01-14"},
	{id: "google/gemini-3.5-flash", input: 1.5, cacheRead: 0.15, output: 9, window: 1_048_576, maxOutput: 65_536},
	{id: "google/gemini-3.1-flash-lite", input: 0.25, output: 1.5, window: 1_048_576, maxOutput: 65_536},
	{id: "google/gemini-3-flash-preview", input: 0.5, cacheRead: 0.05, output: 3, window: 1_048_576, maxOutput: 65_536},
	{id: "google/gemini-3.1-pro-preview", input: 2, output: 12, window: 1_048_576, maxOutput: 65_536},
}

// tier is a long-prompt surcharge: over over prompt tokens the whole request is billed at
// in times the prompt-side rates (prompt, cache read and write) and out times the output
// rates. OpenRouter's model list does not list tiers, so they are applied to its prices
// from here, by exact id.
type tier struct {
	over    consult.Tokens
	in, out float64
}

// tiers are the surcharges known on TableDate:
//   - OpenAI: "prompts with >272K input tokens are priced at 2x input and 1.5x output for
//     the full session" (https://developers.openai.com/api/docs/models/gpt-5.4, for GPT-5.4
//     and GPT-5.4 pro; the same for GPT-5.5 on OpenAI's pricing page, quoted by benchr.org).
//   - Google: the Pro models bill prompts over 200k tokens at $2.50/$15 (2.5 Pro, from
//     $1.25/$10) and $4/$18 (3 and 3.1 Pro, from $2/$12): twice the prompt and 1.5 times the
//     output rates (https://ai.google.dev/gemini-api/docs/pricing).
var tiers = map[string]tier{
	"openai/gpt-5.4":                {over: 272_000, in: 2, out: 1.5},
	"openai/gpt-5.4-pro":            {over: 272_000, in: 2, out: 1.5},
	"openai/gpt-5.5":                {over: 272_000, in: 2, out: 1.5},
	"google/gemini-2.5-pro":         {over: 200_000, in: 2, out: 1.5},
	"google/gemini-3-pro-preview":   {over: 200_000, in: 2, out: 1.5},
	"google/gemini-3.1-pro-preview": {over: 200_000, in: 2, out: 1.5},
}

// withTier is p with the long-prompt tier of model id applied, when one is known and p
// has none.
func withTier(id string, p providers.Price) providers.Price {
	t, ok := tiers[id]
	if !ok || p.Long != nil {
		return p
	}
	long := providers.Price{Input: p.Input * t.in, CacheRead: p.CacheRead * t.in, CacheWrite: p.CacheWrite * t.in,
		Output: p.Output * t.out, Reasoning: p.Reasoning * t.out, Request: p.Request}
	p.LongOver, p.Long = t.over, &long
	return p
}

// tableModels is the fallback table as models, by id.
func tableModels() map[string]Model {
	out := make(map[string]Model, len(table))
	for _, r := range table {
		p := withTier(r.id, providers.Price{Input: r.input, CacheRead: r.cacheRead, Output: r.output, MaxOutput: r.maxOutput, Source: SourceTable})
		m := Model{ID: r.id, Window: r.window, MaxOutput: r.maxOutput, Price: &p, Source: SourceTable}
		if r.expires != "" {
			m.Expires, _ = time.Parse(time.DateOnly, r.expires)
		}
		out[r.id] = m
	}
	return out
}
