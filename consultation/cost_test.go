package consultation

import (
	"context"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

// TestDryRunEstimate: a dry run prices the request for each provider with two figures: the
// expected price (the prompt at the prompt price and a typical answer at the completion
// price) and the most the call can cost (the prompt as the provider may count it and the
// output limit the request carries), from OpenRouter's model list or the dated table, and
// says where the prices come from.
func TestDryRunEstimate(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		t.Run(f.flavor.String(), func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, i)
			wantIn, wantOut, wantLimit := 0.0, 0.0, consult.Tokens(0)
			switch f.flavor {
			case fake.OpenRouter:
				srv.SetModels(fake.Model{ID: f.model, Context: 1_048_576, MaxOutput: 60_000,
					Pricing: map[string]string{"prompt": "0.00000125", "completion": "0.00001"}})
				wantIn, wantOut, wantLimit = 1.25, 10, 60_000
			case fake.OpenAI:
				wantIn, wantOut, wantLimit = 2, 8, 32_768 // gpt-4.1
			case fake.Gemini:
				wantIn, wantOut, wantLimit = 1.25, 10, 65_536 // gemini-2.5-pro under 200k tokens
			}
			wantFrom := "OpenRouter's model list of " + time.Now().UTC().Format(time.DateOnly)
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil)
			rep := reportOf(t, res)
			e := rep.Cost
			if !e.Known() {
				t.Fatalf("no estimate in the report: %s", res.Text())
			}
			bound := promptBound(f.model, rep.PromptTokens)
			wantExp := float64(rep.PromptTokens)*wantIn/1e6 + float64(e.ExpectedAnswer)*wantOut/1e6
			wantMax := float64(bound)*wantIn/1e6 + float64(wantLimit)*wantOut/1e6
			if !closeTo(*e.ExpectedUSD, wantExp) || !closeTo(*e.MaxUSD, wantMax) || e.OutputLimit != wantLimit || e.LimitedBy != LimitModel ||
				e.BoundTokens != bound || e.PromptTokens != rep.PromptTokens || !strings.HasPrefix(e.Prices, wantFrom) {
				t.Errorf("estimate = %+v (expected %v, max %v); want expected %v, max %v over %s (bound %s) prompt tokens and limit %s, from %q",
					e, *e.ExpectedUSD, *e.MaxUSD, wantExp, wantMax, rep.PromptTokens, bound, wantLimit, wantFrom)
			}
			for _, line := range []string{"Expected price: " + FormatUSD(wantExp), "At most: " + FormatUSD(wantMax), wantFrom} {
				if !strings.Contains(res.Text(), line) {
					t.Errorf("text lacks %q:\n%s", line, res.Text())
				}
			}
			if got := summaryOf(t, res); got.Estimate != nil || got.Report.Cost != e {
				t.Errorf("summary's cost_estimate = %+v, report's %+v: want it once, in the report", got.Estimate, got.Report.Cost)
			}
			if n := srv.Count("/chat/completions") + srv.Count("GenerateContent"); n != 0 {
				t.Errorf("%d model requests on a dry run", n)
			}
		})
	}
}

// TestEveryRequestCarriesALimit: with no cap, each provider's request carries an output
// limit in its own field: the model's largest output where it is listed, else the default.
func TestEveryRequestCarriesALimit(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		t.Run(f.flavor.String(), func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, i)
			field, want := "max_completion_tokens", 32_768.0 // gpt-4.1's largest output
			switch f.flavor {
			case fake.OpenRouter:
				srv.SetModels(fake.Model{ID: f.model, Context: 1_048_576}) // none listed
				field, want = "max_tokens", float64(defaultOutputLimit)
			case fake.Gemini:
				field, want = "generationConfig.maxOutputTokens", 65_536
			}
			if res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil); res.IsError {
				t.Fatal(res.Text())
			}
			reqs := generations(srv)
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			if got := jsonPath(reqs[0].JSON(), field); got != want {
				t.Errorf("%s = %v, want %v", field, got, want)
			}
		})
	}
}

