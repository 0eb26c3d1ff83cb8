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

// answerKey names the answers the call's are like: the model, thinking or not.
func (c *call) answerKey() string {
	return fmt.Sprintf("%s|%v|%d", c.req.Model.ID, c.req.Model.Thinking, c.req.Model.Budget)
}

// typicalAnswer is the answer (and reasoning) the expected price counts, and where it
// comes from.
func (c *call) typicalAnswer() (consult.Tokens, string) {
	if n, seen := c.svc.answers.typical(c.answerKey()); seen > 0 {
		return n, fmt.Sprintf("the median of this server's last %d %s of the model", seen, plural(seen, "answer", "answers"))
	}
	n, from := defaultAnswerTokens, "consult's default"
	if m := c.req.Model; m.Thinking {
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
func (c *call) naturalLimit(rep *Report, maxOutput consult.Tokens) (consult.Tokens, string) {
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
func (c *call) leastOutput(n consult.Tokens) consult.Tokens {
	least := MinAnswerTokens
	if m := c.req.Model; m.Thinking && m.Budget > 0 {
		least += m.Budget
	}
	return min(least, n)
}

// LongCacheWrite is the price of a prompt token written to Anthropic's one-hour cache, as a
// multiple of its prompt price (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching:
// 1-hour cache writes are 2x the base input price, 5-minute ones 1.25x).
const LongCacheWrite = 2.0

// estimateCost prices rep's request for the call's model (what the catalog knows of it),
// with its natural output limit, and records it on rep; a cap may lower the limit later
// (capCost).
func (c *call) estimateCost(rep *Report) {
	est := &CostEstimate{PromptTokens: rep.PromptTokens, Prices: PriceUnknown}
	c.badPrice = c.model.BadPrice
	est.OutputLimit, est.LimitedBy = c.naturalLimit(rep, c.model.MaxOutput)
	c.limit = est.OutputLimit
	c.breakpoint = c.cacheBreakpoint(rep)
	if c.model.Price != nil {
		pr := *c.model.Price
		var written consult.Tokens
		if c.breakpoint && c.svc.LongCache {
			pr.CacheWrite = max(pr.CacheWrite, LongCacheWrite*pr.Input) // the one-hour cache's write price
		}
		if c.cacheHitExpected(rep) {
			est.CachedTokens = rep.Tokens
		} else if c.breakpoint {
			written = rep.Tokens // written to the cache, at its price
		}
		est.BoundTokens = promptBound(c.req.Model.ID, rep.PromptTokens)
		c.cachedTokens, c.writtenTokens = est.CachedTokens, written
		c.price = &pr
		c.priceEstimate(est)
	}
	c.estimate = est
	rep.Cost = est
}

// priceEstimate fills in est's figures for its output limit, at the call's prices.
func (c *call) priceEstimate(est *CostEstimate) {
	pr := *c.price
	typical, from := c.typicalAnswer()
	est.ExpectedAnswer, est.ExpectedFrom = min(typical, est.OutputLimit), from
	expected := pr.Estimate(est.PromptTokens, c.cachedTokens, c.writtenTokens, est.ExpectedAnswer) + pr.Request
	bound := pr.Bound(est.BoundTokens, est.OutputLimit)
	at := pr.At(est.PromptTokens) // the rates shown: a long prompt's where they differ
	est.ExpectedUSD, est.MaxUSD, est.Prices, est.PromptPerM, est.AnswerPerM, est.RequestUSD =
		&expected, &bound, pr.Source, &at.Input, &at.Output, pr.Request
}

// capCost sizes the call's output limit to a cap of usd (max_cost_usd, or what is left of
// the daily budget: by names which), so that the call's bound fits it. ok is false when even
// the prompt and the least useful output (leastOutput) do not fit: need is then the
// smallest cap that admits the call. The price must be known.
func (c *call) capCost(usd float64, by string) (need float64, ok bool) {
	est, pr := c.estimate, *c.price
	least := c.leastOutput(est.OutputLimit)
	if n := pr.LimitFor(usd, est.BoundTokens); n < least {
		return pr.Bound(est.BoundTokens, least), false
	} else if n < est.OutputLimit {
		if est.FullUSD == nil {
			full := *est.MaxUSD
			est.FullLimit, est.FullUSD = est.OutputLimit, &full
		}
		est.OutputLimit, est.LimitedBy = n, by
		c.limit = n
		c.priceEstimate(est)
	}
	return 0, true
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

// cacheBreakpoint says whether the call's request marks its files for the provider's cache:
// for the models that cache nothing without a mark (providers.CacheControlled), when the
// files reach the model's minimum cacheable size. Below it the mark caches nothing.
func (c *call) cacheBreakpoint(rep *Report) bool {
	return providers.CacheControlled(c.req.Model.ID) && rep.Tokens >= cacheMinimum(c.req.Model.ID)
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

// prefixKey names what a provider's prompt cache holds for this call: the model and the
// file set.
func (c *call) prefixKey() string { return c.req.Model.ID + "\x00" + c.fileSet }

// cacheHitExpected says whether the call's files were sent to its model within cacheTTL,
// and are large enough for the provider to cache.
// A dry run's files are digested here, only when something was sent within cacheTTL.
func (c *call) cacheHitExpected(rep *Report) bool {
	if rep.Tokens < cacheMinimum(c.req.Model.ID) || c.svc.sent.empty() {
		return false
	}
	if c.fileSet == "" && c.req.DryRun && c.gathered != nil {
		c.fileSet = fileSetKey(Digests(c.gathered.Files))
	}
	return c.fileSet != "" && c.svc.sent.seen(c.prefixKey(), time.Now())
}

// Digests are the SHA-256 digests (hex) of files' contents, by path.
func Digests(fs []files.File) map[string]string {
	d := make(map[string]string, len(fs))
	for _, f := range fs {
		sum := sha256.Sum256(f.Content)
		d[f.Path] = hex.EncodeToString(sum[:])
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
