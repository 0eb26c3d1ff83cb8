package consultation

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/leaf/models"
	"github.com/consultmcp/consult/providers"
)

// The typical answer the expected price counts: the median of this server's last
// recentAnswersKept answers of the model (output and reasoning tokens), else a default.
const (
	// defaultAnswerTokens is a long answer (about 1,500 words), when none was seen yet.
	defaultAnswerTokens consult.Tokens = 2_000
	// defaultReasoningTokens is the reasoning a thinking model without a budget is expected
	// to add (a budget is expected to be spent whole).
	defaultReasoningTokens consult.Tokens = 8_000
	// recentAnswersKept is how many answers per model the median is taken over.
	recentAnswersKept = 20
)

// recentAnswers remembers how long this server's recent answers were, per model (and
// whether it thought). The zero value is ready.
type recentAnswers struct {
	mu   sync.Mutex
	seen map[string][]consult.Tokens
}

// note records an answer of n output tokens (reasoning included) under key.
func (r *recentAnswers) note(key string, n consult.Tokens) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string][]consult.Tokens{}
	}
	l := append(r.seen[key], n)
	if len(l) > recentAnswersKept {
		l = l[len(l)-recentAnswersKept:]
	}
	r.seen[key] = l
}

// typical is the median of key's recent answers and how many there are (0: none).
func (r *recentAnswers) typical(key string) (consult.Tokens, int) {
	r.mu.Lock()
	l := slices.Clone(r.seen[key])
	r.mu.Unlock()
	if len(l) == 0 {
		return 0, 0
	}
	slices.Sort(l)
	return l[len(l)/2], len(l)
}

// answerKey names the answers a model spec's are like: the model, thinking or not.
func answerKey(m models.Spec) string {
	return fmt.Sprintf("%s|%v|%d", m.ID, m.Thinking, m.Budget)
}

// pricing is what a call's request costs: what the catalog knows of its model, the estimate,
// and the output limit the request carries, which a cap may lower (capCost).
type pricing struct {
	spec    models.Spec    // the model asked
	answers *recentAnswers // this server's recent answers, for the expected price
	catalog Catalog        // what answeredPrice looks the answering model up in; nil: none
	note    func(string)   // puts a note in the call's result

	model      catalog.Model    // what the catalog knows of the model, once looked up
	estimate   *CostEstimate    // the price before sending, once the model is looked up
	price      *providers.Price // the model's prices, when known
	limit      consult.Tokens   // the output limit the request carries
	repriced   bool             // the cost is at the prices of another model than asked (answeredPrice)
	breakpoint bool             // the request marks its files for the provider's cache (cacheBreakpoint)
	// cachedTokens and writtenTokens are the prompt tokens expected from, and written to,
	// the provider's cache.
	cachedTokens, writtenTokens consult.Tokens
}

// typicalAnswer is the answer (and reasoning) the expected price counts, and where it
// comes from.
func (p *pricing) typicalAnswer() (consult.Tokens, string) {
	if n, seen := p.answers.typical(answerKey(p.spec)); seen > 0 {
		return n, fmt.Sprintf("the median of this server's last %d %s of the model", seen, plural(seen, "answer", "answers"))
	}
	n, from := defaultAnswerTokens, "consult's default"
	if m := p.spec; m.Thinking {
		n += cmp.Or(m.Budget, defaultReasoningTokens)
		from = "consult's default with reasoning"
	}
	return n, from
}

// promptBound is the most prompt tokens a provider may count for a request consult counts as
// n: OpenAI's models count with consult's own encoding (o200k), so only the framing is
// added; other tokenizers count code in up to a third more tokens.
func promptBound(model string, n consult.Tokens) consult.Tokens {
	if openAIModel(model) {
		return n + n/50 + promptFraming
	}
	return n + (n+2)/3 + promptFraming
}

// openAIModel reports whether model is one of OpenAI's (o200k encoding), by its name.
func openAIModel(model string) bool {
	m := strings.ToLower(model)
	if vendor, rest, ok := strings.Cut(m, "/"); ok {
		if vendor != "openai" {
			return false
		}
		m = rest
	}
	return strings.HasPrefix(m, "gpt-") || strings.HasPrefix(m, "o1") || strings.HasPrefix(m, "o3") || strings.HasPrefix(m, "o4") || strings.HasPrefix(m, "chatgpt-")
}

// naturalLimit is the output limit a call carries without a cap: the model's largest output
// (defaultOutputLimit when unknown), cut to the room the prompt leaves in the window (the
// prompt taken a tenth larger than consult counts it, and the framing; providers refuse a
// prompt and limit over the window), but never under MinAnswerTokens.
func naturalLimit(rep *Report, maxOutput consult.Tokens) (consult.Tokens, string) {
	n, by := cmp.Or(maxOutput, defaultOutputLimit), LimitModel
	if w := rep.ContextWindow; w > 0 {
		p := rep.PromptTokens
		if room := w - (p + p/10 + promptFraming); room < n {
			n, by = max(room, MinAnswerTokens), LimitWindow
		}
	}
	return n, by
}