// generations are the model requests the fake received (not model-list look-ups).
func generations(srv *fake.Server) []*fake.Request {
	var out []*fake.Request
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/chat/completions") || strings.Contains(r.Path, "GenerateContent") {
			out = append(out, r)
		}
	}
	return out
}

// jsonPath reads a dotted path in a decoded JSON object; nil when absent.
func jsonPath(v map[string]any, path string) any {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// TestEstimateAnswerCappedByMaxOutput: the output limit is the model's largest output when
// it is listed (OpenRouter's top_provider.max_completion_tokens), and the typical answer is
// never more than it.
func TestEstimateAnswerCappedByMaxOutput(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 4_000,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.000002"}})
	rep := reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil))
	if rep.Cost.OutputLimit != 4_000 || rep.Cost.ExpectedAnswer > 4_000 {
		t.Errorf("output limit %s, typical answer %s; want the model's max output 4,000 for both at most", rep.Cost.OutputLimit, rep.Cost.ExpectedAnswer)
	}
}

// TestLimitFitsTheWindow: a prompt that leaves less room in the window than the model's
// largest output gets the room as its limit (the provider refuses prompt + limit over it).
func TestLimitFitsTheWindow(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 12_000, MaxOutput: 65_536,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.000002"}})
	rep := reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil))
	want := 12_000 - (rep.PromptTokens + rep.PromptTokens/10 + promptFraming)
	if rep.Cost.OutputLimit != want || rep.Cost.LimitedBy != LimitWindow {
		t.Errorf("output limit %s by %s, want %s by the window", rep.Cost.OutputLimit, rep.Cost.LimitedBy, want)
	}
}

// TestEstimatePriceUnknown: a model known without a price (OpenRouter's router, whose price
// varies) is consulted without a cap, with its output limit and "price unknown"; a cap
// cannot be checked on it, so a capped call is refused before anything is sent.
func TestEstimatePriceUnknown(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: "openrouter/auto", Context: 2_000_000, Pricing: map[string]string{"prompt": "-1", "completion": "-1"}})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: "openrouter/auto"}), nil)
	if res.IsError {
		t.Fatalf("a model of unknown price is still consulted without a cap: %s", res.Text())
	}
	if e := summaryOf(t, res).Estimate; e == nil || e.Known() || e.Prices != PriceUnknown || e.OutputLimit != defaultOutputLimit {
		t.Errorf("estimate = %+v, want price unknown with the default output limit", e)
	}
	res = svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: "openrouter/auto", DryRun: true}), nil)
	if !strings.Contains(res.Text(), "Price: unknown") {
		t.Errorf("dry run text lacks the unknown price:\n%s", res.Text())
	}
	res = svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), MaxCostUSD: 100, Model: "openrouter/auto"}), nil)
	if !res.IsError || summaryOf(t, res).Error.Class != ClassOverBudget || !strings.Contains(res.Text(), "no source gives the price") {
		t.Errorf("cap on an unknown price: %s", res.Text())
	}
	if n := len(generations(srv)); n != 1 {
		t.Errorf("%d requests sent, want only the uncapped one", n)
	}
}

