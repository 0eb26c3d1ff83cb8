package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/consultmcp/consult"
)

// chatClient streams OpenAI-style chat completions; OpenAI and OpenRouter share it.
type chatClient struct {
	name   string
	client openai.Client
	params func(Request) openai.ChatCompletionNewParams // the provider's request
	redact redactor
	log    *slog.Logger
}

func newChatClient(name string, cfg Config, params func(Request) openai.ChatCompletionNewParams,
	extra ...option.RequestOption) (chatClient, error) {
	if err := cfg.checkKey(name); err != nil {
		return chatClient{}, err
	}
	hc := *cfg.httpClient()
	hc.Transport = &chatTransport{base: hc.Transport}
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(baseURL(name, cfg)),
		option.WithHTTPClient(&hc),
		// The retry loop is ours: only the caller knows the deadline.
		option.WithMaxRetries(0),
	}
	opts = append(opts, extra...)
	return chatClient{
		name:   name,
		client: openai.NewClient(opts...),
		params: params,
		redact: redactor{key: cfg.APIKey},
		log:    cfg.logger(),
	}, nil
}

// messages lays out the system instruction (if any) and the single user message: one string,
// or, where the provider needs a cache breakpoint (cacheSplit), two text parts, the files
// marked with cache_control and the question after them.
func messages(name string, req Request) []openai.ChatCompletionMessageParamUnion {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, 2)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	if !cacheSplit(name, req) {
		return append(msgs, openai.UserMessage(req.Prompt))
	}
	// OpenRouter's prompt caching for Anthropic models: a cache_control breakpoint on a text
	// part of the message's content (https://openrouter.ai/docs/features/prompt-caching,
	// "cache_control": {"type": "ephemeral"}); everything up to it is cached.
	files := openai.ChatCompletionContentPartTextParam{Text: req.Prompt}
	mark := map[string]any{"type": "ephemeral"}
	if req.LongCache {
		mark["ttl"] = "1h" // Anthropic's one-hour cache, written at twice the prompt price
	}
	files.SetExtraFields(map[string]any{"cache_control": mark})
	question := openai.ChatCompletionContentPartTextParam{Text: req.Question}
	return append(msgs, openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		{OfText: &files}, {OfText: &question},
	}))
}

// cacheSplit says whether req's message goes as two parts, the files with a cache breakpoint
// and the question: OpenRouter requests to the models that cache nothing without one, when
// the caller asks for it (Request.CacheBreakpoint).
func cacheSplit(name string, req Request) bool {
	return name == NameOpenRouter && req.Question != "" && req.CacheBreakpoint && CacheControlled(req.Model)
}

// baseParams is the request every chat provider sends: model, messages, usage in the stream.
func baseParams(name string, req Request) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         req.Model,
		Messages:      messages(name, req),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

func validate(name string, req Request) error {
	if strings.TrimSpace(req.Model) == "" {
		return &Error{Provider: name, Kind: BadRequest, Message: "no model given"}
	}
	return nil
}

// encode builds req's body: the SDK encodes the provider's request (c.params), with
// [promptMark] as the user message, and the message is escaped in its place. The SDK's
// streaming call adds "stream": true to the object's end (option.WithJSONSet); so does
// encode, since the body is sent as it is (see stream).
func (c *chatClient) encode(req Request) (*Body, error) {
	if err := validate(c.name, req); err != nil {
		return nil, err
	}
	r := req
	r.Prompt, r.Text, r.Body = promptMark, nil, nil
	if !cacheSplit(c.name, req) {
		r.Question = "" // spliced in after the files, in the one message
	} else {
		req.Question = "" // a content part of its own, which the SDK encodes
	}
	envelope, err := c.params(r).MarshalJSON()
	if err != nil || len(envelope) < 2 || envelope[len(envelope)-1] != '}' {
		return nil, &Error{Provider: c.name, Kind: BadRequest, Message: fmt.Sprintf("cannot encode the request: %v", err), Err: err}
	}
	envelope = append(envelope[:len(envelope)-1:len(envelope)-1], `,"stream":true}`...)
	return spliceMessage(c.name, envelope, req)
}

