package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/consultmcp/consult"
)

const (
	// ModelsTTL is how long OpenRouter's model list is cached in-process: long enough that
	// a burst of calls costs one look-up, short enough that a new model shows up within
	// minutes.
	ModelsTTL = 5 * time.Minute
	// modelsFetchTimeout bounds a model-list fetch that outlives the call that started it
	// (callers stop waiting when their own context ends; the fetch finishes for the next).
	modelsFetchTimeout = 15 * time.Second
)

// OpenRouter talks to OpenRouter's OpenAI-compatible API through openai-go, streaming,
// with the SDK's retries off, usage accounting on (cost) and reasoning deltas read from
// the stream.
type OpenRouter struct {
	chat chatClient

	mu       sync.Mutex
	list     map[string]openRouterModel
	fetched  time.Time
	fetching *modelsFetch
}

// openRouterModel is what consult keeps of a model in OpenRouter's list.
type openRouterModel struct {
	window consult.Tokens
	price  Price
	priced bool
	bad    error // the listed prices are bad data (ErrBadPrice)
}

type modelsFetch struct {
	done chan struct{}
	list map[string]openRouterModel
	err  error
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

// ContextWindow looks model up in OpenRouter's model list (GET /models), which is fetched
// at most once per [ModelsTTL]. A model missing from the list is a [NotFound] error.
func (p *OpenRouter) ContextWindow(ctx context.Context, model string) (consult.Tokens, bool, error) {
	m, err := p.model(ctx, model)
	if err != nil {
		return 0, false, err
	}
	return m.window, m.window > 0, nil
}

// Price looks model up in OpenRouter's model list (its pricing object), fetched and cached
// with the windows (see [OpenRouter.ContextWindow]); see [Pricer]. A model listed without
// a fixed price has ok false.
func (p *OpenRouter) Price(ctx context.Context, model string) (Price, bool, error) {
	m, err := p.model(ctx, model)
	if err != nil {
		return Price{}, false, err
	}
	if m.bad != nil {
		return Price{}, false, fmt.Errorf("OpenRouter's model list prices %s: %w", model, m.bad)
	}
	return m.price, m.priced, nil
}

// model finds id in the model list; a model missing from it is a [NotFound] error.
func (p *OpenRouter) model(ctx context.Context, model string) (openRouterModel, error) {
	list, err := p.models(ctx)
	if err != nil {
		return openRouterModel{}, err
	}
	id := strings.TrimSpace(model)
	if m, ok := list[id]; ok {
		return m, nil
	}
	// Routing variants (":nitro", ":floor", ":online", ":thinking") are not listed.
	if base, _, ok := strings.Cut(id, ":"); ok {
		if m, ok := list[base]; ok {
			return m, nil
		}
	}
	return openRouterModel{}, &Error{Provider: NameOpenRouter, Kind: NotFound,
		Message: fmt.Sprintf("model %q is not in OpenRouter's model list", id)}
}

// models returns the cached model list, fetching it when stale. Concurrent callers share
// one fetch; each waits only as long as its own ctx allows.
func (p *OpenRouter) models(ctx context.Context) (map[string]openRouterModel, error) {
	p.mu.Lock()
	if p.list != nil && time.Since(p.fetched) < ModelsTTL {
		w := p.list
		p.mu.Unlock()
		return w, nil
	}
	f := p.fetching
	if f == nil {
		f = &modelsFetch{done: make(chan struct{})}
		p.fetching = f
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), modelsFetchTimeout)
		go func() {
			defer cancel()
			f.list, f.err = p.fetchModels(fctx)
			p.mu.Lock()
			if f.err == nil {
				p.list, p.fetched = f.list, time.Now()
			}
			p.fetching = nil
			p.mu.Unlock()
			close(f.done)
		}()
	}
	p.mu.Unlock()

	select {
	case <-f.done:
		return f.list, f.err
	case <-ctx.Done():
		return nil, canceledError(NameOpenRouter, ctx, false)
	}
}

// openRouterModels is the part of GET /models we read.
type openRouterModels struct {
	Data []struct {
		ID            string `json:"id"`
		ContextLength int64  `json:"context_length"`
		TopProvider   struct {
			ContextLength       int64 `json:"context_length"`
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
		} `json:"top_provider"`
		Pricing OpenRouterPricing `json:"pricing"`
	} `json:"data"`
}

func (p *OpenRouter) fetchModels(ctx context.Context) (map[string]openRouterModel, error) {
	var raw []byte
	var httpResp *http.Response
	err := p.chat.client.Get(ctx, "models", nil, &raw, option.WithResponseInto(&httpResp))
	if err != nil {
		return nil, p.chat.convert(ctx, err, httpResp, false)
	}
	var list openRouterModels
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, &Error{Provider: NameOpenRouter, Kind: Transport,
			Message: "cannot decode the model list: " + p.chat.redact.clean(err.Error()), Err: err}
	}
	models := make(map[string]openRouterModel, len(list.Data))
	for _, m := range list.Data {
		w := m.ContextLength
		if w <= 0 {
			w = m.TopProvider.ContextLength
		}
		price, priced, bad := m.Pricing.Price()
		price.MaxOutput = consult.Tokens(max(m.TopProvider.MaxCompletionTokens, 0))
		models[m.ID] = openRouterModel{window: consult.Tokens(w), price: price, priced: priced, bad: bad}
	}
	p.chat.log.Debug("fetched model list", "provider", NameOpenRouter, "models", len(models))
	return models, nil
}