// TestMaxCostSizesTheLimit: under max_cost_usd the output limit is sized so that the bound
// fits the cap, and the request carries it; a cap that cannot pay for the prompt and the
// shortest useful answer refuses the call before anything is sent, naming the cap that
// would admit it; an answer stopped at the sized limit says so (truncated_by cost_cap),
// with the fix.
func TestMaxCostSizesTheLimit(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1) // gpt-4.1 at OpenRouter's list prices: $2 in, $8 out
	dir := sampleTree(t)
	dry := reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: dir, DryRun: true}), nil)).Cost
	pr := providers.Price{Input: 2, Output: 8}
	least := pr.Bound(dry.BoundTokens, MinAnswerTokens)

	// Too small a cap: refused, nothing sent, the cap that admits it named.
	res := svc.Consult(context.Background(), goReq(Request{Path: dir, MaxCostUSD: least * 0.9}), nil)
	info := summaryOf(t, res).Error
	if !res.IsError || info.Class != ClassOverBudget || info.NeedsUSD == nil || !closeTo(*info.NeedsUSD, least) {
		t.Fatalf("cap under the least: error %+v\n%s", info, res.Text())
	}
	for _, want := range []string{"A max_cost_usd of " + FormatUSD(least) + " or more would admit it", "max_cost_usd " + FormatUSD(least*0.9)} {
		if !strings.Contains(res.Text(), want) {
			t.Errorf("refusal lacks %q:\n%s", want, res.Text())
		}
	}
	if n := len(generations(srv)); n != 0 {
		t.Fatalf("%d requests sent despite the cap", n)
	}

	// A cap between: sent, with the limit that keeps the bound within it.
	capUSD := least * 2
	srv.Push(fake.Script{Steps: fake.Chunks("the start of a long answer", 4), Finish: "length"})
	res = svc.Consult(context.Background(), goReq(Request{Path: dir, MaxCostUSD: capUSD}), nil)
	if res.IsError {
		t.Fatalf("a cap that admits the call refused it: %s", res.Text())
	}
	sum := summaryOf(t, res)
	e := sum.Estimate
	wantLimit := pr.LimitFor(capUSD, dry.BoundTokens)
	if e.OutputLimit != wantLimit || e.LimitedBy != LimitMaxCost || *e.MaxUSD > capUSD || e.FullLimit != dry.OutputLimit || !closeTo(*e.FullUSD, *dry.MaxUSD) {
		t.Errorf("estimate %+v: want limit %s by max_cost_usd, bound %v within %v", e, wantLimit, *e.MaxUSD, capUSD)
	}
	reqs := generations(srv)
	if got := jsonPath(reqs[len(reqs)-1].JSON(), "max_completion_tokens"); got != float64(wantLimit) {
		t.Errorf("max_completion_tokens = %v, want %d", got, wantLimit)
	}
	if !sum.Truncated || sum.TruncatedBy != TruncatedByCostCap {
		t.Errorf("truncated %v by %q, want by %q", sum.Truncated, sum.TruncatedBy, TruncatedByCostCap)
	}
	if text := res.Text(); !strings.Contains(text, "Raise max_cost_usd") || !strings.Contains(text, FormatUSD(*dry.MaxUSD)) {
		t.Errorf("the cut answer does not say how to lift the cap:\n%s", text)
	}

	// A cap above the bound changes nothing.
	res = svc.Consult(context.Background(), goReq(Request{Path: dir, MaxCostUSD: *dry.MaxUSD * 2}), nil)
	if e := summaryOf(t, res).Estimate; res.IsError || e.OutputLimit != dry.OutputLimit || e.LimitedBy != LimitModel {
		t.Errorf("a cap above the bound: %+v\n%s", e, res.Text())
	}
}

// TestBadPricesFailClosed: prices no model can have (infinite, NaN, negative, over a dollar
// a token) are refused as bad data: a cap cannot be checked with them, so the capped call
// is refused; without a cap the call goes on with the price unknown.
func TestBadPricesFailClosed(t *testing.T) {
	t.Parallel()
	for _, bad := range []map[string]string{
		{"prompt": "0.000001", "completion": "1e303"},
		{"prompt": "NaN", "completion": "0.000002"},
		{"prompt": "0.000001", "completion": "-0.5"},
		{"prompt": "3", "completion": "0.000002"},
	} {
		t.Run(bad["prompt"]+"/"+bad["completion"], func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, 0)
			srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 1_000, Pricing: bad})
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), MaxCostUSD: 0.05}), nil)
			if !res.IsError || summaryOf(t, res).Error.Class != ClassOverBudget || !strings.Contains(res.Text(), "not prices") {
				t.Errorf("capped call with bad prices: %s", res.Text())
			}
			if n := len(generations(srv)); n != 0 {
				t.Errorf("%d requests sent", n)
			}
			res = svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
			if e := summaryOf(t, res).Estimate; res.IsError || e.Known() {
				t.Errorf("uncapped call with bad prices: estimate %+v\n%s", e, res.Text())
			}
		})
	}
}

