package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/consultmcp/consult"
)

// Gemini talks to the Gemini API through google.golang.org/genai, streaming
// (:streamGenerateContent?alt=sse), with automatic continuation off and no HTTP retry
// options (genai's default is none).
type Gemini struct {
	client *genai.Client
	redact redactor
	log    *slog.Logger
}

var _ Provider = (*Gemini)(nil)

// NewGemini returns a Gemini provider. cfg.APIKey is required; cfg.BaseURL defaults to
// the Gemini API's public endpoint ([Spec.DefaultBaseURL]; genai adds the API version).
//
// The HTTP client is copied and its transport wrapped so that SSE comment lines (which
// genai cannot parse, and which proxies may add) are removed before genai reads the
// stream, and so that response headers (Retry-After) reach the error.
func NewGemini(cfg Config) (*Gemini, error) {
	if err := cfg.checkKey(NameGemini); err != nil {
		return nil, err
	}
	if err := cfg.checkZDR(NameGemini); err != nil {
		return nil, err
	}
	hc := *cfg.httpClient()
	hc.Transport = &geminiTransport{base: hc.Transport}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: &hc,
		// RetryOptions stays nil: genai then sends each request exactly once.
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL(NameGemini, cfg)},
	})
	redact := redactor{key: cfg.APIKey}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", NameGemini, redact.clean(err.Error()))
	}
	return &Gemini{client: client, redact: redact, log: cfg.logger()}, nil
}

// Name returns "gemini".
func (p *Gemini) Name() string { return NameGemini }

// Stream sends req once; see [Provider.Stream]. Thinking maps to a thinking budget (or
// thinking level HIGH for Gemini 3 without a budget) with thoughts included, so thought
// summaries arrive as reasoning (never as the answer).
func (p *Gemini) Stream(ctx context.Context, req Request, obs Observer) (*Response, error) {
	obs = observer(obs)
	resp := &Response{}
	body, err := prepare(NameGemini, req, p.Encode)
	if err != nil {
		return resp, err
	}
	req = body.req
	run := startRun(NameGemini, body, p.log)

	capture := &geminiCapture{}
	cctx, cut := withCutFlag(context.WithValue(context.WithValue(ctx, geminiCaptureKey{}, capture), geminiBodyKey{}, body))
	// genai builds the request from a stand-in whose body geminiTransport replaces (see
	// geminiBodyKey); the model names the URL.
	standIn := []*genai.Content{genai.NewContentFromText(promptMark, genai.RoleUser)}
	config := &genai.GenerateContentConfig{
		// genai would otherwise re-open a dropped stream by itself (continuation tokens);
		// the caller decides about every re-send.
		AutomaticContinuation: genai.Ptr(false),
	}

	var (
		usage     *genai.GenerateContentResponseUsageMetadata
		blocked   string
		blockCode string
	)
	for chunk, cerr := range p.client.Models.GenerateContentStream(cctx, req.Model, standIn, config) {
		if cerr != nil {
			err = cerr
			break
		}
		cutHere := cut.Swap(false) // a string of this event was cut (see stringCap)
		if chunk == nil {
			continue
		}
		if chunk.ModelVersion != "" {
			resp.Model = chunk.ModelVersion
		}
		if pf := chunk.PromptFeedback; pf != nil && pf.BlockReason != "" {
			blocked, blockCode = string(pf.BlockReason), string(pf.BlockReason)
			if pf.BlockReasonMessage != "" {
				blocked += ": " + pf.BlockReasonMessage
			}
			resp.StopDetail = blockedCategories(pf.SafetyRatings)
		}
		if len(chunk.Candidates) > 0 && chunk.Candidates[0] != nil {
			cand := chunk.Candidates[0]
			if cand.Content != nil {
				for _, part := range cand.Content.Parts {
					if part == nil || part.Text == "" {
						continue
					}
					if part.Thought {
						obs.Reasoning(run.meter.add(part.Text), part.Text)
						continue
					}
					kept, full := run.text.add(part.Text)
					if kept != "" {
						obs.Answer(kept)
					}
					if run.capped = full || cutHere; run.capped {
						break
					}
				}
			}
			if run.capped {
				break // leaving the loop closes the stream: nothing more is useful
			}
			if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
				resp.Finish = normaliseFinish(string(cand.FinishReason))
				resp.StopReason = string(cand.FinishReason)
				if cand.FinishMessage != "" {
					resp.StopReason += ": " + p.redact.clean(cand.FinishMessage)
				}
				resp.StopDetail = blockedCategories(cand.SafetyRatings)
				run.finished = true
			}
		}
		if u := chunk.UsageMetadata; u != nil {
			usage = u
			run.reasoningSoFar(obs, consult.Tokens(u.ThoughtsTokenCount))
		}
	}
	var reported *Usage
	if usage != nil {
		reported = &Usage{
			Reported:  true,
			Input:     consult.Tokens(usage.PromptTokenCount),
			Output:    consult.Tokens(usage.CandidatesTokenCount),
			Reasoning: consult.Tokens(usage.ThoughtsTokenCount),
			Cached:    consult.Tokens(usage.CachedContentTokenCount),
		}
	}
	partial := run.settle(resp, reported)

	if err == nil && !run.finished {
		err = capture.readError()
	}
	// A prompt the API blocked ends the stream without a finish reason.
	promptBlocked := func() error {
		if blocked == "" {
			return nil
		}
		resp.Finish = "content_filter"
		resp.StopReason = "prompt blocked: " + p.redact.clean(blocked)
		// The reason is the error's code; the message adds only what the code does not say.
		msg := "the prompt was blocked"
		if rest := strings.TrimPrefix(blocked, blockCode); rest != "" {
			msg += p.redact.clean(rest)
		}
		if resp.StopDetail != "" {
			msg += " (" + resp.StopDetail + ")"
		}
		return &Error{Provider: NameGemini, Kind: ContentFiltered, Code: blockCode, Message: msg}
	}
	return run.end(ctx, resp, err, partial, promptBlocked, func(err error) *Error {
		return p.convert(ctx, err, capture, partial)
	})
}