// leastOutput is the least output limit a capped call is sent with: MinAnswerTokens, plus
// the thinking budget when one is asked for, never more than the natural limit n.
func (p *pricing) leastOutput(n consult.Tokens) consult.Tokens {
	least := MinAnswerTokens
	if m := p.spec; m.Thinking && m.Budget > 0 {
		least += m.Budget
	}
	return min(least, n)
}

// LongCacheWrite is the price of a prompt token written to Anthropic's one-hour cache, as a
// multiple of its prompt price (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching:
// 1-hour cache writes are 2x the base input price, 5-minute ones 1.25x).
const LongCacheWrite = 2.0

// estimateCost prices rep's request for the model (what the catalog knows of it), with its
// natural output limit, and records it on rep; a cap may lower the limit later (capCost).
// Under longCache a marked request is priced at the one-hour cache's write price. hit says
// whether the request's files are expected from the provider's cache; it is asked only when
// the price is known.
func (p *pricing) estimateCost(rep *Report, longCache bool, hit func() bool) {
	est := &CostEstimate{PromptTokens: rep.PromptTokens, Prices: PriceUnknown}
	est.OutputLimit, est.LimitedBy = naturalLimit(rep, p.model.MaxOutput)
	p.limit = est.OutputLimit
	p.breakpoint = cacheBreakpoint(p.spec.ID, rep)
	if p.model.Price != nil {
		pr := *p.model.Price
		var written consult.Tokens
		if p.breakpoint && longCache {
			pr.CacheWrite = max(pr.CacheWrite, LongCacheWrite*pr.Input) // the one-hour cache's write price
		}
		if hit() {
			est.CachedTokens = rep.Tokens
		} else if p.breakpoint {
			written = rep.Tokens // written to the cache, at its price
		}
		est.BoundTokens = promptBound(p.spec.ID, rep.PromptTokens)
		p.cachedTokens, p.writtenTokens = est.CachedTokens, written
		p.price = &pr
		p.priceEstimate(est)
	}
	p.estimate = est
	rep.Cost = est
}

// priceEstimate fills in est's figures for its output limit, at the call's prices.
func (p *pricing) priceEstimate(est *CostEstimate) {
	pr := *p.price
	typical, from := p.typicalAnswer()
	est.ExpectedAnswer, est.ExpectedFrom = min(typical, est.OutputLimit), from
	expected := pr.Estimate(est.PromptTokens, p.cachedTokens, p.writtenTokens, est.ExpectedAnswer) + pr.Request
	bound := pr.Bound(est.BoundTokens, est.OutputLimit)
	at := pr.At(est.PromptTokens) // the rates shown: a long prompt's where they differ
	est.ExpectedUSD, est.MaxUSD, est.Prices, est.PromptPerM, est.AnswerPerM, est.RequestUSD =
		&expected, &bound, pr.Source, &at.Input, &at.Output, pr.Request
}

// capCost sizes the output limit to a cap of usd (max_cost_usd, or what is left of the daily
// budget: by names which), so that the call's bound fits it. ok is false when even the
// prompt and the least useful output (leastOutput) do not fit: need is then the smallest cap
// that admits the call. The price must be known.
func (p *pricing) capCost(usd float64, by string) (need float64, ok bool) {
	est, pr := p.estimate, *p.price
	least := p.leastOutput(est.OutputLimit)
	if n := pr.LimitFor(usd, est.BoundTokens); n < least {
		return pr.Bound(est.BoundTokens, least), false
	} else if n < est.OutputLimit {
		if est.FullUSD == nil {
			full := *est.MaxUSD
			est.FullLimit, est.FullUSD = est.OutputLimit, &full
		}
		est.OutputLimit, est.LimitedBy = n, by
		p.limit = n
		p.priceEstimate(est)
	}
	return 0, true
}

// answeredPrice is the price of the model that answered resp: the provider may report
// another model than the one asked for (a snapshot, a fallback), and the cost is that
// model's. It is the call's own price when the reported model is the same, unknown to the
// catalog, or unpriced; the first time it differs, the result says so.
func (p *pricing) answeredPrice(resp *providers.Response) *providers.Price {
	if resp == nil || resp.Model == "" || p.catalog == nil || p.spec.ID == "" {
		return p.price
	}
	m, err := p.catalog.Peek(resp.Model)
	if err != nil || m.Price == nil || m.ID == p.model.ID {
		return p.price
	}
	if !p.repriced {
		p.repriced = true
		p.note(fmt.Sprintf("model %s answered, not %s: its cost is at %s's prices (%s)",
			consult.Printable(resp.Model), consult.Printable(p.spec.ID), consult.Printable(m.ID), m.Price.Source))
	}
	return m.Price
}

