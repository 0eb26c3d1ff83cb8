package providers

import (
	"context"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// OpenRouter talks to OpenRouter's OpenAI-compatible API through openai-go, streaming,
// with the SDK's retries off, usage accounting on (cost) and reasoning deltas read from
// the stream.
type OpenRouter struct {
	chat chatClient
}

var _ Provider = (*OpenRouter)(nil)

// NewOpenRouter returns an OpenRouter provider. cfg.APIKey is required; cfg.BaseURL
// defaults to OpenRouter's public endpoint ([Spec.DefaultBaseURL]).
func NewOpenRouter(cfg Config) (*OpenRouter, error) {
	c, err := newChatClient(NameOpenRouter, cfg, openRouterParams,
		option.WithHeader("HTTP-Referer", "https://github.com/consultmcp/consult"),
		option.WithHeader("X-Title", "consult"),
		// openai-go adds these from OPENAI_ORG_ID / OPENAI_PROJECT_ID; they are OpenAI's.
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	)
	if err != nil {
		return nil, err
	}
	return &OpenRouter{chat: c}, nil
}

// Name returns "openrouter".
func (p *OpenRouter) Name() string { return NameOpenRouter }

// Stream sends req once; see [Provider.Stream]. Thinking maps to OpenRouter's reasoning
// parameter ({"max_tokens": N} with a budget, {"effort": "high"} without), reasoning
// deltas are reported to obs, and usage accounting is requested so Usage carries the cost.
func (p *OpenRouter) Stream(ctx context.Context, req Request, obs Observer) (*Response, error) {
	return p.chat.stream(ctx, req, obs)
}

// Encode builds req's body once; see [Encoder].
func (p *OpenRouter) Encode(req Request) (*Body, error) { return p.chat.encode(req) }

func openRouterParams(req Request) openai.ChatCompletionNewParams {
	params := baseParams(NameOpenRouter, req)
	extra := map[string]any{"usage": map[string]any{"include": true}}
	if t := req.Thinking; t.On {
		if t.Budget > 0 {
			extra["reasoning"] = map[string]any{"max_tokens": int64(budgetWithin(t.Budget, req.OutputLimit))}
		} else {
			extra["reasoning"] = map[string]any{"effort": "high"}
		}
	}
	if n := outputLimit(req, true); n > 0 {
		params.MaxTokens = openai.Int(int64(n))
	}
	params.SetExtraFields(extra)
	return params
}
