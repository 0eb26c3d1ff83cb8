package providers

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/consultmcp/consult"
)

// Output-token defaults.
const (
	// DefaultAnswerTokens is the room left for the visible answer when thinking has a token
	// budget and the request names no output limit: 16k tokens is a long, detailed answer,
	// and reasoning counts against the same limit in all three APIs, so the limit sent is
	// budget + DefaultAnswerTokens.
	DefaultAnswerTokens consult.Tokens = 16_384
	// DefaultReasoningRoom is the reasoning allowance added to an explicit output limit when
	// thinking is on without a budget: 32k tokens covers a "high" effort on current models.
	DefaultReasoningRoom consult.Tokens = 32_768
)

// Thinking asks the model to reason before it answers.
type Thinking struct {
	// On turns reasoning on. When false the model's own default applies (some models
	// always reason).
	On bool
	// Budget is the number of reasoning tokens to allow; 0 means the provider's default
	// (OpenRouter effort "high", OpenAI reasoning_effort "high", Gemini dynamic thinking or
	// thinking level HIGH for Gemini 3).
	Budget consult.Tokens
}

// Request is one consultation: a single user message, optionally with a system instruction.
type Request struct {
	// Model is the provider's model id, with any "|thinking" suffix already stripped.
	Model string
	// Thinking selects reasoning; see [Thinking].
	Thinking Thinking
	// Prompt is the whole user message: gathered files and the question, already laid out.
	// Text, when set, is used instead.
	Prompt string
	// Text is the user message in pieces (files.Prompt.Prefix), escaped straight into the
	// request body so that the body is the message's only copy (or shares another's, see
	// CacheKey); each piece is read only while it is yielded. Text is called twice (to size
	// the body, then to fill it) and must yield the same bytes both times.
	Text iter.Seq[[]byte]
	// Question, when set, is the end of the user message, after Text (or Prompt): the part
	// that changes from one question to the next about the same files (files.Prompt.Question).
	// Where a provider needs a cache breakpoint (OpenRouter to Anthropic's models,
	// [CacheControlled]) and CacheBreakpoint is set, the files and the question are two
	// content parts, the breakpoint on the files; elsewhere the question is appended to the
	// one message.
	Question string
	// CacheBreakpoint asks for a cache breakpoint after the files where a provider needs one
	// to cache anything: the caller sets it when the files reach the model's minimum
	// cacheable size (a breakpoint on less caches nothing, and writing the cache costs more
	// than reading the prompt).
	CacheBreakpoint bool
	// CacheKey names the file set the message holds (the same files, the same key; with
	// Text, the same key must mean the same Text): OpenAI requests carry it as
	// prompt_cache_key, which routes requests with the same prefix to the same cache, and
	// Encode escapes Text once for all the bodies of one key alive at the same time. Empty
	// sends none and shares nothing.
	CacheKey string
	// LongCache asks the provider to keep the prompt cache longer than its default: OpenAI's
	// extended retention (prompt_cache_retention "24h"; the same prices), and an hour for
	// Anthropic's models through OpenRouter (cache_control's "ttl": "1h"; writing costs twice
	// the prompt price instead of 1.25 times). Gemini's implicit cache has no such setting.
	LongCache bool
	// Body, when set, is this request already encoded by the provider's [Encoder.Encode]:
	// Stream sends exactly its bytes and reads no other field.
	Body *Body
	// System is a short system instruction; empty sends none.
	System string
	// MaxOutput is the room for the visible answer, in tokens. When thinking is on, the
	// reasoning allowance is added to it before it is sent, since reasoning counts against
	// the same limit. 0 picks a default: no limit (the model's own maximum) unless thinking
	// has a budget, in which case budget + [DefaultAnswerTokens] (OpenRouter, Gemini).
	MaxOutput consult.Tokens
	// OutputLimit, when positive, is the whole output limit sent, reasoning included (every
	// provider bills reasoning as output and counts it against the limit): OpenRouter's
	// max_tokens, OpenAI's max_completion_tokens, Gemini's maxOutputTokens. It wins over
	// MaxOutput. A thinking budget is cut to leave room for an answer within it
	// ([MinAnswerRoom]). A caller that prices the request sets it, so that what the model
	// can write, and so the price, is bounded.
	OutputLimit consult.Tokens
}

