package providers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/consultmcp/consult"
)

// Gemini talks to the Gemini API (ai.google.dev/api/generate-content) with net/http: one
// POST to models/{model}:streamGenerateContent?alt=sse a call, its server-sent events read
// as they come. It never sends a request again and never follows a continuation token.
type Gemini struct {
	client *http.Client
	base   *url.URL
	key    string
	redact redactor
	log    *slog.Logger
}

var _ Provider = (*Gemini)(nil)

// NewGemini returns a Gemini provider. cfg.APIKey is required; cfg.BaseURL defaults to
// the Gemini API's public endpoint ([Spec.DefaultBaseURL]), to which the API version
// (v1beta) is added.
func NewGemini(cfg Config) (*Gemini, error) {
	if err := cfg.check(NameGemini); err != nil {
		return nil, err
	}
	redact := redactor{key: cfg.APIKey}
	base, err := url.Parse(baseURL(NameGemini, cfg))
	if err != nil {
		return nil, fmt.Errorf("%s: the base URL: %s", NameGemini, redact.clean(err.Error()))
	}
	return &Gemini{client: cfg.httpClient(), base: base, key: cfg.APIKey, redact: redact, log: cfg.logger()}, nil
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
	run := startRun(NameGemini, body, p.redact, p.log)

	var (
		usage     *geminiUsage
		blocked   string
		blockCode string
	)
	hresp, err := p.post(ctx, req.Model, body)
	var events *sseReader
	if err == nil {
		defer hresp.Body.Close() // closed unread when the loop leaves early: nothing more is useful
		events = newSSEReader(hresp.Body)
		events.endAtEOF = true // as Google's Go SDK read the stream
	}
	for err == nil {
		var ev sseEvent
		if ev, err = events.Next(); err != nil {
			if err == io.EOF || run.finished {
				err = nil // a connection lost after the model finished loses nothing
			}
			break
		}
		var chunk geminiChunk
		if jerr := json.Unmarshal(ev.Data, &chunk); jerr != nil {
			err = fmt.Errorf("cannot decode an event of the stream: %w", jerr)
			break
		}
		if chunk.Error != nil {
			err = p.failure(*chunk.Error, hresp.StatusCode, hresp.Header, run.text.Len() > 0)
			break
		}
		if chunk.ModelVersion != "" {
			resp.Model = chunk.ModelVersion
		}
		if pf := chunk.PromptFeedback; pf != nil && pf.BlockReason != "" {
			blocked, blockCode = pf.BlockReason, pf.BlockReason
			if pf.BlockReasonMessage != "" {
				blocked += ": " + pf.BlockReasonMessage
			}
			resp.StopDetail = blockedCategories(pf.SafetyRatings)
		}
		if len(chunk.Candidates) > 0 {
			cand := chunk.Candidates[0]
			for _, part := range cand.Content.Parts {
				if part.Text == "" {
					continue
				}
				if part.Thought {
					obs.Reasoning(run.meter.add(part.Text), part.Text)
					continue
				}
				if run.answer(obs, part.Text, ev.Cut); run.capped {
					break
				}
			}
			if run.capped {
				break
			}
			if cand.FinishReason != "" && cand.FinishReason != "FINISH_REASON_UNSPECIFIED" {
				resp.Finish = normaliseFinish(cand.FinishReason)
				resp.StopReason = cand.FinishReason
				if cand.FinishMessage != "" {
					resp.StopReason += ": " + p.redact.clean(cand.FinishMessage)
				}
				resp.StopDetail = blockedCategories(cand.SafetyRatings)
				run.finished = true
			}
		}
		if u := chunk.UsageMetadata; u != nil {
			usage = u
			run.reasoningSoFar(obs, u.Thoughts)
		}
	}
	var reported *Usage
	if usage != nil {
		reported = &Usage{Reported: true, Input: usage.Prompt, Output: usage.Candidates,
			Reasoning: usage.Thoughts, Cached: usage.Cached}
	}
	run.settle(resp, reported)

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
	return run.end(ctx, resp, err, promptBlocked)
}