// stream sends req's body (req.Body, else req encoded now) once and reads the stream to
// its end. The body goes out through the SDK's raw-body option as it is: NewStreaming
// would marshal its params again (each nested MarshalJSON layer copying the whole prompt)
// and then rewrite the body to add "stream", so this makes the same POST and reads the
// same SSE stream with the SDK's decoder.
func (c *chatClient) stream(ctx context.Context, req Request, obs Observer) (*Response, error) {
	body, err := prepare(c.name, req, c.encode)
	if err != nil {
		return &Response{}, err
	}
	obs = observer(obs)
	resp := &Response{}
	run := startRun(c.name, body, c.log)

	var httpResp, raw *http.Response
	sctx, cut := withCutFlag(ctx)
	postErr := c.client.Post(sctx, "chat/completions", nil, &raw,
		option.WithRequestBody("application/json", body.data), option.WithResponseInto(&httpResp))
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(raw), postErr)
	defer stream.Close()

	var (
		refusal answerText
		usage   *openai.CompletionUsage
	)
	refusals, _ := obs.(RefusalObserver)
	for !run.capped && stream.Next() {
		chunk := stream.Current()
		// A string of this event was cut (see stringCap): if it was answer text, the answer
		// is at the cap.
		cutHere := cut.Swap(false)
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if r := reasoningDelta(ch.Delta); r != "" {
				obs.Reasoning(run.meter.add(r), r)
			}
			if d := ch.Delta.Content; d != "" {
				kept, full := run.text.add(d)
				if kept != "" {
					obs.Answer(kept)
				}
				run.capped = full || cutHere
			}
			if r := ch.Delta.Refusal; r != "" {
				// A refusal is not an answer: kept apart, bounded like one.
				if kept, _ := refusal.add(r); kept != "" && refusals != nil {
					refusals.Refusal(kept)
				}
			}
			if ch.FinishReason != "" {
				resp.Finish = normaliseFinish(ch.FinishReason)
				// OpenRouter's native_finish_reason: the upstream model's own ("SAFETY").
				resp.StopReason = stopReason(ch.FinishReason, extraString(ch.JSON.ExtraFields, "native_finish_reason"))
				run.finished = true
			}
		}
		if chunk.JSON.Usage.Valid() {
			u := chunk.Usage
			usage = &u
			run.reasoningSoFar(obs, consult.Tokens(u.CompletionTokensDetails.ReasoningTokens))
		}
	}
	if run.capped {
		stream.Close() // nothing more is useful
	}
	var reported *Usage
	if usage != nil {
		u := chatUsage(*usage)
		reported = &u
	}
	partial := run.settle(resp, reported)
	resp.Refusal = refusal.String()

	err = stream.Err()
	var se *ssestream.StreamError
	if errors.As(err, &se) && usage == nil {
		// An error event may carry the usage so far (OpenRouter sends it when a reasoning
		// model hits its limit mid-stream): the tokens were spent, so keep them.
		var tail struct {
			Usage *openai.CompletionUsage `json:"usage"`
		}
		if json.Unmarshal(se.Event.Data, &tail) == nil && tail.Usage != nil {
			resp.Usage = chatUsage(*tail.Usage)
		}
	}
	if err != nil && run.finished && ctx.Err() == nil && !errors.As(err, &se) {
		// The answer was complete; only the tail (usage, [DONE]) was lost.
		c.log.Debug("stream failed after the finish", "provider", c.name, "error", c.redact.clean(err.Error()))
		err = nil
	}
	return run.end(ctx, resp, err, partial, nil, func(err error) *Error {
		return c.convert(ctx, err, httpResp, partial)
	})
}

// stopReason names a stop as the provider did: its reason, and the native one behind it
// when that says more ("content_filter (SAFETY)").
func stopReason(reason, native string) string {
	if native == "" || strings.EqualFold(native, reason) {
		return reason
	}
	return reason + " (" + native + ")"
}

// reasoningDelta returns the reasoning text of a delta: OpenRouter's "reasoning" field, or
// "reasoning_content" as DeepSeek-style compatible servers send it.
func reasoningDelta(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, name := range []string{"reasoning", "reasoning_content"} {
		if s := extraString(d.JSON.ExtraFields, name); s != "" {
			return s
		}
	}
	return ""
}

// extraString is a string field the SDK does not know, "" when absent, null or not a string.
func extraString(fields map[string]respjson.Field, name string) string {
	var s string
	if raw := extraRaw(fields, name); raw == "" || json.Unmarshal([]byte(raw), &s) != nil {
		return ""
	}
	return s
}

// extraRaw returns the raw JSON of a field the SDK does not know ("" when absent or null).
// openai-go marks such fields invalid (it has no type for them), so Valid cannot be used.
func extraRaw(fields map[string]respjson.Field, name string) string {
	f, ok := fields[name]
	if !ok {
		return ""
	}
	raw := f.Raw()
	if raw == "null" {
		return ""
	}
	return raw
}

