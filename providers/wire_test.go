package providers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/consultmcp/consult"
)

// wireDir is the replay set of responses real providers sent (../shared/wire beside the
// repository: other projects' recordings, replayed here and never copied in).
const wireDir = "../../shared/wire/recordings"

// wireCase is a recording that reports tokens (and OpenRouter's cost), with the model's
// prices as OpenRouter lists them (https://openrouter.ai/<model>: prompt, completion and
// cache-read prices per million tokens), and the figures the recording reports.
type wireCase struct {
	id, provider, model string
	price               Price
	input, cached       consult.Tokens
	cost                float64 // the provider's reported cost; 0 where it reports none
}

var wireCases = []wireCase{
	{id: "or-grok4-cached-reasoning-cost", provider: NameOpenRouter, model: "x-ai/grok-4",
		price: Price{Input: 3, Output: 15, CacheRead: 0.75}, input: 687, cached: 679, cost: 0.00333825},
	{id: "or-grok-summary-encrypted-cached", provider: NameOpenRouter, model: "x-ai/grok-4.1-fast",
		price: Price{Input: 0.20, Output: 0.50, CacheRead: 0.05}, input: 165, cached: 164, cost: 0.0000919},
	{id: "or-claude-reasoning-stream", provider: NameOpenRouter, model: "anthropic/claude-sonnet-4.5",
		price: Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}, input: 43, cost: 0.000669},
	{id: "g-cached-content-tokens", provider: NameGemini, model: "gemini-2.5-flash", input: 17713, cached: 17379},
}

// requireWire skips tb, in one line, where the replay set is absent: it is kept beside the
// repository, not in it, so a clone has none.
func requireWire(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(wireDir); err != nil {
		tb.Skipf("skipping: the replay set of real providers' responses is not beside this repository (%s)", wireDir)
	}
}

// replayUsage serves a recording's first response, byte for byte, to the provider and
// returns the usage it read from it.
func replayUsage(tb testing.TB, c wireCase) Usage {
	tb.Helper()
	body, err := os.ReadFile(filepath.Join(wireDir, c.id, "1.body"))
	if err != nil {
		tb.Fatalf("%s: the replay set lacks this recording: %v", c.id, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	spec, _ := Lookup(c.provider)
	base := srv.URL
	if c.provider == NameGemini {
		base += "/"
	}
	p, err := spec.New(Config{APIKey: "sk-wire-test-key", BaseURL: base})
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := p.Stream(context.Background(), Request{Model: c.model, Prompt: "hi"}, nil)
	if err != nil {
		tb.Fatalf("%s: %v", c.id, err)
	}
	if !resp.Usage.Reported {
		tb.Fatalf("%s: no usage read", c.id)
	}
	return resp.Usage
}

// TestWireCostAndCache: the cached tokens and the cost read from responses real providers
// sent, and the cost computed from the tokens at OpenRouter's listed prices (cached tokens
// at the cache-read price, reasoning as completion), agree with what the provider reported.
func TestWireCostAndCache(t *testing.T) {
	t.Parallel()
	requireWire(t)
	for _, c := range wireCases {
		t.Run(c.id, func(t *testing.T) {
			t.Parallel()
			u := replayUsage(t, c)
			if u.Input != c.input || u.Cached != c.cached {
				t.Errorf("usage %+v; want %s input, %s cached", u, c.input, c.cached)
			}
			if c.cost == 0 {
				return
			}
			if !u.CostKnown || !near(u.CostUSD, c.cost) {
				t.Errorf("reported cost %v (known %v), want %v", u.CostUSD, u.CostKnown, c.cost)
			}
			if got := c.price.Cost(u); !near(got, c.cost) {
				t.Errorf("cost at list prices %v, want the reported %v", got, c.cost)
			}
			if c.cached > 0 {
				if saved, want := c.price.Saved(u), float64(c.cached)*(c.price.Input-c.price.CacheRead)/1e6; !near(saved, want) {
					t.Errorf("saved %v, want %v", saved, want)
				}
			}
		})
	}
}

// BenchmarkEstimateError reports, over the recordings that carry a cost, how far the
// estimate made before sending is from the cost the provider reported: with the answer
// allowance consult reserves (an upper bound: answers are usually far shorter), and with the
// answer's real length (the prompt side alone, where a cache hit not foreseen shows).
func BenchmarkEstimateError(b *testing.B) {
	requireWire(b)
	type fig struct{ est, estKnownAnswer, cost float64 }
	var figs []fig
	for _, c := range wireCases {
		if c.cost == 0 {
			continue
		}
		u := replayUsage(b, c)
		figs = append(figs, fig{
			est:            c.price.Estimate(u.Input, 0, 0, defaultAllowance),
			estKnownAnswer: c.price.Estimate(u.Input, 0, 0, u.Output+u.Reasoning),
			cost:           u.CostUSD,
		})
	}
	b.ResetTimer()
	var over, prompt float64
	for range b.N {
		over, prompt = 0, 0
		for _, f := range figs {
			over += f.est / f.cost
			prompt += f.estKnownAnswer / f.cost
		}
	}
	n := float64(len(figs))
	b.ReportMetric(over/n, "estimate/cost")
	b.ReportMetric(prompt/n, "estimate-known-answer/cost")
	for _, f := range figs {
		b.Logf("estimate %s (answer known: %s), reported %s", fmtUSD(f.est), fmtUSD(f.estKnownAnswer), fmtUSD(f.cost))
	}
}

// defaultAllowance is the answer allowance of a model whose window is 160k tokens or more
// (consultation's answer reserve).
const defaultAllowance consult.Tokens = 16_000

func fmtUSD(v float64) string { return fmt.Sprintf("$%.6g", v) }