// Usage is what the provider reported about a call's tokens and cost.
type Usage struct {
	// Reported says whether the provider sent usage at all. When false, Input, Output,
	// Cached and the cost are unknown (not zero), and Reasoning is the estimate from the
	// streamed reasoning text: a stream can end without usage (a refusal, a server that
	// ignores stream_options.include_usage).
	Reported bool
	// Input is the number of prompt tokens.
	Input consult.Tokens
	// Output is the number of visible answer tokens; it excludes Reasoning (billed output
	// is Output + Reasoning).
	Output consult.Tokens
	// Reasoning is the number of reasoning ("thinking") tokens. While streaming, before the
	// provider reports usage, it is an estimate (characters / 4 of the reasoning text seen).
	Reasoning consult.Tokens
	// Cached is the number of prompt tokens served from the provider's prompt cache.
	Cached consult.Tokens
	// CacheWrite is the number of prompt tokens written to the provider's prompt cache, where
	// the provider reports it (OpenRouter's prompt_tokens_details.cache_write_tokens).
	CacheWrite consult.Tokens
	// CostUSD is the call's cost in US dollars when CostKnown (OpenRouter usage accounting).
	CostUSD float64
	// CostKnown says whether the provider reported a cost.
	CostKnown bool
}

// Response is the answer to a [Request], or as much of it as arrived.
type Response struct {
	// Text is the visible answer. Reasoning text is never part of it.
	Text string
	// Model is the model id as the provider reported it (may differ from the one asked for).
	Model string
	// Usage holds the token counts and cost.
	Usage Usage
	// Finish is why the model stopped, normalised: "stop", "length", "content_filter",
	// "error", or the provider's own reason in lower case; [FinishAnswerCap] when the
	// answer reached [MaxAnswerBytes] and the rest was dropped. Empty if the stream never
	// said.
	Finish string
	// Truncated is true when the answer was cut, by the output-token limit ("length") or
	// by the answer cap ([FinishAnswerCap]).
	Truncated bool
	// StopReason is the provider's own reason for stopping, as it sent it ("SAFETY",
	// "RECITATION", "content_filter", "MAX_TOKENS"; OpenRouter's native reason when it
	// differs, as "content_filter (SAFETY)"), or the prompt's block reason ("prompt
	// blocked: PROHIBITED_CONTENT"). Empty when the stream never said.
	StopReason string
	// StopDetail says more where the provider did: the safety categories that blocked the
	// answer or the prompt (Gemini's safety ratings, "HARM_CATEGORY_HATE_SPEECH").
	StopDetail string
	// Refusal is the model's refusal (OpenAI's "refusal" field): text it sent instead of an
	// answer, kept out of Text.
	Refusal string
}

// Observer receives stream events as they arrive. Implementations must be cheap and must
// not block: they run on the goroutine that reads the upstream stream.
type Observer interface {
	// Reasoning reports reasoning progress: the reasoning tokens so far (an estimate until
	// the provider reports usage) and the new reasoning text (may be empty when only the
	// count changed).
	Reasoning(tokensSoFar consult.Tokens, delta string)
	// Answer reports new answer text.
	Answer(delta string)
}

// RefusalObserver is an [Observer] that also receives refusal text as it streams: what the
// model sends instead of an answer when it declines (OpenAI's delta.refusal). It is never
// passed to Answer and never part of [Response.Text]; [Response.Refusal] holds it whole. A
// refusal is the model's reply arriving, so a caller may report the answer phase on it.
type RefusalObserver interface {
	Observer
	// Refusal reports new refusal text. Like the Observer methods it must be cheap and must
	// not block.
	Refusal(delta string)
}

// Provider sends a consultation to one model provider.
type Provider interface {
	// Name is the provider's name in [Registry] ("openrouter", "openai", "gemini").
	Name() string
	// Stream sends req once (no retries inside) and blocks until the answer is complete, ctx
	// ends, or the upstream fails. obs may be nil.
	//
	// The returned *Response is never nil: on failure it holds what arrived before it (the
	// partial answer, reasoning counts), and the error is an [*Error] whose Partial field
	// says whether any answer text had arrived. When ctx ends, Stream returns promptly with
	// a [Canceled] error that wraps ctx.Err(), and the HTTP request is cancelled (its
	// connection closed).
	Stream(ctx context.Context, req Request, obs Observer) (*Response, error)
}

// Config configures a provider.
type Config struct {
	// APIKey authenticates with the provider. Required: no client reads a key from the
	// environment by itself (which could send one provider's key to another endpoint).
	APIKey string
	// BaseURL overrides the provider's endpoint: a proxy, a local model server, a test
	// fake. Empty uses the provider's public endpoint.
	BaseURL string
	// HTTPClient is the client to send requests with; nil uses a new client on
	// http.DefaultTransport. Its transport is wrapped with [ActivityTransport] (unless it
	// already is one), so upstream liveness is observed whatever the caller passes. It
	// should have no Timeout: the request context bounds each call.
	HTTPClient *http.Client
	// Logger receives debug records (never the key, never the prompt). Nil discards them.
	Logger *slog.Logger
	// ZDR asks for zero data retention: every request may be served only by an endpoint
	// that keeps no data. OpenRouter takes it per request (its provider routing
	// preferences); OpenAI and Gemini cannot be asked per request (their retention is the
	// account's agreement with them), and their constructors refuse it ([Spec.ZDR]).
	ZDR bool
}