// post sends body for model and returns the successful response, or the error: an
// [*Error] for an error response.
func (p *Gemini) post(ctx context.Context, model string, body *Body) (*http.Response, error) {
	path, err := geminiModelPath(model)
	if err != nil {
		return nil, err
	}
	u := p.base.JoinPath("v1beta", path+":streamGenerateContent")
	u.RawQuery = "alt=sse"
	hreq, err := body.newRequest(ctx, u.String())
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("User-Agent", "consult/"+consult.Version)
	hreq.Header.Set("X-Goog-Api-Key", p.key)
	if s := serverTimeout(ctx, p.client.Timeout); s != "" {
		hreq.Header.Set("X-Server-Timeout", s)
	}
	hresp, err := p.client.Do(hreq)
	if err != nil {
		return nil, err
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		defer hresp.Body.Close()
		return nil, p.readFailure(hresp)
	}
	return hresp, nil
}

// geminiModelPath is the resource name of a model: "models/gemini-2.5-pro" for
// "gemini-2.5-pro", a name that already says "models/" or "tunedModels/" as it is. A name
// that would change the URL's path or query is refused, as Gemini's SDK refuses it.
func geminiModelPath(model string) (string, error) {
	if strings.Contains(model, "?") || strings.Contains(model, "&") || strings.Contains(model, "..") {
		return "", &Error{Provider: NameGemini, Kind: BadRequest,
			Message: fmt.Sprintf("the model name %q holds a character sequence (?, & or ..) a model name cannot have", consult.Printable(model))}
	}
	if strings.HasPrefix(model, "models/") || strings.HasPrefix(model, "tunedModels/") {
		return model, nil
	}
	return "models/" + model, nil
}

// serverTimeout is X-Server-Timeout, which tells Google's servers how long the caller
// waits: the time left before ctx's deadline or the client's timeout, whichever is
// sooner, in whole seconds rounded up ("" when neither is set or the time has run out).
func serverTimeout(ctx context.Context, clientTimeout time.Duration) string {
	t := clientTimeout
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); t == 0 || left < t {
			t = left
		}
	}
	if t <= 0 {
		return ""
	}
	return strconv.FormatInt(int64(math.Ceil(t.Seconds())), 10)
}

// maxErrorBody bounds the error response read: Google's error bodies are a few KB; a
// proxy's page is cut (the message kept is far shorter still, [maxMessage]).
const maxErrorBody = 1 << 20

// readFailure reads an error response: Google's error JSON ({"error": {...}}), else the
// body as the message and the HTTP status as the code.
func (p *Gemini) readFailure(resp *http.Response) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("reading the error response (HTTP %d): %w", resp.StatusCode, err)
	}
	var env struct {
		Error *geminiError `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil || env.Error == nil {
		env.Error = &geminiError{Code: resp.StatusCode, Message: string(data)}
	}
	return p.failure(*env.Error, resp.StatusCode, resp.Header, false)
}

// geminiError is a Google API error (google.rpc.Status as JSON: code, message, status and
// details such as RetryInfo, QuotaFailure and ErrorInfo from googleapis
// google/rpc/error_details.proto), in an error response or in an event of the stream.
type geminiError struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details"`
}

// failure is the *Error of a Google API error that came with status: an error response's
// HTTP status, or 2xx for an error event in the stream.
func (p *Gemini) failure(f geminiError, status int, header http.Header, partial bool) *Error {
	// No Err: the failure holds the raw upstream message.
	out := &Error{Provider: NameGemini, Code: f.Status, Message: p.redact.clean(f.Message), Partial: partial}
	code := f.Code
	if status >= 200 && status < 300 {
		out.InBand = true // an error event inside the stream
	} else {
		out.Status = status
		if code == 0 {
			code = status
		}
	}
	kind := Server
	if code >= 400 {
		kind = kindForStatus(code)
	}
	if detailReason(f.Details) == "API_KEY_INVALID" {
		kind = Auth
	}
	out.Kind = refine(kind, out.Code, f.Message)
	if out.Code == "" && out.InBand && code != 0 {
		out.Code = fmt.Sprint(code)
	}
	out.RetryAfter = cmp.Or(parseRetryDelay(f.Details), retryHint(header, f.Message, time.Now()))
	if out.Kind == RateLimited {
		out.Quota = parseQuota(f.Details)
	}
	return finished(out, f.Message)
}