// TestRequestPriceCounts: OpenRouter's price per request is part of both figures, and of
// what a cap must pay for.
func TestRequestPriceCounts(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 1_000,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.000002", "request": "1"}})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), MaxCostUSD: 0.05}), nil)
	info := summaryOf(t, res).Error
	if !res.IsError || info.Class != ClassOverBudget || info.NeedsUSD == nil || *info.NeedsUSD < 1 {
		t.Fatalf("a $1 request under a $0.05 cap: %+v\n%s", info, res.Text())
	}
	if n := len(generations(srv)); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	dry := reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil))
	if e := dry.Cost; *e.ExpectedUSD < 1 || *e.MaxUSD < 1 || e.RequestUSD != 1 || !strings.Contains(dry.Text(), "plus $1.00 a request") {
		t.Errorf("estimate %+v lacks the price per request:\n%s", e, dry.Text())
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

// ledger is the results directory's spend ledger in a new directory (what servers share).
func ledger(t *testing.T) *results.Store {
	t.Helper()
	return results.Open(t.TempDir(), 0, 0, 0)
}

// spentToday is what l holds spent today, failing the test on an error.
func spentToday(t *testing.T, l Ledger) (spent, held float64) {
	t.Helper()
	spent, held, err := l.Spent(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return spent, held
}

// TestDailyBudget: with a daily budget, a call that fits is sent with its bound held in the
// ledger, settled with the reported cost; a call whose prompt and shortest answer do not fit
// what is left is refused before sending, saying how much is left, what would admit it and
// when it resets; one in between is sent with its output limit sized to what is left.
func TestDailyBudget(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0) // OpenRouter: reports its cost
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 50_000,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.00001"}})
	led := ledger(t)
	svc.Ledger, svc.DailyBudgetUSD = led, 1
	dir := sampleTree(t)

	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 100, Output: 2, Cost: 0.25}})
	res := svc.Consult(context.Background(), goReq(Request{Path: dir}), nil)
	if res.IsError {
		t.Fatalf("within budget: %s", res.Text())
	}
	full := summaryOf(t, res).Estimate
	if spent, held := spentToday(t, led); spent != 0.25 || held != 0 {
		t.Fatalf("ledger: %v spent, %v held; want the reported cost 0.25 settled", spent, held)
	}

	// 0.75 left, less than the bound (about 0.5 of output): sent with a smaller limit.
	if _, err := led.AddSpend(context.Background(), time.Now(), 0.5); err != nil {
		t.Fatal(err)
	}
	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 100, Output: 2, Cost: 0.01}})
	res = svc.Consult(context.Background(), goReq(Request{Path: dir}), nil)
	e := summaryOf(t, res).Estimate
	if res.IsError || e.LimitedBy != LimitBudget || *e.MaxUSD > 0.25 || e.OutputLimit >= full.OutputLimit {
		t.Fatalf("with 0.25 left: estimate %+v (full %+v)\n%s", e, full, res.Text())
	}
	reqs := generations(srv)
	if got := jsonPath(reqs[len(reqs)-1].JSON(), "max_tokens"); got != float64(e.OutputLimit) {
		t.Errorf("max_tokens = %v, want the budget's limit %s", got, e.OutputLimit)
	}

	if _, err := led.AddSpend(context.Background(), time.Now(), 0.24-1e-9); err != nil { // almost all spent
		t.Fatal(err)
	}
	res = svc.Consult(context.Background(), goReq(Request{Path: dir}), nil)
	if !res.IsError {
		t.Fatalf("over the daily budget, not refused: %s", res.Text())
	}
	info := summaryOf(t, res).Error
	resets := NextUTCDay(time.Now())
	if info.Class != ClassOverBudget || info.BudgetUSD != 1 || info.BudgetLeftUSD == nil || *info.BudgetLeftUSD > 1e-8 ||
		!info.ResetsAt.Equal(resets) || info.NeedsUSD == nil {
		t.Errorf("error = %+v, want over_budget, budget 1, ~0 left, what admits it, resets %v", info, resets)
	}
	for _, want := range []string{"left", "resets at 00:00 UTC", "--budget-usd", "It would be admitted with " + FormatUSD(deref(info.NeedsUSD)) + " left"} {
		if !strings.Contains(res.Text(), want) {
			t.Errorf("refusal lacks %q:\n%s", want, res.Text())
		}
	}
	if n := len(generations(srv)); n != 2 {
		t.Errorf("%d requests sent, want only the first two", n)
	}
	if _, held := spentToday(t, led); held != 0 {
		t.Errorf("%v still held after every call ended", held)
	}
}

