package providers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/consultmcp/consult"
)

// chatClient streams OpenAI-style chat completions (POST {base}/chat/completions, an SSE
// response) over net/http; OpenAI and OpenRouter share it. It sends each request once:
// the retry loop is the caller's, which knows the deadline.
type chatClient struct {
	name   string
	url    string      // the chat-completions endpoint
	header http.Header // every request's headers, the key's included
	hc     *http.Client
	params func(Request) chatRequest // the provider's request
	redact redactor
	log    *slog.Logger
}

// newChatClient returns the client of provider name; header adds the provider's own headers.
func newChatClient(name string, cfg Config, params func(Request) chatRequest, header map[string]string) (chatClient, error) {
	if err := cfg.check(name); err != nil {
		return chatClient{}, err
	}
	// The endpoint as openai-go resolved it: relative to the base URL, its path ending in "/".
	base, err := url.Parse(baseURL(name, cfg))
	if err != nil {
		return chatClient{}, fmt.Errorf("%s: the base URL: %v", name, err)
	}
	if base.Path != "" && !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	endpoint, _ := base.Parse("chat/completions")
	h := http.Header{
		"Authorization": {"Bearer " + cfg.APIKey},
		"Content-Type":  {"application/json"},
		"Accept":        {"application/json"}, // as openai-go sent it; the body asks for a stream
		"User-Agent":    {"consult/" + consult.Version},
	}
	for k, v := range header {
		h.Set(k, v)
	}
	return chatClient{name: name, url: endpoint.String(), header: h, hc: cfg.httpClient(), params: params,
		redact: redactor{key: cfg.APIKey}, log: cfg.logger()}, nil
}

// chatRequest is the body of a chat-completions request
// (platform.openai.com/docs/api-reference/chat/create; OpenRouter's additions from
// openrouter.ai/docs/api-reference/overview), its fields in the order openai-go wrote them
// (TestBodyPinned).
type chatRequest struct {
	Messages             []chatMessage `json:"messages"`
	Model                string        `json:"model"`
	MaxCompletionTokens  int64         `json:"max_completion_tokens,omitempty"` // OpenAI
	MaxTokens            int64         `json:"max_tokens,omitempty"`            // OpenRouter
	PromptCacheKey       string        `json:"prompt_cache_key,omitempty"`
	PromptCacheRetention string        `json:"prompt_cache_retention,omitempty"`
	ReasoningEffort      string        `json:"reasoning_effort,omitempty"`
	StreamOptions        struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Provider  *routing    `json:"provider,omitempty"`  // OpenRouter's (Config.ZDR)
	Reasoning *reasoning  `json:"reasoning,omitempty"` // OpenRouter's
	Usage     *accounting `json:"usage,omitempty"`     // OpenRouter's
	Stream    bool        `json:"stream"`
}

// routing is OpenRouter's provider routing preferences.
type routing struct {
	DataCollection string `json:"data_collection"`
	ZDR            bool   `json:"zdr"`
}

// reasoning is OpenRouter's reasoning parameter: a token budget or an effort.
type reasoning struct {
	MaxTokens int64  `json:"max_tokens,omitempty"`
	Effort    string `json:"effort,omitempty"`
}

// accounting is OpenRouter's usage accounting: the cost in the usage chunk.
type accounting struct {
	Include bool `json:"include"`
}

// chatMessage is a message: its content a string, or []chatPart.
type chatMessage struct {
	Content any    `json:"content"`
	Role    string `json:"role"`
}

