package consultation

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/internal/fake"
	"github.com/consultmcp/consult/providers"
)

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

// TestDryRunEstimate: a dry run prices the request for each provider: prompt tokens at the
// model's prompt price plus the answer reserve at its completion price, from OpenRouter's
// model list or the dated table, and says where the prices come from.
func TestDryRunEstimate(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		t.Run(f.flavor.String(), func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, i)
			wantIn, wantOut, wantFrom := 0.0, 0.0, providers.PriceSourceTable
			switch f.flavor {
			case fake.OpenRouter:
				srv.SetModels(fake.Model{ID: f.model, Context: 1_048_576, MaxOutput: 65_536,
					Pricing: map[string]string{"prompt": "0.00000125", "completion": "0.00001"}})
				wantIn, wantOut, wantFrom = 1.25, 10, providers.PriceSourceOpenRouter
			case fake.OpenAI:
				wantIn, wantOut = 2, 8 // gpt-4.1
			case fake.Gemini:
				wantIn, wantOut = 1.25, 10 // gemini-2.5-pro under 200k tokens
			}
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil)
			rep := reportOf(t, res)
			e := rep.Cost
			if !e.Known() {
				t.Fatalf("no estimate in the report: %s", res.Text())
			}
			want := float64(rep.PromptTokens)*wantIn/1e6 + float64(rep.Reserve)*wantOut/1e6
			if !closeTo(*e.USD, want) || e.AnswerTokens != rep.Reserve || e.PromptTokens != rep.PromptTokens || e.Prices != wantFrom {
				t.Errorf("estimate = %+v (usd %v), want usd %v over %s prompt + %s answer tokens from %q", e, *e.USD, want, rep.PromptTokens, rep.Reserve, wantFrom)
			}
			if line := "Estimated price: " + FormatUSD(want); !strings.Contains(res.Text(), line) || !strings.Contains(res.Text(), wantFrom) {
				t.Errorf("text lacks %q and %q:\n%s", line, wantFrom, res.Text())
			}
			if got := summaryOf(t, res).Estimate; got != e {
				t.Errorf("summary's cost_estimate = %+v, want the report's", got)
			}
			if n := srv.Count("/chat/completions") + srv.Count("GenerateContent"); n != 0 {
				t.Errorf("%d model requests on a dry run", n)
			}
		})
	}
}

// TestEstimateAnswerCappedByMaxOutput: the answer allowance is the model's largest output
// when that is smaller than the reserve (OpenRouter's top_provider.max_completion_tokens).
func TestEstimateAnswerCappedByMaxOutput(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 4_000,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.000002"}})
	rep := reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil))
	if rep.Cost.AnswerTokens != 4_000 {
		t.Errorf("answer allowance %s, want the model's max output 4,000 (reserve %s)", rep.Cost.AnswerTokens, rep.Reserve)
	}
}

func TestEstimatePriceUnknown(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1) // OpenAI: the table does not know a local model
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: "my-local-model"}), nil)
	if res.IsError {
		t.Fatalf("a model of unknown price is still consulted without a cap: %s", res.Text())
	}
	if e := summaryOf(t, res).Estimate; e == nil || e.Known() || e.Prices != PriceUnknown {
		t.Errorf("estimate = %+v, want price unknown", e)
	}
	res = svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: "my-local-model", DryRun: true}), nil)
	if !strings.Contains(res.Text(), "Estimated price: unknown") {
		t.Errorf("dry run text lacks the unknown price:\n%s", res.Text())
	}
	_ = srv
}