// blockedCategories lists the safety categories a Gemini response marks as blocked, or,
// when none is marked, those rated HIGH: "HARM_CATEGORY_HATE_SPEECH".
func blockedCategories(ratings []*genai.SafetyRating) string {
	var blocked, high []string
	for _, r := range ratings {
		if r == nil {
			continue
		}
		switch {
		case r.Blocked:
			blocked = append(blocked, string(r.Category))
		case r.Probability == genai.HarmProbabilityHigh:
			high = append(high, string(r.Category))
		}
	}
	if len(blocked) == 0 {
		blocked = high
	}
	return strings.Join(blocked, ", ")
}

// geminiConfig builds the request config: system instruction, thinking, limit.
func geminiConfig(req Request) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{}
	if req.System != "" {
		cfg.SystemInstruction = genai.NewContentFromText(req.System, genai.RoleUser)
	}
	r := req
	if t := req.Thinking; t.On {
		tc := &genai.ThinkingConfig{IncludeThoughts: true}
		switch {
		case t.Budget > 0:
			b := geminiBudget(req.Model, budgetWithin(t.Budget, req.OutputLimit))
			r.Thinking.Budget = b
			tc.ThinkingBudget = genai.Ptr(int32(b))
		case isGemini3(req.Model):
			tc.ThinkingLevel = genai.ThinkingLevelHigh
		default:
			tc.ThinkingBudget = genai.Ptr(int32(-1)) // dynamic: the model decides
		}
		cfg.ThinkingConfig = tc
	}
	if n := outputLimit(r, true); n > 0 {
		cfg.MaxOutputTokens = int32(min(n, 1<<31-1))
	}
	return cfg
}

func bareGeminiModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	return strings.TrimPrefix(m, "models/")
}

func isGemini3(model string) bool { return strings.HasPrefix(bareGeminiModel(model), "gemini-3") }

// geminiBudget clamps a budget to the range the Gemini 2.5 models accept (Pro 128-32,768,
// Flash 0-24,576, Flash-Lite 512-24,576); other models get it unchanged.
func geminiBudget(model string, b consult.Tokens) consult.Tokens {
	m := bareGeminiModel(model)
	switch {
	case strings.HasPrefix(m, "gemini-2.5-pro"):
		return min(max(b, 128), 32_768)
	case strings.HasPrefix(m, "gemini-2.5-flash-lite"):
		return min(max(b, 512), 24_576)
	case strings.HasPrefix(m, "gemini-2.5-flash"):
		return min(b, 24_576)
	}
	return b
}

// convert turns a genai error into an *Error.
func (p *Gemini) convert(ctx context.Context, err error, capture *geminiCapture, partial bool) *Error {
	if e := known(ctx, NameGemini, err, partial); e != nil {
		return e
	}
	status, header := capture.response()
	var ae genai.APIError
	var aep *genai.APIError
	if errors.As(err, &aep) && aep != nil {
		ae = *aep
	} else if !errors.As(err, &ae) {
		return &Error{Provider: NameGemini, Kind: Transport, Message: p.redact.clean(err.Error()), Partial: partial, Err: err}
	}
	// No Err: genai's APIError prints the raw upstream message.
	out := &Error{Provider: NameGemini, Code: ae.Status, Message: p.redact.clean(ae.Message), Partial: partial}
	if ae.Status != "" && ae.Status[0] >= '0' && ae.Status[0] <= '9' {
		out.Code = "" // genai put the HTTP status line there: the body was not a Google error
	}
	code := ae.Code
	if status >= 200 && status < 300 {
		out.InBand = true // an error event inside the stream
	} else {
		out.Status = status
		if code == 0 {
			code = status
		}
	}
	if out.Status == 0 && !out.InBand {
		out.Status = code
	}
	kind := Server
	if code >= 400 {
		kind = kindForStatus(code)
	}
	reason := detailReason(ae.Details)
	if reason == "API_KEY_INVALID" {
		kind = Auth
	}
	out.Kind = refine(kind, out.Code, ae.Message)
	if out.Code == "" && out.InBand && code != 0 {
		out.Code = fmt.Sprint(code)
	}
	out.RetryAfter = parseRetryDelay(ae.Details)
	if out.RetryAfter == 0 {
		out.RetryAfter = retryHint(header, ae.Message, time.Now())
	}
	if out.Kind == RateLimited {
		out.Quota = parseQuota(ae.Details)
	}
	return finished(out, ae.Message)
}

