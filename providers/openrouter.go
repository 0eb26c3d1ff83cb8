package providers

import (
	"context"
	"errors"
	"strings"
)

// OpenRouter talks to OpenRouter's OpenAI-compatible API, streaming, over net/http, with
// usage accounting on (cost) and reasoning deltas read from the stream.
type OpenRouter struct {
	chat chatClient
	zdr  bool // requests ask for endpoints that keep no data (Config.ZDR)
}

var _ Provider = (*OpenRouter)(nil)

// NewOpenRouter returns an OpenRouter provider. cfg.APIKey is required; cfg.BaseURL
// defaults to OpenRouter's public endpoint ([Spec.DefaultBaseURL]).
func NewOpenRouter(cfg Config) (*OpenRouter, error) {
	params := func(req Request) chatRequest { return openRouterParams(req, cfg.ZDR) }
	// OpenRouter's app attribution (openrouter.ai/docs/app-attribution; X-Title is still read).
	c, err := newChatClient(NameOpenRouter, cfg, params, map[string]string{
		"HTTP-Referer": "https://github.com/consultmcp/consult",
		"X-Title":      "consult",
	})
	if err != nil {
		return nil, err
	}
	return &OpenRouter{chat: c, zdr: cfg.ZDR}, nil
}

// Name returns "openrouter".
func (p *OpenRouter) Name() string { return NameOpenRouter }

// Stream sends req once; see [Provider.Stream]. Thinking maps to OpenRouter's reasoning
// parameter ({"max_tokens": N} with a budget, {"effort": "high"} without), reasoning
// deltas are reported to obs, and usage accounting is requested so Usage carries the cost.
func (p *OpenRouter) Stream(ctx context.Context, req Request, obs Observer) (*Response, error) {
	resp, err := p.chat.stream(ctx, req, obs)
	var e *Error
	if p.zdr && errors.As(err, &e) && e.Kind == NotFound && strings.Contains(strings.ToLower(e.Message), "data policy") {
		e.Message += " (this server asks for zero data retention, --zdr, and this model has no endpoint that keeps no data: choose another model)"
	}
	return resp, err
}

// Encode builds req's body once; see [Encoder].
func (p *OpenRouter) Encode(req Request) (*Body, error) { return p.chat.encode(req) }

func openRouterParams(req Request, zdr bool) chatRequest {
	params := baseParams(NameOpenRouter, req)
	params.Usage = &accounting{Include: true}
	if zdr {
		// Zero data retention: provider routing preferences
		// (https://openrouter.ai/docs/guides/routing/provider-selection) with "zdr": true (only
		// endpoints that keep no prompt) and "data_collection": "deny" (only providers that do
		// not store or train on it). A model without such an endpoint is refused by OpenRouter
		// (404, "No endpoints found matching your data policy"), never served elsewhere.
		params.Provider = &routing{DataCollection: "deny", ZDR: true}
	}
	if t := req.Thinking; t.On && t.Budget > 0 {
		params.Reasoning = &reasoning{MaxTokens: int64(budgetWithin(t.Budget, req.OutputLimit))}
	} else if t.On {
		params.Reasoning = &reasoning{Effort: "high"}
	}
	if n := outputLimit(req, true); n > 0 {
		params.MaxTokens = int64(n)
	}
	return params
}
