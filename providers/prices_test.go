package providers

import (
	"errors"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

func TestEstimate(t *testing.T) {
	t.Parallel()
	p := Price{Input: 2, Output: 8, CacheRead: 0.5}
	// 100k prompt tokens at $2/M + 10k answer tokens at $8/M.
	if got, want := p.Estimate(100_000, 0, 0, 10_000), 0.2+0.08; !near(got, want) {
		t.Errorf("Estimate without cache = %v, want %v", got, want)
	}
	// 90k of them from the cache at $0.50/M.
	if got, want := p.Estimate(100_000, 90_000, 0, 10_000), 0.02+0.045+0.08; !near(got, want) {
		t.Errorf("Estimate with a cache hit = %v, want %v", got, want)
	}
	// Writing the cache costs 1.25x the prompt price where it is listed.
	w := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if got, want := w.Estimate(10_000, 0, 8_000, 0), 2_000*3e-6+8_000*3.75e-6; !near(got, want) {
		t.Errorf("Estimate with a cache write = %v, want %v", got, want)
	}
	// Cached and written tokens are bounded by the prompt, and never negative.
	if got, want := w.Estimate(10_000, 6_000, 8_000, 0), 6_000*0.3e-6+4_000*3.75e-6; !near(got, want) {
		t.Errorf("Estimate with more cached and written than the prompt = %v, want %v", got, want)
	}
	if got, want := w.Estimate(10_000, -5, -5, 0), 10_000*3e-6; !near(got, want) {
		t.Errorf("Estimate with negative cached and written = %v, want %v", got, want)
	}
	// Gemini 2.5 Pro: over 200k prompt tokens the whole request is billed at the long rates.
	g := Price{Input: 1.25, CacheRead: 0.125, Output: 10, LongOver: 200_000, Long: &Price{Input: 2.5, CacheRead: 0.25, Output: 15}}
	if got, want := g.Estimate(300_000, 0, 0, 1_000), 300_000*2.5e-6+1_000*15e-6; !near(got, want) {
		t.Errorf("Estimate over 200k = %v, want %v", got, want)
	}
	if got, want := g.Estimate(100_000, 0, 0, 1_000), 100_000*1.25e-6+1_000*10e-6; !near(got, want) {
		t.Errorf("Estimate under 200k = %v, want %v", got, want)
	}
}

func TestCostAndSaved(t *testing.T) {
	t.Parallel()
	p := Price{Input: 2, Output: 8, CacheRead: 0.5}
	u := Usage{Reported: true, Input: 100_000, Cached: 80_000, Output: 1_000, Reasoning: 2_000}
	if got, want := p.Cost(u), 20_000*2e-6+80_000*0.5e-6+3_000*8e-6; !near(got, want) {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	if got, want := p.Saved(u), 80_000*1.5e-6; !near(got, want) {
		t.Errorf("Saved = %v, want %v", got, want)
	}
	// A call that only wrote the cache paid for it: a negative saving.
	w := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if got := w.Saved(Usage{Input: 10_000, CacheWrite: 8_000}); !near(got, -8_000*0.75e-6) {
		t.Errorf("Saved on a cache write = %v, want %v", got, -8_000*0.75e-6)
	}
}

func TestOpenRouterPriceParse(t *testing.T) {
	t.Parallel()
	p, ok, err := OpenRouterPricing{Prompt: "0.000003", Completion: "0.000015", InputCacheRead: "0.0000003",
		InputCacheWrite: "0.00000375", Request: "0.02"}.Price()
	if err != nil || !ok || !near(p.Input, 3) || !near(p.Output, 15) || !near(p.CacheRead, 0.3) || !near(p.CacheWrite, 3.75) || !near(p.Request, 0.02) {
		t.Errorf("Price = %+v, %v, %v", p, ok, err)
	}
	for _, unknown := range [][2]string{{"-1", "-1"}, {"", "0.1"}, {"0.1", ""}} {
		if _, ok, err := (OpenRouterPricing{Prompt: unknown[0], Completion: unknown[1]}).Price(); ok || err != nil {
			t.Errorf("Price(%q, %q) = %v, %v; want unknown, no error", unknown[0], unknown[1], ok, err)
		}
	}
	// Figures no price can have are bad data: refused, never a price.
	for _, bad := range []OpenRouterPricing{
		{Prompt: "x", Completion: "0.1"},
		{Prompt: "NaN", Completion: "0"},
		{Prompt: "0.000001", Completion: "1e303"}, // infinite per million tokens
		{Prompt: "0.000001", Completion: "Inf"},
		{Prompt: "-0.5", Completion: "0.1"},
		{Prompt: "2", Completion: "0.1"}, // two dollars a token
		{Prompt: "0.000001", Completion: "0.000002", Request: "-1"},
		{Prompt: "0.000001", Completion: "0.000002", InputCacheRead: "NaN"},
	} {
		if p, ok, err := bad.Price(); ok || !errors.Is(err, ErrBadPrice) {
			t.Errorf("Price(%+v) = %+v, %v, %v; want ErrBadPrice", bad, p, ok, err)
		}
	}
}

// TestBound: the bound is the prompt at the dearest prompt rate of its tier, the output limit
// at the dearest output rate and the price per request; LimitFor inverts it, never over.
func TestBound(t *testing.T) {
	t.Parallel()
	p := Price{Input: 3, Output: 15, CacheWrite: 3.75, Reasoning: 20, Request: 0.01,
		LongOver: 200_000, Long: &Price{Input: 6, Output: 22.5}}
	if got, want := p.Bound(100_000, 1_000), 100_000*3.75e-6+1_000*20e-6+0.01; !near(got, want) {
		t.Errorf("Bound = %v, want %v", got, want)
	}
	if got, want := p.Bound(300_000, 1_000), 300_000*6e-6+1_000*22.5e-6+0.01; !near(got, want) {
		t.Errorf("Bound over the tier = %v, want %v", got, want)
	}
	for _, usd := range []float64{0.4, 0.5, 1, 2.5, 10} {
		n := p.LimitFor(usd, 100_000)
		if n < 0 || p.Bound(100_000, n) > usd || p.Bound(100_000, n+1) <= usd {
			t.Errorf("LimitFor(%v) = %d: bound %v, next %v", usd, n, p.Bound(100_000, n), p.Bound(100_000, n+1))
		}
	}
	if n := p.LimitFor(0.3, 100_000); n != -1 {
		t.Errorf("LimitFor a cap under the prompt alone = %d, want -1", n)
	}
	if n := (Price{Input: 1}).LimitFor(1, 10); n != 1<<40 {
		t.Errorf("LimitFor free output = %d", n)
	}
}