// TestMaxCostRefusesBeforeSending: a request estimated above max_cost_usd is refused with
// class over_budget, the estimate and the cap in the message and the structured error, and
// nothing reaches the provider; one under it is sent.
func TestMaxCostRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1) // gpt-4.1 at the table's prices
	dir := sampleTree(t)
	dry := reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: dir, DryRun: true}), nil))
	est := *dry.Cost.USD
	capUSD := est / 2
	res := svc.Consult(context.Background(), goReq(Request{Path: dir, MaxCostUSD: capUSD}), nil)
	if !res.IsError {
		t.Fatalf("not refused: %s", res.Text())
	}
	info := summaryOf(t, res).Error
	if info.Class != ClassOverBudget || info.Retryable || info.MaxCostUSD != capUSD || info.EstimatedCostUSD == nil || !closeTo(*info.EstimatedCostUSD, est) {
		t.Errorf("error = %+v, want over_budget with estimate %v and cap %v", info, est, capUSD)
	}
	for _, want := range []string{FormatUSD(est), FormatUSD(capUSD), "max_cost_usd"} {
		if !strings.Contains(info.Message, want) {
			t.Errorf("message lacks %q: %s", want, info.Message)
		}
	}
	if n := srv.Count("/chat/completions"); n != 0 {
		t.Fatalf("%d requests sent despite the cap", n)
	}
	if res := svc.Consult(context.Background(), goReq(Request{Path: dir, MaxCostUSD: est * 2}), nil); res.IsError {
		t.Fatalf("a request under the cap was refused: %s", res.Text())
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d requests sent under the cap, want 1", n)
	}
	// A cap on a model of unknown price cannot be kept: refused, nothing sent.
	res = svc.Consult(context.Background(), goReq(Request{Path: dir, MaxCostUSD: 100, Model: "my-local-model"}), nil)
	if !res.IsError || summaryOf(t, res).Error.Class != ClassOverBudget || !strings.Contains(res.Text(), "unknown") {
		t.Errorf("cap on an unknown price: %s", res.Text())
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d requests sent, want still 1", n)
	}
}

func TestMaxCostValidated(t *testing.T) {
	t.Parallel()
	svc := &Service{Counter: counter}
	for _, v := range []float64{-1, math.NaN(), math.Inf(1), 20_000} {
		res := svc.Consult(context.Background(), goReq(Request{Path: t.TempDir(), MaxCostUSD: v, DryRun: true}), nil)
		if !res.IsError || summaryOf(t, res).Error.Class != ClassInvalidArgument || !strings.Contains(res.Text(), "max_cost_usd") {
			t.Errorf("max_cost_usd %v: %s", v, res.Text())
		}
	}
}

// memLedger is a Ledger in memory, for the core's tests; the results directory's ledger is
// tested in internal/results.
type memLedger struct {
	mu    sync.Mutex
	spent map[string]float64
	adds  []float64
}

func (l *memLedger) Spent(day time.Time) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent[day.UTC().Format(time.DateOnly)], nil
}

func (l *memLedger) AddSpend(day time.Time, usd float64) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spent == nil {
		l.spent = map[string]float64{}
	}
	k := day.UTC().Format(time.DateOnly)
	l.spent[k] += usd
	l.adds = append(l.adds, usd)
	return l.spent[k], nil
}

// TestDailyBudget: with a daily budget, a request whose estimate is more than what is left
// today is refused before sending, saying how much is left and when it resets; one that
// fits is sent, and its reported cost is added to the ledger.
func TestDailyBudget(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0) // OpenRouter: reports its cost
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.000002"}})
	led := &memLedger{}
	svc.Ledger, svc.DailyBudgetUSD = led, 1
	dir := sampleTree(t)

	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 100, Output: 2, Cost: 0.25}})
	if res := svc.Consult(context.Background(), goReq(Request{Path: dir}), nil); res.IsError {
		t.Fatalf("within budget: %s", res.Text())
	}
	if len(led.adds) != 1 || led.adds[0] != 0.25 {
		t.Fatalf("ledger additions %v, want the reported cost 0.25", led.adds)
	}

	_, _ = led.AddSpend(time.Now(), 0.75-1e-9) // almost all spent
	res := svc.Consult(context.Background(), goReq(Request{Path: dir}), nil)
	if !res.IsError {
		t.Fatalf("over the daily budget, not refused: %s", res.Text())
	}
	info := summaryOf(t, res).Error
	resets := NextUTCDay(time.Now())
	if info.Class != ClassOverBudget || info.BudgetUSD != 1 || info.BudgetLeftUSD == nil || *info.BudgetLeftUSD > 1e-8 || !info.ResetsAt.Equal(resets) {
		t.Errorf("error = %+v, want over_budget, budget 1, ~0 left, resets %v", info, resets)
	}
	for _, want := range []string{"left", "resets at 00:00 UTC", "--budget-usd"} {
		if !strings.Contains(res.Text(), want) {
			t.Errorf("refusal lacks %q:\n%s", want, res.Text())
		}
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d requests sent, want only the first", n)
	}
}