// Encode builds req's body once; see [Encoder]. It is the body genai encodes for
// GenerateContentStream(model, [a user content of req's message], geminiConfig(req)): the
// contents, the system instruction at the top level, and the generation config (always,
// empty or not) with the output limit and thinking. genai's request converters are not exported, so the fields are
// written here; TestBodyMatchesSDK compares them with genai's own request.
func (p *Gemini) Encode(req Request) (*Body, error) {
	if err := validate(NameGemini, req); err != nil {
		return nil, err
	}
	cfg := geminiConfig(req)
	env := geminiBody{Contents: []geminiContent{{Parts: []geminiPart{{Text: promptMark}}, Role: genai.RoleUser}}}
	if si := cfg.SystemInstruction; si != nil {
		env.SystemInstruction = &geminiContent{Role: si.Role}
		for _, part := range si.Parts {
			env.SystemInstruction.Parts = append(env.SystemInstruction.Parts, geminiPart{Text: part.Text})
		}
	}
	env.GenerationConfig.MaxOutputTokens = cfg.MaxOutputTokens
	if tc := cfg.ThinkingConfig; tc != nil {
		env.GenerationConfig.ThinkingConfig = &geminiThinking{IncludeThoughts: tc.IncludeThoughts,
			ThinkingBudget: tc.ThinkingBudget, ThinkingLevel: string(tc.ThinkingLevel)}
	}
	envelope, err := json.Marshal(env)
	if err != nil {
		return nil, &Error{Provider: NameGemini, Kind: BadRequest, Message: fmt.Sprintf("cannot encode the request: %v", err), Err: err}
	}
	return spliceMessage(NameGemini, envelope, req)
}

// geminiBody is the JSON body of generateContent as genai sends it for a text request.
type geminiBody struct {
	Contents          []geminiContent  `json:"contents"`
	GenerationConfig  geminiGeneration `json:"generationConfig"` // genai sends {} when empty
	SystemInstruction *geminiContent   `json:"systemInstruction,omitempty"`
}

type geminiContent struct {
	Parts []geminiPart `json:"parts"`
	Role  string       `json:"role,omitempty"`
}

type geminiPart struct {
	Text string `json:"text"`
}

type geminiGeneration struct {
	MaxOutputTokens int32           `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *geminiThinking `json:"thinkingConfig,omitempty"`
}

type geminiThinking struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int32 `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// geminiBodyKey carries the *Body of a Stream call through the request context to
// geminiTransport, which sends it in place of the body genai encoded. genai (v1.77) has no
// raw-body option: HTTPOptions.ExtraBody and ExtrasRequestProvider only edit the map it then
// encodes itself, which would copy the prompt into the map's encoding again on every
// attempt. Swapping the body in the transport genai already sends through is the least
// invasive way to send our bytes: genai still builds the URL, headers and key, and parses
// the stream and errors as before.
type geminiBodyKey struct{}

// geminiCaptureKey carries a *geminiCapture through the request context to the transport.
type geminiCaptureKey struct{}

// geminiCapture records what genai does not expose: the response status and headers, and
// a read error on the stream (genai would only log it).
type geminiCapture struct {
	mu      sync.Mutex
	status  int
	header  http.Header
	readErr error
}

func (c *geminiCapture) setResponse(status int, h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.header = status, h
}

func (c *geminiCapture) response() (int, http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.header
}

func (c *geminiCapture) setReadError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr == nil {
		c.readErr = err
	}
}

func (c *geminiCapture) readError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// geminiTransport records the response for the error path and filters SSE comments out
// of streaming bodies. It sits above any ActivityTransport, so comments still count as
// upstream life.
type geminiTransport struct{ base http.RoundTripper }

func (t *geminiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if body, ok := req.Context().Value(geminiBodyKey{}).(*Body); ok && req.Method == http.MethodPost {
		req = withBody(req, body.data)
	}
	resp, err := t.base.RoundTrip(req)
	if resp == nil {
		return resp, err
	}
	capture, _ := req.Context().Value(geminiCaptureKey{}).(*geminiCapture)
	if capture != nil {
		capture.setResponse(resp.StatusCode, resp.Header)
	}
	if isEventStream(resp) {
		capEventStream(req, resp)
		resp.Body = newSSEFilter(resp.Body, capture)
	}
	return resp, err
}

// withBody returns a copy of req that sends data as its body; req's own body is closed
// unread, as a transport must close the body of a request it was given.
func withBody(req *http.Request, data []byte) *http.Request {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	out := req.Clone(req.Context())
	out.ContentLength = int64(len(data))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	out.Body, _ = out.GetBody()
	return out
}