// check refuses a config for provider name without an API key, saying where the key comes
// from, or asking for zero data retention of a provider that cannot be asked per request
// ([Spec.ZDR]).
func (c Config) check(name string) error {
	if strings.TrimSpace(c.APIKey) == "" {
		return fmt.Errorf("%s: no API key: pass it as an argument or set %s", name, keyEnv(name))
	}
	if s, _ := Lookup(name); c.ZDR && !s.ZDR {
		return fmt.Errorf("%s: zero data retention cannot be asked for per request: what %s keeps is set by the account's agreement with it, not by a request; OpenRouter can route each request to endpoints that keep no data", name, name)
	}
	return nil
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// httpClient returns a copy of the client to send with, its transport reporting upstream
// activity (see [WithActivity]), following redirects only within the first request's
// origin ([sameOrigin]).
func (c Config) httpClient() *http.Client {
	hc := &http.Client{}
	if c.HTTPClient != nil {
		cp := *c.HTTPClient
		hc = &cp
	}
	if _, ok := hc.Transport.(*activityTransport); !ok {
		hc.Transport = ActivityTransport(hc.Transport)
	}
	hc.CheckRedirect = sameOrigin(hc.CheckRedirect)
	return hc
}

// sameOrigin is a redirect policy that follows a redirect only to the origin (scheme and
// host) of the first request, then applies next (Go's default when nil): the key goes to
// the configured endpoint and nowhere else, as openai-go kept it (Go would forward a
// header such as Gemini's X-Goog-Api-Key to any host).
func sameOrigin(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return fmt.Errorf("redirected to another origin (%s://%s): not followed, the key goes only to the configured endpoint", req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// nopObserver is used when Stream gets a nil Observer.
type nopObserver struct{}

func (nopObserver) Reasoning(consult.Tokens, string) {}
func (nopObserver) Answer(string)                    {}

func observer(obs Observer) Observer {
	if obs == nil {
		return nopObserver{}
	}
	return obs
}

// reasoningMeter estimates reasoning tokens from streamed reasoning text until the provider
// reports the real count.
type reasoningMeter struct {
	chars    int
	reported consult.Tokens
}

// add counts delta and returns the tokens so far.
func (m *reasoningMeter) add(delta string) consult.Tokens {
	m.chars += utf8.RuneCountInString(delta)
	return m.tokens()
}

func (m *reasoningMeter) tokens() consult.Tokens {
	est := consult.Tokens((m.chars + 3) / 4)
	return max(est, m.reported)
}

// outputLimit returns the output-token limit to send, or 0 to send none. answerDefault
// says whether a thinking budget with no MaxOutput should get budget+DefaultAnswerTokens.
func outputLimit(req Request, answerDefault bool) consult.Tokens {
	t := req.Thinking
	switch {
	case req.OutputLimit > 0:
		return req.OutputLimit
	case req.MaxOutput > 0 && !t.On:
		return req.MaxOutput
	case req.MaxOutput > 0 && t.Budget > 0:
		return req.MaxOutput + t.Budget
	case req.MaxOutput > 0:
		return req.MaxOutput + DefaultReasoningRoom
	case t.On && t.Budget > 0 && answerDefault:
		return t.Budget + DefaultAnswerTokens
	}
	return 0
}

// budgetWithin is a thinking budget cut to fit an output limit with room for an answer: a
// quarter of the limit, at most [MinAnswerRoom]. A limit of 0 (none) leaves it as it is.
func budgetWithin(budget, limit consult.Tokens) consult.Tokens {
	if limit <= 0 || budget <= 0 {
		return budget
	}
	return max(min(budget, limit-min(MinAnswerRoom, limit/4)), 1)
}

// MinAnswerRoom is the room a thinking budget leaves for the answer within an output limit.
const MinAnswerRoom consult.Tokens = 1_024

// normaliseFinish maps provider finish reasons onto a small vocabulary.
func normaliseFinish(reason string) string {
	switch r := strings.ToLower(reason); r {
	case "", "finish_reason_unspecified":
		return ""
	case "stop", "end_turn", "stop_sequence", "eos":
		return "stop"
	case "length", "max_tokens":
		return "length"
	case "content_filter", "safety", "recitation", "blocklist", "prohibited_content", "spii",
		"image_safety", "image_prohibited_content", "language":
		return "content_filter"
	default:
		return r
	}
}