// chatPart is a text part of a message's content, with OpenRouter's cache breakpoint.
type chatPart struct {
	Text         string        `json:"text"`
	Type         string        `json:"type"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// cacheControl is a cache breakpoint: "ephemeral", with Anthropic's "1h" TTL or its default.
type cacheControl struct {
	TTL  string `json:"ttl,omitempty"`
	Type string `json:"type"`
}

// messages lays out the system instruction (if any) and the single user message: one string,
// or, where the provider needs a cache breakpoint (cacheSplit), two text parts, the files
// marked with cache_control and the question after them.
func messages(name string, req Request) []chatMessage {
	msgs := make([]chatMessage, 0, 2)
	if req.System != "" {
		msgs = append(msgs, chatMessage{Content: req.System, Role: "system"})
	}
	if !cacheSplit(name, req) {
		return append(msgs, chatMessage{Content: req.Prompt, Role: "user"})
	}
	// OpenRouter's prompt caching for Anthropic models: a cache_control breakpoint on a text
	// part of the message's content (https://openrouter.ai/docs/features/prompt-caching,
	// "cache_control": {"type": "ephemeral"}); everything up to it is cached.
	files := chatPart{Text: req.Prompt, Type: "text", CacheControl: &cacheControl{Type: "ephemeral"}}
	if req.LongCache {
		files.CacheControl.TTL = "1h" // Anthropic's one-hour cache, written at twice the prompt price
	}
	return append(msgs, chatMessage{Role: "user",
		Content: []chatPart{files, {Text: req.Question, Type: "text"}}})
}

// cacheSplit says whether req's message goes as two parts, the files with a cache breakpoint
// and the question: OpenRouter requests to the models that cache nothing without one, when
// the caller asks for it (Request.CacheBreakpoint).
func cacheSplit(name string, req Request) bool {
	return name == NameOpenRouter && req.Question != "" && req.CacheBreakpoint && CacheControlled(req.Model)
}

// baseParams is the request every chat provider sends: model, messages, a stream with usage.
func baseParams(name string, req Request) chatRequest {
	r := chatRequest{Model: req.Model, Messages: messages(name, req), Stream: true}
	r.StreamOptions.IncludeUsage = true
	return r
}

func validate(name string, req Request) error {
	if strings.TrimSpace(req.Model) == "" {
		return &Error{Provider: name, Kind: BadRequest, Message: "no model given"}
	}
	return nil
}

// encode builds req's body: the provider's request (c.params) is encoded with [promptMark]
// as the user message, and the message is escaped in its place.
func (c *chatClient) encode(req Request) (*Body, error) {
	if err := validate(c.name, req); err != nil {
		return nil, err
	}
	r := req
	r.Prompt, r.Text, r.Body = promptMark, nil, nil
	if !cacheSplit(c.name, req) {
		r.Question = "" // spliced in after the files, in the one message
	} else {
		req.Question = "" // a content part of its own, encoded with the rest
	}
	var envelope bytes.Buffer
	enc := json.NewEncoder(&envelope)
	enc.SetEscapeHTML(false)    // JSON needs none; openai-go wrote "<" as it is
	_ = enc.Encode(c.params(r)) // strings, numbers and booleans: it cannot fail
	return spliceMessage(c.name, bytes.TrimSuffix(envelope.Bytes(), []byte("\n")), req)
}

// chatChunk is one event of the stream (platform.openai.com/docs/api-reference/chat-streaming),
// with OpenRouter's additions: reasoning deltas, the upstream model's native_finish_reason,
// and an error member in a 200 stream.
type chatChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
			// Reasoning is OpenRouter's reasoning text; ReasoningContent the same as
			// DeepSeek-style compatible servers send it.
			Reasoning        string `json:"reasoning"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason       string `json:"finish_reason"`
		NativeFinishReason string `json:"native_finish_reason"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chatUsage is an OpenAI-style usage object, with OpenRouter's cost and cache writes
// (https://openrouter.ai/docs/use-cases/usage-accounting).
type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	Cost *float64 `json:"cost"` // US dollars
}

// usage converts u.
func (u *chatUsage) usage() *Usage {
	if u == nil {
		return nil
	}
	reasoning := consult.Tokens(u.CompletionTokensDetails.ReasoningTokens)
	out := &Usage{
		Reported:   true,
		Input:      consult.Tokens(u.PromptTokens),
		Output:     max(consult.Tokens(u.CompletionTokens)-reasoning, 0),
		Reasoning:  reasoning,
		Cached:     consult.Tokens(u.PromptTokensDetails.CachedTokens),
		CacheWrite: max(consult.Tokens(u.PromptTokensDetails.CacheWriteTokens), 0),
	}
	if u.Cost != nil {
		out.CostUSD, out.CostKnown = *u.Cost, true
	}
	return out
}

// decodeChunk decodes an event's data. A member of an unexpected type is left at its zero
// value, as openai-go did; only data that is not JSON fails.
func decodeChunk(data []byte, chunk *chatChunk) error {
	err := json.Unmarshal(data, chunk)
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

// stream sends req's body (req.Body, else req encoded now) once and reads the stream to
// its end.
func (c *chatClient) stream(ctx context.Context, req Request, obs Observer) (*Response, error) {
	body, err := prepare(c.name, req, c.encode)
	if err != nil {
		return &Response{}, err
	}
	obs = observer(obs)
	resp := &Response{}
	run := startRun(c.name, body, c.redact, c.log)

	httpReq, err := body.newRequest(ctx, c.url)
	if err != nil {
		return run.end(ctx, resp, err, nil)
	}
	httpReq.Header = c.header.Clone()
	httpResp, err := c.hc.Do(httpReq)
	if err != nil {
		return run.end(ctx, resp, err, nil)
	}
	defer httpResp.Body.Close()
	if httpResp.StatusCode >= 400 {
		return run.end(ctx, resp, c.statusError(httpResp), nil)
	}

	var (
		refusal answerText
		usage   *chatUsage
		inBand  bool // err is an error event of the stream
	)
	refusals, _ := obs.(RefusalObserver)
	events := newSSEReader(httpResp.Body)
	for !run.capped {
		ev, rerr := events.Next()
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // an empty event carries nothing
		}
		var chunk chatChunk
		derr := decodeChunk(ev.Data, &chunk)
		if ev.Type == "error" || derr == nil && len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			err, inBand = c.inBandError(ev.Data, &chunk, run.text.Len() > 0), true
			if usage == nil {
				// An error event may carry the usage so far (OpenRouter sends it when a
				// reasoning model hits its limit mid-stream): the tokens were spent, so keep them.
				usage = chunk.Usage
			}
			break
		}
		if derr != nil {
			err = fmt.Errorf("cannot decode an event of the stream: %w", derr)
			break
		}
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if r := cmp.Or(ch.Delta.Reasoning, ch.Delta.ReasoningContent); r != "" {
				obs.Reasoning(run.meter.add(r), r)
			}
			if d := ch.Delta.Content; d != "" {
				run.answer(obs, d, ev.Cut)
			}
			if r := ch.Delta.Refusal; r != "" {
				// A refusal is not an answer: kept apart, bounded like one.
				if kept, _ := refusal.add(r); kept != "" && refusals != nil {
					refusals.Refusal(kept)
				}
			}
			if ch.FinishReason != "" {
				resp.Finish = normaliseFinish(ch.FinishReason)
				resp.StopReason = stopReason(ch.FinishReason, ch.NativeFinishReason)
				run.finished = true
			}
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
			run.reasoningSoFar(obs, consult.Tokens(usage.CompletionTokensDetails.ReasoningTokens))
		}
	}
	run.settle(resp, usage.usage())
	resp.Refusal = refusal.String()
	if err != nil && !inBand && run.finished && ctx.Err() == nil {
		// The answer was complete; only the tail (usage, [DONE]) was lost.
		c.log.Debug("stream failed after the finish", "provider", c.name, "error", c.redact.clean(err.Error()))
		err = nil
	}
	return run.end(ctx, resp, err, nil)
}

// stopReason names a stop as the provider did: its reason, and the native one behind it
// when that says more ("content_filter (SAFETY)").
func stopReason(reason, native string) string {
	if native == "" || strings.EqualFold(native, reason) {
		return reason
	}
	return reason + " (" + native + ")"
}

// chatErrorBody is the error object of OpenAI and OpenRouter ({"error": {...}}); OpenRouter
// sends a numeric code and wraps the upstream provider's message in metadata.raw.
type chatErrorBody struct {
	Code     json.RawMessage `json:"code"`
	Message  string          `json:"message"`
	Type     string          `json:"type"`
	Metadata struct {
		Raw          any    `json:"raw"`
		ProviderName string `json:"provider_name"`
		// Headers are the rate-limit headers OpenRouter copies into a 429's metadata
		// ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset").
		Headers map[string]any `json:"headers"`
	} `json:"metadata"`
}

// openRouterQuotaRE finds the limit OpenRouter names in a 429: "Rate limit exceeded:
// free-models-per-day. Add 10 credits to unlock 1000 free model requests per day".
var openRouterQuotaRE = regexp.MustCompile(`(?i)rate limit exceeded: ([a-z0-9][a-z0-9-]*[a-z0-9])`)

// quota reads the quota a rate-limit error body names (OpenRouter's "free-models-per-day",
// "free-models-per-min"), with its limit and reset from metadata.headers
// (X-RateLimit-Reset is in milliseconds since the epoch, openrouter.ai/docs/api-reference/limits);
// nil when it names none.
func (b chatErrorBody) quota() *Quota {
	m := openRouterQuotaRE.FindStringSubmatch(b.Message)
	if m == nil {
		return nil
	}
	q := &Quota{ID: m[1], Period: quotaPeriod(m[1])}
	header := func(name string) (float64, bool) {
		for k, v := range b.Metadata.Headers {
			if strings.EqualFold(k, name) {
				return toFloat(v)
			}
		}
		return 0, false
	}
	if n, ok := header("X-RateLimit-Limit"); ok && n > 0 && n < 1e15 {
		q.Limit = int64(n)
	}
	if ms, ok := header("X-RateLimit-Reset"); ok && ms > 1e12 && ms < 1e14 {
		q.ResetsAt = time.UnixMilli(int64(ms))
	}
	return q
}

func (b chatErrorBody) text() string {
	msg := b.Message
	if b.Metadata.Raw != nil {
		raw, ok := b.Metadata.Raw.(string)
		if !ok {
			bs, _ := json.Marshal(b.Metadata.Raw)
			raw = string(bs)
		}
		if raw != "" && !strings.Contains(msg, raw) {
			msg += " (" + raw + ")"
		}
	}
	if b.Metadata.ProviderName != "" {
		msg += " [upstream: " + b.Metadata.ProviderName + "]"
	}
	return msg
}

// errorBody reads the error object in data: its "error" member (an object, or a string
// taken as the message), or for an in-band "error" event without one, data itself. When
// nothing gives a message, an HTTP error's message is its body's text (a proxy's page),
// and an in-band error's is the event's text if that is not JSON.
func errorBody(data []byte, inBand bool) chatErrorBody {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	raw := env.Error
	if len(raw) == 0 && inBand {
		raw = data
	}
	var body chatErrorBody
	if json.Unmarshal(raw, &body) != nil {
		_ = json.Unmarshal(raw, &body.Message)
	}
	if body.Message == "" && (!inBand || !json.Valid(data)) {
		body.Message = string(data)
	}
	return body
}

// statusError is the error of an HTTP error status, read from its body (its first 64 KiB)
// and headers (Retry-After, x-ratelimit-reset-*).
func (c *chatClient) statusError(res *http.Response) *Error {
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	body := errorBody(data, false)
	code := codeString(body.Code)
	msg := body.text()
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
	}
	e := &Error{Provider: c.name, Kind: refine(kindForStatus(res.StatusCode), code, msg), Status: res.StatusCode,
		Code: code, Message: c.redact.clean(msg), RetryAfter: retryHint(res.Header, msg, time.Now())}
	if e.Kind == RateLimited {
		e.Quota = body.quota()
	}
	return finished(e, msg)
}

// inBandError is the error of an error event inside a 200 stream, its data
// {"error": {"code": 502, "message": "..."}} and chunk as decoded from it.
func (c *chatClient) inBandError(data []byte, chunk *chatChunk, partial bool) *Error {
	body := errorBody(data, true)
	code := codeString(body.Code)
	kind := Server
	n, convErr := strconv.Atoi(code)
	switch typ := strings.ToLower(code + " " + body.Type); {
	case convErr == nil && n >= 400:
		kind = kindForStatus(n)
	case strings.Contains(typ, "rate_limit"):
		kind = RateLimited
	case strings.Contains(typ, "invalid_request"):
		// OpenAI's error type for a request it will not serve as sent
		// (platform.openai.com/docs/guides/error-codes): a client error, not a server one.
		kind = BadRequest
	}
	// The choice's native reason says what the generic error hides ("MAX_TOKENS").
	detail := body.text()
	if len(chunk.Choices) > 0 && chunk.Choices[0].NativeFinishReason != "" {
		detail += " (" + chunk.Choices[0].NativeFinishReason + ")"
	}
	return finished(&Error{Provider: c.name, Kind: refine(kind, code, detail), Code: code,
		Message: c.redact.clean(body.text()), InBand: true, Partial: partial,
		RetryAfter: retryInText(body.text())}, detail)
}
