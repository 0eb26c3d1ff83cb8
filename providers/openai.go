package providers

import (
	"context"
	"regexp"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/consultmcp/consult"
)

// DefaultOpenAIBaseURL is OpenAI's public endpoint.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAI talks to OpenAI's chat-completions API (or any compatible endpoint) through
// openai-go, streaming, with the SDK's retries off.
type OpenAI struct {
	chat chatClient
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI provider. cfg.APIKey is required.
func NewOpenAI(cfg Config) (*OpenAI, error) {
	c, err := newChatClient(NameOpenAI, cfg, DefaultOpenAIBaseURL)
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
	body, err := prepare(NameOpenAI, req, p.Encode)
	if err != nil {
		return &Response{}, err
	}
	return p.chat.stream(ctx, body, obs)
}

// Encode builds req's body once; see [Encoder].
func (p *OpenAI) Encode(req Request) (*Body, error) { return p.chat.encode(req, openAIParams) }

func openAIParams(req Request) openai.ChatCompletionNewParams {
	params := baseParams(req)
	if req.Thinking.On && openAIReasons(req.Model) {
		params.ReasoningEffort = effortFor(req.Thinking.Budget)
	}
	// A budget only picks an effort level for OpenAI, it does not cap reasoning, so no
	// limit is derived from it: the model's own maximum leaves the most room.
	if n := outputLimit(req, false); n > 0 {
		params.MaxCompletionTokens = openai.Int(int64(n))
	}
	return params
}

// effortFor maps a reasoning budget onto OpenAI's effort levels: up to 4k tokens is "low",
// up to 16k "medium", above (or no budget) "high".
func effortFor(budget consult.Tokens) shared.ReasoningEffort {
	switch {
	case budget <= 0:
		return shared.ReasoningEffortHigh
	case budget <= 4_096:
		return shared.ReasoningEffortLow
	case budget <= 16_384:
		return shared.ReasoningEffortMedium
	}
	return shared.ReasoningEffortHigh
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

// ContextWindow reports the input window of well-known OpenAI models from a built-in table
// (OpenAI's API does not publish it); ok is false for other ids.
func (p *OpenAI) ContextWindow(ctx context.Context, model string) (consult.Tokens, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, canceledError(NameOpenAI, ctx, false)
	}
	w, ok := openAIWindow(model)
	return w, ok, nil
}

// openAIWindows holds input-token limits, from OpenAI's model pages. For gpt-5 the window
// is 400k but input is capped at 272k (the rest is reserved for output).
var openAIWindows = map[string]consult.Tokens{
	"gpt-5":         272_000,
	"gpt-5-mini":    272_000,
	"gpt-5-nano":    272_000,
	"gpt-5-pro":     272_000,
	"gpt-5-codex":   272_000,
	"gpt-5-chat":    128_000,
	"gpt-5.1":       272_000,
	"gpt-5.2":       272_000,
	"gpt-4.1":       1_047_576,
	"gpt-4.1-mini":  1_047_576,
	"gpt-4.1-nano":  1_047_576,
	"gpt-4o":        128_000,
	"gpt-4o-mini":   128_000,
	"chatgpt-4o":    128_000,
	"gpt-4-turbo":   128_000,
	"gpt-4.5":       128_000,
	"gpt-4":         8_192,
	"gpt-3.5-turbo": 16_385,
	"o1":            200_000,
	"o1-pro":        200_000,
	"o1-mini":       128_000,
	"o3":            200_000,
	"o3-pro":        200_000,
	"o3-mini":       200_000,
	"o4-mini":       200_000,
	"codex-mini":    200_000,
}

var dateSuffix = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{4}|latest|preview)$`)

// openAIWindow looks model up: exact id, then without a date/"latest"/"preview" suffix,
// then the longest table entry that is a dash-separated prefix of it.
func openAIWindow(model string) (consult.Tokens, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	m = strings.TrimPrefix(m, "openai/")
	for {
		if w, ok := openAIWindows[m]; ok {
			return w, true
		}
		trimmed := dateSuffix.ReplaceAllString(m, "")
		if trimmed == m {
			break
		}
		m = trimmed
	}
	best := ""
	for k := range openAIWindows {
		if strings.HasPrefix(m, k+"-") && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return 0, false
	}
	return openAIWindows[best], true
}
