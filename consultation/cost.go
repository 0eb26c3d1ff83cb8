package consultation

import (
	"context"
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

// PriceUnknown is what an estimate says of a model with no known price.
const PriceUnknown = "price unknown"

// CostEstimate is the price of a request before it is sent: its prompt tokens at the
// model's prompt price (those expected from the provider's prompt cache at the cache-read
// price) plus the answer allowance at the completion price.
type CostEstimate struct {
	// USD is the estimate in US dollars; absent when the price is unknown.
	USD *float64 `json:"usd,omitempty"`
	// PromptTokens is the prompt as consult counts it; CachedTokens the part of it expected
	// from the provider's cache (the same files were sent to this model a moment ago).
	PromptTokens consult.Tokens `json:"prompt_tokens"`
	CachedTokens consult.Tokens `json:"cached_tokens,omitempty"`
	// AnswerTokens is the answer allowance: the report's answer reserve, or the model's
	// largest output when smaller.
	AnswerTokens consult.Tokens `json:"answer_tokens"`
	// Prices says where the prices come from, with their date, or "price unknown".
	Prices string `json:"prices"`
	// PromptPerM and AnswerPerM are the rates used, in US dollars per million tokens.
	PromptPerM *float64 `json:"prompt_usd_per_million,omitempty"`
	AnswerPerM *float64 `json:"answer_usd_per_million,omitempty"`
}

// Known says whether the estimate has a figure.
func (e *CostEstimate) Known() bool { return e != nil && e.USD != nil }

// pricer is what a Model may also do: price a model (providers.Pricer).
type pricer interface {
	Price(ctx context.Context, model string) (providers.Price, bool, error)
}

// defaultAnswerAllowance is the answer allowance when the model's window is unknown.
const defaultAnswerAllowance = maxAnswerReserve

// lookupPrice finds the model's prices: the provider's (OpenRouter's list, the dated table
// for OpenAI and Gemini) when the server has one, else the dated table by the model's name
// (a dry run without a key). A failed look-up is an unknown price, not a failure.
func (c *call) lookupPrice(ctx context.Context) (providers.Price, bool) {
	id := c.req.Model.ID
	if id == "" {
		return providers.Price{}, false
	}
	if p, ok := c.svc.Model.(pricer); ok && c.svc.Model != nil {
		lctx, cancel := context.WithTimeout(ctx, budgetOf(ctx).lookup())
		pr, known, err := p.Price(lctx, id)
		cancel()
		if err != nil {
			c.svc.logger().Debug("price look-up failed", "model", id, "error", err)
		}
		return pr, known && err == nil
	}
	for _, name := range []string{providers.NameOpenAI, providers.NameGemini} {
		if pr, ok := providers.TablePrice(name, id); ok {
			return pr, true
		}
	}
	return providers.Price{}, false
}

// estimateCost prices rep's request for the call's model and records it on rep.
func (c *call) estimateCost(ctx context.Context, rep *Report) {
	est := &CostEstimate{PromptTokens: rep.PromptTokens, Prices: PriceUnknown}
	est.AnswerTokens = rep.Reserve
	if est.AnswerTokens <= 0 {
		est.AnswerTokens = defaultAnswerAllowance
	}
	pr, ok := c.lookupPrice(ctx)
	if ok {
		if pr.MaxOutput > 0 {
			est.AnswerTokens = min(est.AnswerTokens, pr.MaxOutput)
		}
		var written consult.Tokens
		if c.cacheHitExpected(rep) {
			est.CachedTokens = rep.Tokens
		} else if providers.CacheControlled(c.req.Model.ID) {
			written = rep.Tokens
		}
		usd := pr.Estimate(rep.PromptTokens, est.CachedTokens, written, est.AnswerTokens)
		at := pr.At(rep.PromptTokens) // the rates shown: a long prompt's where they differ
		est.USD, est.Prices, est.PromptPerM, est.AnswerPerM = &usd, pr.Source, &at.Input, &at.Output
		c.price = &pr
	}
	c.estimate = est
	rep.Cost = est
}

// cacheMinimum is the smallest prefix a provider's prompt cache keeps: 1,024 tokens
// (OpenAI, Anthropic), 2,048 for Gemini 2.5 and 4,096 for Gemini 3 (implicit caching).
func cacheMinimum(model string) consult.Tokens {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "gemini-3"):
		return 4_096
	case strings.Contains(m, "gemini"):
		return 2_048
	}
	return 1_024
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
func (c *call) cacheHitExpected(rep *Report) bool {
	return c.fileSet != "" && rep.Tokens >= cacheMinimum(c.req.Model.ID) && c.svc.sent.seen(c.prefixKey(), time.Now())
}

// FileSetKey is a digest of a file set, its paths and contents in path order: the same files
// give the same key, and any change to a path or a byte gives another. OpenAI requests carry
// it as prompt_cache_key, so that requests about the same files reach the same cache.
func FileSetKey(fs []files.File) string { return fileSetKey(Digests(fs)) }

// Digests are the SHA-256 digests (hex) of files' contents, by path.
func Digests(fs []files.File) map[string]string {
	d := make(map[string]string, len(fs))
	for _, f := range fs {
		sum := sha256.Sum256(f.Content)
		d[f.Path] = hex.EncodeToString(sum[:])
	}
	return d
}

// fileSetKey is FileSetKey from the files' digests: each file read once.
func fileSetKey(digests map[string]string) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(digests)) {
		fmt.Fprintf(h, "%d:%s %s\n", len(p), p, digests[p])
	}
	return "consult-" + hex.EncodeToString(h.Sum(nil)[:16])
}