// TestSpendAtListPrices: a provider that reports no cost (OpenAI) is counted at the model's
// list prices: the reported tokens, the cached ones at the cache-read price.
func TestSpendAtListPrices(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1)
	led := &memLedger{}
	svc.Ledger = led
	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 10_000, Cached: 8_000, Output: 100, Reasoning: 50}})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if res.IsError {
		t.Fatal(res.Text())
	}
	want := 2_000*2e-6 + 8_000*0.5e-6 + 150*8e-6 // gpt-4.1: $2, $0.50 cached, $8
	if len(led.adds) != 1 || !closeTo(led.adds[0], want) {
		t.Errorf("ledger additions %v, want %v", led.adds, want)
	}
	u := summaryOf(t, res).Usage
	if u.CostUSD == nil || !closeTo(*u.CostUSD, want) || !u.CostFromPrices || u.CacheSavedUSD == nil || !closeTo(*u.CacheSavedUSD, 8_000*1.5e-6) {
		t.Errorf("usage = %+v, want cost %v from prices, saved %v", u, want, 8_000*1.5e-6)
	}
	if !strings.Contains(res.Text(), "8,000 cached, saving "+FormatUSD(8_000*1.5e-6)) || !strings.Contains(res.Text(), "at list prices") {
		t.Errorf("footer lacks the cache's saving or the cost's source:\n%s", res.Text())
	}
}

// TestCacheHitExpected: after a request about a file set, the next estimate for the same
// files and model expects its files from the cache (the cache-read price); a changed file is
// a new prefix and expects none.
func TestCacheHitExpected(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1)
	big := strings.Repeat("// a line of a file large enough for a provider to cache\n", 200)
	dir := writeTree(t, map[string]string{"a.go": "package a\n" + big, "b.go": "package b\n"})
	est := func() *CostEstimate {
		return reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: dir, DryRun: true}), nil)).Cost
	}
	first := est()
	if first.CachedTokens != 0 {
		t.Fatalf("first estimate expects %s cached tokens, want 0", first.CachedTokens)
	}
	if res := svc.Consult(context.Background(), goReq(Request{Path: dir}), nil); res.IsError {
		t.Fatal(res.Text())
	}
	second := est()
	if second.CachedTokens < 1_024 || *second.USD >= *first.USD {
		t.Errorf("after a send: cached %s, usd %v (first %v); want the files cached and a lower price", second.CachedTokens, *second.USD, *first.USD)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.go"), []byte("package b // changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if third := est(); third.CachedTokens != 0 {
		t.Errorf("after a file changed: %s cached tokens expected, want 0", third.CachedTokens)
	}
	_ = srv
}

// TestProgressCarriesEstimate: the first progress report after the price is known (the first
// after the one sent at once) carries the estimate with where the prices come from; no other
// repeats it.
func TestProgressCarriesEstimate(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		svc := &Service{Counter: counter, Model: pricedSlow{slowModel{think: 15 * time.Second}}, DefaultModel: "m", Heartbeat: 10 * time.Second}
		if res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 20 * time.Second}), rec); res.IsError {
			t.Fatal(res.Text())
		}
		synctest.Wait()
		_, msgs, _ := rec.snapshot()
		with := -1
		for i, m := range msgs {
			if !strings.Contains(m, "estimated") {
				continue
			}
			if with >= 0 {
				t.Errorf("the estimate repeated in %q", m)
			}
			with = i
			if !strings.Contains(m, "estimated $") || !strings.Contains(m, "test prices") {
				t.Errorf("report %q lacks the price and its source", m)
			}
		}
		if with != 1 {
			t.Errorf("progress %q: the estimate is not in the first report after the one sent at once", msgs)
		}
	})
}

// pricedSlow is slowModel with a price.
type pricedSlow struct{ slowModel }

func (pricedSlow) Price(context.Context, string) (providers.Price, bool, error) {
	return providers.Price{Input: 1, Output: 2, Source: "test prices"}, true, nil
}