// usageOf is the provider's accounting in a summary's form; nil when it reported none (a
// refusal stream may send none): never zeros that were not counted.
func (p *pricing) usageOf(resp *providers.Response) *UsageSummary {
	if !resp.Usage.Reported {
		return nil
	}
	ru := resp.Usage
	u := &UsageSummary{
		Input: ru.Input, Output: ru.Output, Reasoning: ru.Reasoning, Cached: ru.Cached, CacheWrite: ru.CacheWrite,
	}
	price := p.answeredPrice(resp)
	switch {
	case ru.CostKnown:
		cost := ru.CostUSD
		u.CostUSD = &cost
	case price != nil:
		cost := price.Cost(ru)
		u.CostUSD, u.CostFromPrices = &cost, true
	}
	if price != nil && (ru.Cached > 0 || ru.CacheWrite > 0) {
		saved := price.Saved(ru)
		u.CacheSavedUSD = &saved
	}
	return u
}

// cacheMinimum is the smallest prefix a provider's prompt cache keeps: 1,024 tokens for
// OpenAI and most of Anthropic's models; 2,048 for Gemini 2.5 (implicit caching), Claude
// Sonnet 4.6, Opus 4.7 and the Haiku 3 models; 4,096 for Gemini 3, Claude Opus 4.5 and 4.6
// and Haiku 4.5 (https://ai.google.dev/gemini-api/docs/caching; Anthropic's minimums as
// https://docs.orq.ai/docs/proxy/prompt-caching and
// https://dev.to/creeta/claudes-prompt-cache-fails-silently-below-1024-tokens-1ch1 list them).
func cacheMinimum(model string) consult.Tokens {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "gemini-3"):
		return 4_096
	case strings.Contains(m, "gemini"):
		return 2_048
	case strings.Contains(m, "claude-opus-4.5"), strings.Contains(m, "claude-opus-4.6"), strings.Contains(m, "claude-haiku-4.5"):
		return 4_096
	case strings.Contains(m, "claude-sonnet-4.6"), strings.Contains(m, "claude-opus-4.7"), strings.Contains(m, "claude-3-haiku"),
		strings.Contains(m, "claude-3.5-haiku"):
		return 2_048
	}
	return 1_024
}

// cacheBreakpoint says whether a request to model marks its files for the provider's cache:
// for the models that cache nothing without a mark (providers.CacheControlled), when the
// files reach the model's minimum cacheable size. Below it the mark caches nothing.
func cacheBreakpoint(model string, rep *Report) bool {
	return providers.CacheControlled(model) && rep.Tokens >= cacheMinimum(model)
}

// cacheTTL is how long a prompt prefix is expected to stay in a provider's cache after it
// was sent: Anthropic's ephemeral cache and OpenAI's keep one for 5 minutes of inactivity
// (at least); Gemini's implicit cache names no time, so the same is assumed.
const cacheTTL = 5 * time.Minute

// sentPrefixes remembers when each prompt prefix (a model and a file set) was last sent,
// so that an estimate can expect a cache hit. The zero value is ready.
type sentPrefixes struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// empty says whether nothing was sent yet.
func (s *sentPrefixes) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.last) == 0
}

func (s *sentPrefixes) seen(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.last[key]
	return ok && now.Sub(t) < cacheTTL
}

func (s *sentPrefixes) note(key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]time.Time{}
	}
	for k, t := range s.last {
		if now.Sub(t) >= cacheTTL {
			delete(s.last, k)
		}
	}
	s.last[key] = now
}

// prefixKey names what a provider's prompt cache holds for a request: the model and the
// file set.
func prefixKey(model, fileSet string) string { return model + "\x00" + fileSet }

// Digests are the SHA-256 digests (hex) of files' contents, by path, from files gathered
// with files.Options.Digests.
func Digests(fs []files.File) map[string]string {
	d := make(map[string]string, len(fs))
	for _, f := range fs {
		d[f.Path] = hex.EncodeToString(f.Digest[:])
	}
	return d
}

// fileSetKey is a digest of a file set, its paths and contents in path order, from the
// files' digests: the same files give the same key, and any change to a path or a byte gives
// another. OpenAI requests carry it as prompt_cache_key, so that requests about the same
// files reach the same cache.
func fileSetKey(digests map[string]string) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(digests)) {
		fmt.Fprintf(h, "%d:%s %s\n", len(p), p, digests[p])
	}
	return "consult-" + hex.EncodeToString(h.Sum(nil)[:16])
}