// TestBudgetHoldsAcrossServers: concurrent calls on two servers (two services, each with its
// own store on one results directory) against one daily budget, each billed the most its
// request allows (the fake model writes its whole output limit): what they spend together
// never passes the budget.
func TestBudgetHoldsAcrossServers(t *testing.T) {
	t.Parallel()
	const budget, calls = 0.5, 24
	srv := fake.New(t, fake.OpenRouter)
	srv.SetModels(fake.Model{ID: "google/gemini-2.5-pro", Context: 1_048_576, MaxOutput: 9_000,
		Pricing: map[string]string{"prompt": "0.000001", "completion": "0.00001"}})
	dir, resultsDir := sampleTree(t), t.TempDir()
	var bills sync.Mutex
	billed := 0.0
	srv.SetFunc(func(r *fake.Request) fake.Script {
		body := r.JSON()
		limit, _ := body["max_tokens"].(float64)
		// The whole limit written: the most a provider can bill for this request's output
		// (the prompt billed as 100 tokens, under what the bound counts for it).
		cost := providers.Price{Input: 1, Output: 10}.Cost(providers.Usage{Input: 100, Output: consult.Tokens(limit)})
		bills.Lock()
		billed += cost
		bills.Unlock()
		return fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 100, Output: int(limit), Cost: cost}}
	})
	service := func() *Service {
		p, err := providers.NewOpenRouter(providers.Config{APIKey: "sk-test-key-123456", BaseURL: srv.BaseURL(),
			HTTPClient: &http.Client{Transport: providers.ActivityTransport(nil)}})
		if err != nil {
			t.Fatal(err)
		}
		return &Service{Counter: counter, Model: p, DefaultModel: "google/gemini-2.5-pro", Catalog: listCatalog(fake.OpenRouter, srv, nil),
			Ledger: results.Open(resultsDir, 0, 0, 0), DailyBudgetUSD: budget}
	}
	servers := []*Service{service(), service()}
	var wg sync.WaitGroup
	var sent, refused atomic.Int32
	for i := range calls {
		wg.Go(func() {
			res := servers[i%2].Consult(context.Background(), goReq(Request{Path: dir, Timeout: 60 * time.Second}), nil)
			switch {
			case !res.IsError:
				sent.Add(1)
			case summaryOf(t, res).Error.Class == ClassOverBudget:
				refused.Add(1)
			default:
				t.Errorf("call failed otherwise: %s", res.Text())
			}
		})
	}
	wg.Wait()
	spent, held := spentToday(t, results.Open(resultsDir, 0, 0, 0))
	if spent > budget || held != 0 || billed > budget+1e-9 {
		t.Errorf("%d calls sent, %d refused: ledger %v spent, %v held; upstream billed %v; budget %v",
			sent.Load(), refused.Load(), spent, held, billed, budget)
	}
	if sent.Load() == 0 || refused.Load() == 0 {
		t.Errorf("%d sent, %d refused: want both (the budget admits some of %d calls)", sent.Load(), refused.Load(), calls)
	}
}