// chatUsage converts an OpenAI-style usage object, including OpenRouter's "cost".
func chatUsage(u openai.CompletionUsage) Usage {
	reasoning := consult.Tokens(u.CompletionTokensDetails.ReasoningTokens)
	out := Usage{
		Reported:  true,
		Input:     consult.Tokens(u.PromptTokens),
		Output:    max(consult.Tokens(u.CompletionTokens)-reasoning, 0),
		Reasoning: reasoning,
		Cached:    consult.Tokens(u.PromptTokensDetails.CachedTokens),
	}
	// OpenRouter's usage accounting reports the tokens written to a prompt cache
	// (https://openrouter.ai/docs/use-cases/usage-accounting).
	if raw := extraRaw(u.PromptTokensDetails.JSON.ExtraFields, "cache_write_tokens"); raw != "" {
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil && n > 0 {
			out.CacheWrite = consult.Tokens(n)
		}
	}
	if raw := extraRaw(u.JSON.ExtraFields, "cost"); raw != "" {
		if cost, err := strconv.ParseFloat(raw, 64); err == nil {
			out.CostUSD, out.CostKnown = cost, true
		}
	}
	return out
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
	q := &Quota{ID: m[1]}
	switch id := strings.ToLower(q.ID); {
	case strings.Contains(id, "per-day"):
		q.Period = PerDay
	case strings.Contains(id, "per-hour"):
		q.Period = PerHour
	case strings.Contains(id, "per-min"):
		q.Period = PerMinute
	}
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

// convert turns whatever the SDK returned into an *Error.
func (c *chatClient) convert(ctx context.Context, err error, httpResp *http.Response, partial bool) *Error {
	if e := known(ctx, c.name, err, partial); e != nil {
		return e
	}
	now := time.Now()

	// An error event inside a 200 stream: {"error": {"code": 502, "message": "..."}}.
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var env struct {
			Error chatErrorBody `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &env)
		code := codeString(env.Error.Code)
		kind := Server
		n, convErr := strconv.Atoi(code)
		switch typ := strings.ToLower(code + " " + env.Error.Type); {
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
		var choices struct {
			Choices []struct {
				Native string `json:"native_finish_reason"`
			} `json:"choices"`
		}
		_ = json.Unmarshal(se.Event.Data, &choices)
		detail := env.Error.text()
		if len(choices.Choices) > 0 && choices.Choices[0].Native != "" {
			detail += " (" + choices.Choices[0].Native + ")"
		}
		return finished(&Error{Provider: c.name, Kind: refine(kind, code, detail), Code: code,
			Message: c.redact.clean(env.Error.text()), InBand: true, Partial: partial,
			RetryAfter: retryInText(env.Error.text())}, detail)
	}

	// An HTTP error status. The SDK's *openai.Error carries the parsed body; when the body
	// was not JSON the SDK returns a decoding error instead, so fall back on the response.
	var ae *openai.Error
	var body chatErrorBody
	status, res := 0, httpResp
	if errors.As(err, &ae) {
		status, res = ae.StatusCode, ae.Response
		_ = json.Unmarshal([]byte(ae.RawJSON()), &body)
		if body.Message == "" {
			body.Message = ae.Message
		}
	} else if httpResp != nil && httpResp.StatusCode >= 400 {
		status = httpResp.StatusCode
	}
	var header http.Header
	if status != 0 && res != nil {
		header = res.Header
		if body.Message == "" && res.Body != nil {
			// Not a JSON error object (an HTML or text page from a proxy): the SDK put the
			// body back on the response.
			raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			body.Message = string(raw)
		}
	}
	if status != 0 {
		code := codeString(body.Code)
		msg := body.text()
		if msg == "" {
			msg = http.StatusText(status)
		}
		e := &Error{Provider: c.name, Kind: refine(kindForStatus(status), code, msg), Status: status,
			Code: code, Message: c.redact.clean(msg), RetryAfter: retryHint(header, msg, now),
			Partial: partial} // no Err: the SDK's error holds the request and the raw body
		if e.Kind == RateLimited {
			e.Quota = body.quota()
		}
		return finished(e, msg)
	}
	return &Error{Provider: c.name, Kind: Transport, Message: c.redact.clean(err.Error()), Partial: partial, Err: err}
}