// geminiChunk is one event of the stream: a GenerateContentResponse
// (ai.google.dev/api/generate-content#generatecontentresponse), the fields read here, or
// an error.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text    string `json:"text"`
				Thought bool   `json:"thought"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason  string         `json:"finishReason"`
		FinishMessage string         `json:"finishMessage"`
		SafetyRatings []geminiRating `json:"safetyRatings"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string         `json:"blockReason"`
		BlockReasonMessage string         `json:"blockReasonMessage"`
		SafetyRatings      []geminiRating `json:"safetyRatings"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
	Error         *geminiError `json:"error"`
}

type geminiUsage struct {
	Prompt     consult.Tokens `json:"promptTokenCount"`
	Candidates consult.Tokens `json:"candidatesTokenCount"`
	Thoughts   consult.Tokens `json:"thoughtsTokenCount"`
	Cached     consult.Tokens `json:"cachedContentTokenCount"`
}

type geminiRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked"`
}

// blockedCategories lists the safety categories a Gemini response marks as blocked, or,
// when none is marked, those rated HIGH: "HARM_CATEGORY_HATE_SPEECH".
func blockedCategories(ratings []geminiRating) string {
	var blocked, high []string
	for _, r := range ratings {
		switch {
		case r.Blocked:
			blocked = append(blocked, r.Category)
		case r.Probability == "HIGH":
			high = append(high, r.Category)
		}
	}
	if len(blocked) == 0 {
		blocked = high
	}
	return strings.Join(blocked, ", ")
}

// geminiGeneration builds the generation config: output limit and thinking.
func geminiGeneration(req Request) geminiConfig {
	var cfg geminiConfig
	r := req
	if t := req.Thinking; t.On {
		tc := &geminiThinking{IncludeThoughts: true}
		switch {
		case t.Budget > 0:
			b := geminiBudget(req.Model, budgetWithin(t.Budget, req.OutputLimit))
			r.Thinking.Budget = b
			tc.ThinkingBudget = &b
		case isGemini3(req.Model):
			tc.ThinkingLevel = "HIGH"
		default:
			dynamic := consult.Tokens(-1) // the model decides
			tc.ThinkingBudget = &dynamic
		}
		cfg.ThinkingConfig = tc
	}
	if n := outputLimit(r, true); n > 0 {
		cfg.MaxOutputTokens = min(n, 1<<31-1)
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

// Encode builds req's body once; see [Encoder]. It is a GenerateContentRequest
// (ai.google.dev/api/generate-content#request-body): the user's message as the one
// content, the system instruction, and the generation config (always, empty or not) with
// the output limit and thinking, in the order and form Google's Go SDK sent them
// (testdata/gemini_requests.txtar pins them).
func (p *Gemini) Encode(req Request) (*Body, error) {
	if err := validate(NameGemini, req); err != nil {
		return nil, err
	}
	env := geminiBody{Contents: []geminiContent{{Parts: []geminiPart{{Text: promptMark}}, Role: "user"}},
		GenerationConfig: geminiGeneration(req)}
	if req.System != "" {
		env.SystemInstruction = &geminiContent{Parts: []geminiPart{{Text: req.System}}, Role: "user"}
	}
	envelope, _ := json.Marshal(env) // strings, numbers and booleans: it cannot fail
	return spliceMessage(NameGemini, envelope, req)
}

// geminiBody is the JSON body of streamGenerateContent for a text request.
type geminiBody struct {
	Contents          []geminiContent `json:"contents"`
	GenerationConfig  geminiConfig    `json:"generationConfig"` // sent as {} when empty
	SystemInstruction *geminiContent  `json:"systemInstruction,omitempty"`
}

type geminiContent struct {
	Parts []geminiPart `json:"parts"`
	Role  string       `json:"role,omitempty"`
}

type geminiPart struct {
	Text string `json:"text"`
}

type geminiConfig struct {
	MaxOutputTokens consult.Tokens  `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *geminiThinking `json:"thinkingConfig,omitempty"`
}

type geminiThinking struct {
	IncludeThoughts bool            `json:"includeThoughts,omitempty"`
	ThinkingBudget  *consult.Tokens `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string          `json:"thinkingLevel,omitempty"`
}