// TestBudgetWithoutLedger: a daily budget with no ledger to keep it refuses every model call,
// saying why, rather than being dropped; a dry run still works.
func TestBudgetWithoutLedger(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1)
	svc.DailyBudgetUSD = 5
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if !res.IsError || !strings.Contains(res.Text(), "--budget-usd") || !strings.Contains(res.Text(), "no spend ledger") {
		t.Errorf("a budget without a ledger: %s", res.Text())
	}
	// A ledger that cannot be used (an unsafe directory) is refused the same way.
	unsafe := t.TempDir()
	if err := os.Chmod(unsafe, 0o777); err != nil {
		t.Fatal(err)
	}
	svc.Ledger = results.Open(filepath.Join(unsafe, "results"), 0, 0, 0)
	res = svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if runtime.GOOS != "windows" && (!res.IsError || !strings.Contains(res.Text(), "spend ledger cannot be used")) {
		t.Errorf("a budget whose ledger is in an unsafe directory: %s", res.Text())
	}
	if n := len(generations(srv)); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	if res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), DryRun: true}), nil); res.IsError {
		t.Errorf("dry run under a budget without a ledger: %s", res.Text())
	}
}

// TestSpendAtListPrices: a provider that reports no cost (OpenAI) is counted at the model's
// list prices: the reported tokens, the cached ones at the cache-read price.
func TestSpendAtListPrices(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1)
	led := ledger(t)
	svc.Ledger = led
	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 10_000, Cached: 8_000, Output: 100, Reasoning: 50}})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if res.IsError {
		t.Fatal(res.Text())
	}
	want := 2_000*2e-6 + 8_000*0.5e-6 + 150*8e-6 // gpt-4.1: $2, $0.50 cached, $8
	if spent, _ := spentToday(t, led); !closeTo(spent, want) {
		t.Errorf("ledger holds %v, want %v", spent, want)
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
	// A hit is expected, not promised: the bound still counts the files at full price.
	if *second.MaxUSD != *first.MaxUSD {
		t.Errorf("the bound with a cache hit expected is %v, want the same as without, %v", *second.MaxUSD, *first.MaxUSD)
	}
	if second.CachedTokens < 1_024 || *second.ExpectedUSD >= *first.ExpectedUSD {
		t.Errorf("after a send: cached %s, usd %v (first %v); want the files cached and a lower price", second.CachedTokens, *second.ExpectedUSD, *first.ExpectedUSD)
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
	prices := fileCatalog(t, providers.NameOpenRouter, `{"models": {"m": {"prompt": 1, "completion": 2}}}`)
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		svc := &Service{Counter: counter, Model: slowModel{think: 15 * time.Second}, DefaultModel: "m", Heartbeat: 10 * time.Second,
			Catalog: prices}
		if res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 20 * time.Second}), rec); res.IsError {
			t.Fatal(res.Text())
		}
		synctest.Wait()
		_, msgs, _ := rec.snapshot()
		with := -1
		for i, m := range msgs {
			if !strings.Contains(m, "at most $") {
				continue
			}
			if with >= 0 {
				t.Errorf("the estimate repeated in %q", m)
			}
			with = i
			if !strings.Contains(m, "expected $") {
				t.Errorf("report %q lacks the expected price", m)
			}
		}
		if with != 1 {
			t.Errorf("progress %q: the estimate is not in the first report after the one sent at once", msgs)
		}
	})
}

