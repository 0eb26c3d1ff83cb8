package providers

import (
	"context"
	"regexp"
	"strings"

	"github.com/consultmcp/consult"
)

// OpenAI talks to OpenAI's chat-completions API (or any compatible endpoint), streaming,
// over net/http.
type OpenAI struct {
	chat chatClient
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI provider. cfg.APIKey is required.
func NewOpenAI(cfg Config) (*OpenAI, error) {
	c, err := newChatClient(NameOpenAI, cfg, openAIParams, nil)
	if err != nil {
		return nil, err
	}
	return &OpenAI{chat: c}, nil
}

// Name returns "openai".
func (p *OpenAI) Name() string { return NameOpenAI }

// Stream sends req once; see [Provider.Stream]. Thinking maps to reasoning_effort for
// reasoning models (o-series, gpt-5, and ids this package does not recognise); the output
// limit is max_completion_tokens.
func (p *OpenAI) Stream(ctx context.Context, req Request, obs Observer) (*Response, error) {
	return p.chat.stream(ctx, req, obs)
}

// Encode builds req's body once; see [Encoder].
func (p *OpenAI) Encode(req Request) (*Body, error) { return p.chat.encode(req) }

func openAIParams(req Request) chatRequest {
	params := baseParams(NameOpenAI, req)
	if req.CacheKey != "" {
		// https://platform.openai.com/docs/guides/prompt-caching: requests with the same
		// prompt_cache_key and prefix are routed to the same cache.
		params.PromptCacheKey = req.CacheKey
	}
	if req.LongCache {
		// https://platform.openai.com/docs/guides/prompt-caching#prompt-cache-retention:
		// extended retention keeps a cached prefix up to 24 hours, at the same prices.
		params.PromptCacheRetention = "24h"
	}
	if req.Thinking.On && openAIReasons(req.Model) {
		params.ReasoningEffort = effortFor(req.Thinking.Budget)
	}
	// A budget only picks an effort level for OpenAI, it does not cap reasoning, so no
	// limit is derived from it: the model's own maximum leaves the most room.
	if n := outputLimit(req, false); n > 0 {
		params.MaxCompletionTokens = int64(n)
	}
	return params
}

// effortFor maps a reasoning budget onto OpenAI's effort levels: up to 4k tokens is "low",
// up to 16k "medium", above (or no budget) "high".
func effortFor(budget consult.Tokens) string {
	switch {
	case budget <= 0:
		return "high"
	case budget <= 4_096:
		return "low"
	case budget <= 16_384:
		return "medium"
	}
	return "high"
}

var nonReasoningOpenAI = regexp.MustCompile(`^(gpt-4|gpt-3\.5|chatgpt-|gpt-5[^-]*-chat)`)

// openAIReasons reports whether model accepts reasoning_effort: not the known
// non-reasoning families (gpt-4*, gpt-3.5*, chatgpt-*, gpt-5*-chat); everything else,
// including ids we do not know, gets it.
func openAIReasons(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return !nonReasoningOpenAI.MatchString(m)
}