// TestExpiringModelWarned: a model the list gives a removal date is consulted with a
// warning naming the date, in the first progress report and in the result.
func TestExpiringModelWarned(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(fake.Model{ID: flavors[0].model, Context: 1_048_576, MaxOutput: 8_000, Expires: "2027-01-14"})
	rec := &recorder{}
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), rec)
	if res.IsError {
		t.Fatal(res.Text())
	}
	warnings := strings.Join(summaryOf(t, res).Warnings, "\n")
	if !strings.Contains(warnings, "is listed to be removed after 2027-01-14") || !strings.Contains(res.Text(), "2027-01-14") {
		t.Errorf("warnings %q lack the removal date:\n%s", warnings, res.Text())
	}
	_, msgs, _ := rec.snapshot()
	if !strings.Contains(strings.Join(msgs, "\n"), "2027-01-14") {
		t.Errorf("no progress report names the removal date: %q", msgs)
	}
}

// TestCostOfTheModelThatAnswered: when the provider reports another model than the one
// asked for, the cost is at the prices of the model that answered, and the result says so.
func TestCostOfTheModelThatAnswered(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1) // OpenAI reports no cost: it is computed from the tokens
	svc.Catalog = fileCatalog(t, providers.NameOpenAI, `{"models": {
		"gpt-4.1": {"prompt": 2, "completion": 8, "context": 1047576, "max_output": 32768},
		"gpt-4.1-mini": {"prompt": 0.4, "completion": 1.6}}}`)
	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Model: "gpt-4.1-mini", Usage: &fake.Usage{Input: 10_000, Output: 1_000}})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if res.IsError {
		t.Fatal(res.Text())
	}
	sum := summaryOf(t, res)
	want := 10_000*0.4e-6 + 1_000*1.6e-6
	if u := sum.Usage; u == nil || u.CostUSD == nil || !closeTo(*u.CostUSD, want) || sum.Model != "gpt-4.1-mini" {
		t.Errorf("usage %+v of model %s; want cost %v at gpt-4.1-mini's prices", sum.Usage, sum.Model, want)
	}
	if w := strings.Join(sum.Warnings, "\n"); !strings.Contains(w, "model gpt-4.1-mini answered, not gpt-4.1") {
		t.Errorf("warnings %q do not say which model answered", w)
	}
}

// TestExpectedFromRecentAnswers: the expected price counts a default answer until the server
// has answers of the model, then the median of its recent ones (output and reasoning).
func TestExpectedFromRecentAnswers(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 1)
	dir := sampleTree(t)
	dry := func() *CostEstimate {
		t.Helper()
		return reportOf(t, svc.Consult(context.Background(), goReq(Request{Path: dir, DryRun: true}), nil)).Cost
	}
	if e := dry(); e.ExpectedAnswer != defaultAnswerTokens || e.ExpectedFrom != "consult's default" {
		t.Errorf("before any answer: %s tokens from %q, want the default", e.ExpectedAnswer, e.ExpectedFrom)
	}
	for _, out := range []int{100, 900, 300} {
		srv.Push(fake.Script{Steps: fake.Chunks("ok", 1), Usage: &fake.Usage{Input: 100, Output: out}})
		if res := svc.Consult(context.Background(), goReq(Request{Path: dir}), nil); res.IsError {
			t.Fatal(res.Text())
		}
	}
	e := dry()
	if e.ExpectedAnswer != 300 || !strings.Contains(e.ExpectedFrom, "last 3 answers") {
		t.Errorf("after three answers: %s tokens from %q, want their median 300", e.ExpectedAnswer, e.ExpectedFrom)
	}
	want := float64(e.PromptTokens-e.CachedTokens)*2e-6 + float64(e.CachedTokens)*0.5e-6 + 300*8e-6 // the files expected from the cache
	if !closeTo(*e.ExpectedUSD, want) || *e.ExpectedUSD >= *e.MaxUSD {
		t.Errorf("expected %v, want %v (under the bound %v)", *e.ExpectedUSD, want, *e.MaxUSD)
	}
}
