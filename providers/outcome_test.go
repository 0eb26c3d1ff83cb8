package providers

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// openRouterLengthThenError is an OpenRouter stream of a reasoning model that spent its output
// limit thinking: reasoning deltas, finish_reason "length" on two chunks, then an in-band error
// event with code 400 "Token limit reached" that carries the usage, and [DONE]. The shape is
// that of a real OpenRouter stream recorded by pydantic/pydantic-ai
// (tests/models/cassettes/test_openrouter/test_openrouter_stream_error.yaml, commit
// 4fda38988f2939fa6ea9cdefcf120693e10ef491); ids, model, text and figures here are our own.
// OpenRouter documents that errors after the stream started "still arrive as regular data:
// events with an error field" (openrouter.ai/docs/api-reference/streaming).
const openRouterLengthThenError = `: OPENROUTER PROCESSING

data: {"id":"gen-1764100000-Ab12Cd34Ef56Gh78Ij90","provider":"Example","model":"example/reasoner-mini","object":"chat.completion.chunk","created":1764100000,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"The question is","reasoning_details":[{"type":"reasoning.text","text":"The question is","index":0,"format":null}]},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}

data: {"id":"gen-1764100000-Ab12Cd34Ef56Gh78Ij90","provider":"Example","model":"example/reasoner-mini","object":"chat.completion.chunk","created":1764100000,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":" about the loop in main.go","reasoning_details":[{"type":"reasoning.text","text":" about the loop in main.go","index":0,"format":null}]},"finish_reason":"length","native_finish_reason":"length","logprobs":null}]}

data: {"id":"gen-1764100000-Ab12Cd34Ef56Gh78Ij90","provider":"Example","model":"example/reasoner-mini","object":"chat.completion.chunk","created":1764100000,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":null,"reasoning_details":[]},"finish_reason":"length","native_finish_reason":"length","logprobs":null}]}

data: {"id":"gen-1764100000-Ab12Cd34Ef56Gh78Ij90","provider":"Example","error":{"code":400,"message":"Token limit reached"},"model":"example/reasoner-mini","object":"chat.completion.chunk","created":1764100000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":812,"completion_tokens":16,"total_tokens":828,"cost":0,"is_byok":false,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":16}}}

data: [DONE]

`

// TestOutputLimitThenErrorEvent: a stream that says the output limit stopped the model
// (finish_reason "length") and then sends an in-band error is an output-limit failure, not a
// bad request: not retryable, the finish and the usage kept. Before, the error's code 400
// made it a bad request.
func TestOutputLimitThenErrorEvent(t *testing.T) {
	t.Parallel()
	fc := flavorFor(fake.OpenRouter)
	t.Run("recorded shape", func(t *testing.T) {
		t.Parallel()
		p, srv := setup(t, fc)
		srv.Push(fake.Script{Body: openRouterLengthThenError})
		rec := newRecorder()
		resp, err := p.Stream(context.Background(), Request{Model: "example/reasoner-mini", Prompt: "q"}, rec)
		e := asError(t, err)
		if e.Kind != OutputLimit || !errors.Is(err, OutputLimit) {
			t.Errorf("Kind = %q, want %q (%v)", e.Kind, OutputLimit, e)
		}
		if Retryable(err) || e.Partial || !e.InBand || e.Code != "400" {
			t.Errorf("retryable %v, partial %v, in band %v, code %q; want false, false, true, 400", Retryable(err), e.Partial, e.InBand, e.Code)
		}
		if !strings.Contains(e.Error(), "Token limit reached") {
			t.Errorf("message %q lacks the provider's words", e.Error())
		}
		if resp.Finish != "length" || !resp.Truncated || resp.Text != "" {
			t.Errorf("Finish %q, Truncated %v, Text %q; want length, true, empty", resp.Finish, resp.Truncated, resp.Text)
		}
		want := Usage{Reported: true, Input: 812, Output: 0, Reasoning: 16, CostKnown: true}
		if resp.Usage != want {
			t.Errorf("Usage = %+v, want %+v (the error event's)", resp.Usage, want)
		}
		if got := rec.reasoningText(); got != "The question is about the loop in main.go" {
			t.Errorf("reasoning = %q", got)
		}
	})
	t.Run("after part of the answer", func(t *testing.T) {
		t.Parallel()
		p, srv := setup(t, fc)
		srv.Push(fake.Script{NoFinish: true, Steps: []fake.Step{
			fake.Think("hmm"), fake.Text("The loop"), fake.Stop("length"), fake.Fail(400, "Token limit reached")}})
		resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		e := asError(t, err)
		if e.Kind != OutputLimit || !e.Partial || Retryable(err) {
			t.Errorf("kind %q, partial %v, retryable %v; want %q, true, false", e.Kind, e.Partial, Retryable(err), OutputLimit)
		}
		if resp.Text != "The loop" || !resp.Truncated {
			t.Errorf("Text %q, Truncated %v; want the partial answer, cut", resp.Text, resp.Truncated)
		}
	})
	t.Run("a 400 event without the finish stays a bad request", func(t *testing.T) {
		t.Parallel()
		p, srv := setup(t, fc)
		srv.Push(fake.Script{NoFinish: true, Steps: []fake.Step{fake.Think("hmm"), fake.Fail(400, "Invalid reasoning effort")}})
		_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		if e := asError(t, err); e.Kind != BadRequest || Retryable(err) {
			t.Errorf("kind %q, retryable %v; want %q, false", e.Kind, Retryable(err), BadRequest)
		}
	})
}

// TestGeminiDailyQuota: a 429 whose google.rpc.QuotaFailure names a per-day quota is not
// retryable, drops the seconds-long retryDelay sent with it, names the daily quota and when
// it resets; a per-minute quota stays retryable with its delay. The body is built by the fake
// from QuotaFailure.Violation in googleapis google/rpc/error_details.proto, with the quota ids
// the Gemini API uses (GenerateRequestsPerDayPerProjectPerModel-FreeTier and ...PerMinute...,
// as in voideditor/void#557 and the rate-limit page ai.google.dev/gemini-api/docs/rate-limits,
// which says daily quotas reset at midnight Pacific time).
func TestGeminiDailyQuota(t *testing.T) {
	t.Parallel()
	fc := flavorFor(fake.Gemini)
	tests := []struct {
		name      string
		quotaID   string
		retryable bool
		after     time.Duration
		period    QuotaPeriod
		daily     bool
	}{
		{"per day", "GenerateRequestsPerDayPerProjectPerModel-FreeTier", false, 0, PerDay, true},
		{"input tokens per day", "GenerateContentInputTokensPerModelPerDay-FreeTier", false, 0, PerDay, true},
		{"per minute", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", true, 5 * time.Second, PerMinute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(fake.Script{Status: 429, QuotaID: tt.quotaID, QuotaValue: "25", RetryDelay: 5 * time.Second,
				ErrorMessage: "You exceeded your current quota, please check your plan and billing details."})
			_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
			e := asError(t, err)
			if e.Kind != RateLimited {
				t.Errorf("Kind = %q, want %q", e.Kind, RateLimited)
			}
			if got := Retryable(err); got != tt.retryable {
				t.Errorf("Retryable = %v, want %v (%v)", got, tt.retryable, e)
			}
			if e.RetryAfter != tt.after {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.after)
			}
			q := e.Quota
			if q == nil || q.ID != tt.quotaID || q.Period != tt.period || q.Limit != 25 ||
				q.Metric != "generativelanguage.googleapis.com/generate_content_free_tier_requests" {
				t.Fatalf("Quota = %+v, want %s per %s, limit 25", q, tt.quotaID, tt.period)
			}
			msg := e.Error()
			if named := strings.Contains(msg, "daily quota "+tt.quotaID) && strings.Contains(msg, "midnight Pacific time"); named != tt.daily {
				t.Errorf("message %q: names the daily quota and its reset = %v, want %v", msg, named, tt.daily)
			}
			if tt.daily && strings.Contains(msg, "retry after") {
				t.Errorf("message %q tells to retry after seconds", msg)
			}
		})
	}
}

// TestParseQuota: of several violations the one that resets last is kept; details without a
// QuotaFailure give none.
func TestParseQuota(t *testing.T) {
	t.Parallel()
	details := []map[string]any{
		{"@type": "type.googleapis.com/google.rpc.Help"},
		{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{
			map[string]any{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "5"},
			map[string]any{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quotaValue": "50"},
			map[string]any{"quotaId": "SomethingElse"},
		}},
	}
	q := parseQuota(details)
	if q == nil || q.Period != PerDay || q.Limit != 50 {
		t.Errorf("parseQuota = %+v, want the daily one, limit 50", q)
	}
	if q := parseQuota(details[:1]); q != nil {
		t.Errorf("parseQuota without a QuotaFailure = %+v, want nil", q)
	}
	if q := parseQuota([]map[string]any{{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{}}}); q != nil {
		t.Errorf("parseQuota of no violations = %+v, want nil", q)
	}
}

// TestParseOverflow: the figures of context-length refusals as providers word them, each
// message as published in the issue named beside it.
func TestParseOverflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		source, msg string
		want        *Overflow
		tipped      bool
	}{
		{"OpenAI GPT-5, cline/cline#5474",
			"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289650 tokens. Please reduce the length of the messages.",
			&Overflow{Window: 272_000, Prompt: 289_650, Requested: 289_650}, false},
		{"OpenAI, The-Vibe-Company/quivr#505",
			"This model's maximum context length is 4097 tokens. However, you requested 4203 tokens (3703 in the messages, 500 in the completion). Please reduce the length of the messages or completion.",
			&Overflow{Window: 4097, Prompt: 3703, Completion: 500, Requested: 4203}, true},
		{"OpenAI, chathub-dev/chathub#126",
			"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.",
			&Overflow{Window: 4097, Prompt: 4294, Requested: 4294}, false},
		{"DeepSeek (OpenAI-compatible), evalstate/fast-agent#621",
			"This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
			&Overflow{Window: 131_072, Prompt: 122_942, Completion: 8192, Requested: 131_134}, true},
		{"vLLM (OpenAI-compatible), THUDM/LongBench#104",
			"This model's maximum context length is 131072 tokens. However, you requested 351430 tokens. Please reduce the length of the messages or completion.",
			&Overflow{Window: 131_072, Requested: 351_430}, false},
		{"OpenRouter, Aider-AI/aider#3721",
			`This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens (10535 of text input, 131072 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`,
			&Overflow{Window: 131_072, Prompt: 10_535, Completion: 131_072, Requested: 141_607}, true},
		{"OpenRouter, boldsoftware/shelley#159",
			"This endpoint's maximum context length is 204800 tokens. However, you requested about 205432 tokens (81684 of text input, 3748 of tool input, 120000 in the output). Please reduce the length of either one",
			&Overflow{Window: 204_800, Prompt: 85_432, Completion: 120_000, Requested: 205_432}, true},
		{"OpenRouter, topoteretes/cognee#1061",
			`This endpoint's maximum context length is 16384 tokens. However, you requested about 94307 tokens (94307 of text input). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`,
			&Overflow{Window: 16_384, Prompt: 94_307, Requested: 94_307}, false},
		{"OpenRouter (Gemini upstream), lm-sys/RouteLLM#34",
			"This model's maximum context length is 8192 tokens, however you requested 8977 tokens (8977 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
			&Overflow{Window: 8192, Prompt: 8977, Requested: 8977}, false},
		{"Gemini, google-gemini/gemini-cli#6678",
			"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
			&Overflow{Window: 1_048_576, Prompt: 1_200_293, Requested: 1_200_293}, false},
		{"Anthropic, stackblitz/bolt.new#7422",
			"input length and `max_tokens` exceed context limit: 86888 + 119866 > 204648, decrease input length or `max_tokens` and try again",
			&Overflow{Window: 204_648, Prompt: 86_888, Completion: 119_866, Requested: 206_754}, true},
		{"xAI, CherryHQ/cherry-studio#3368",
			"Requested token count exceeds the model's maximum context length of 131072 tokens.  You requested a total of 254837 tokens: 123765 tokens from the input messages and 131072 tokens for the completion.  Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			&Overflow{Window: 131_072, Prompt: 123_765, Completion: 131_072, Requested: 254_837}, true},
		{"no figures", "Please reduce the length of the messages.", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			t.Parallel()
			got := parseOverflow(tt.msg)
			switch {
			case (got == nil) != (tt.want == nil):
				t.Fatalf("parseOverflow = %+v, want %+v", got, tt.want)
			case got != nil && *got != *tt.want:
				t.Errorf("parseOverflow = %+v, want %+v", *got, *tt.want)
			}
			if got.ReservationTipped() != tt.tipped {
				t.Errorf("ReservationTipped = %v, want %v", got.ReservationTipped(), tt.tipped)
			}
		})
	}
}

// TestContextLengthFigures: each provider's context-length refusal carries the provider's
// own window and counts, and says when the answer reservation tipped the request over. The
// messages are those of TestParseOverflow (each named there); the bodies are each flavor's
// documented error object.
func TestContextLengthFigures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flavor fake.Flavor
		script fake.Script
		want   Overflow
		tipped bool
	}{
		{fake.OpenAI, fake.Script{Status: 400, ErrorCode: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 4097 tokens. However, you requested 4203 tokens (3703 in the messages, 500 in the completion). Please reduce the length of the messages or completion."},
			Overflow{Window: 4097, Prompt: 3703, Completion: 500, Requested: 4203}, true},
		{fake.OpenAI, fake.Script{Status: 400, ErrorCode: "context_length_exceeded",
			ErrorMessage: "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289650 tokens. Please reduce the length of the messages."},
			Overflow{Window: 272_000, Prompt: 289_650, Requested: 289_650}, false},
		{fake.OpenRouter, fake.Script{Status: 400,
			ErrorMessage: `This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens (10535 of text input, 131072 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`},
			Overflow{Window: 131_072, Prompt: 10_535, Completion: 131_072, Requested: 141_607}, true},
		{fake.Gemini, fake.Script{Status: 400,
			ErrorMessage: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."},
			Overflow{Window: 1_048_576, Prompt: 1_200_293, Requested: 1_200_293}, false},
	}
	for _, tt := range tests {
		fc := flavorFor(tt.flavor)
		t.Run(fc.name+" "+tt.want.Window.String(), func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(tt.script)
			_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
			e := asError(t, err)
			if e.Kind != ContextLength || Retryable(err) {
				t.Fatalf("kind %q, retryable %v; want %q, false", e.Kind, Retryable(err), ContextLength)
			}
			if e.Overflow == nil || *e.Overflow != tt.want {
				t.Fatalf("Overflow = %+v, want %+v", e.Overflow, tt.want)
			}
			const tip = "tokens reserved for the answer tipped it over"
			if got := strings.Contains(e.Error(), tip); got != tt.tipped {
				t.Errorf("message %q: says the reservation tipped it = %v, want %v", e.Error(), got, tt.tipped)
			}
		})
	}
}

// refusalRecorder is a recorder that also takes refusal text.
type refusalRecorder struct {
	*recorder
	mu       sync.Mutex
	refusals []string
}

func (r *refusalRecorder) Refusal(delta string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refusals = append(r.refusals, delta)
}

// TestRefusalStream: refusal deltas reach an observer that takes them (never as answer text),
// and a stream that sent no usage reports its usage as not reported, not as zeros. OpenAI's
// chunk has choices[].delta.refusal (platform.openai.com/docs/api-reference/chat-streaming);
// a refusal stream without a usage chunk is what braintrustdata/braintrust-sdk-python
// recorded (py/src/braintrust/integrations/openai/cassettes/1.71.0/
// test_openai_chat_streaming_sync_preserves_refusal.yaml).
func TestRefusalStream(t *testing.T) {
	t.Parallel()
	for _, f := range []fake.Flavor{fake.OpenAI, fake.OpenRouter} {
		fc := flavorFor(f)
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(fake.Script{NoUsage: true, Steps: []fake.Step{fake.Refuse("I'm sorry,"), fake.Refuse(" I can't help with that.")}})
			rec := &refusalRecorder{recorder: newRecorder()}
			resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, rec)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			const refusal = "I'm sorry, I can't help with that."
			if resp.Refusal != refusal || resp.Text != "" {
				t.Errorf("Refusal %q, Text %q; want the refusal apart from the answer", resp.Refusal, resp.Text)
			}
			rec.mu.Lock()
			got := strings.Join(rec.refusals, "")
			rec.mu.Unlock()
			if got != refusal {
				t.Errorf("observer's refusal = %q, want %q", got, refusal)
			}
			if a := rec.answerText(); a != "" {
				t.Errorf("refusal reached Answer: %q", a)
			}
			if resp.Usage.Reported || resp.Usage != (Usage{}) {
				t.Errorf("Usage = %+v, want not reported", resp.Usage)
			}
		})
	}
}

// TestUsageReported: a stream that sent usage says so, even when every count is zero.
func TestUsageReported(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		p, srv := setup(t, fc)
		srv.Push(fake.Script{Steps: []fake.Step{fake.Text("ok")}, Usage: &fake.Usage{}})
		resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if !resp.Usage.Reported {
			t.Errorf("Usage = %+v, want reported", resp.Usage)
		}
	})
}

// TestPromptBlockedNamesReasonOnce: a prompt Gemini blocked names its block reason once (as
// the error's code), not again in the message. The event is PromptFeedback.blockReason as
// the Gemini API reference documents it (ai.google.dev/api/generate-content#PromptFeedback).
func TestPromptBlockedNamesReasonOnce(t *testing.T) {
	t.Parallel()
	p, srv := setup(t, flavorFor(fake.Gemini))
	srv.Push(fake.Script{Body: "data: " + `{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},"usageMetadata": {"promptTokenCount": 812,"totalTokenCount": 812},"modelVersion": "gemini-2.5-pro","responseId": "r3"}` + "\r\n\r\n"})
	resp, err := p.Stream(context.Background(), Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil)
	e := asError(t, err)
	if e.Kind != ContentFiltered || e.Code != "PROHIBITED_CONTENT" || Retryable(err) {
		t.Errorf("kind %q, code %q, retryable %v; want %q, PROHIBITED_CONTENT, false", e.Kind, e.Code, Retryable(err), ContentFiltered)
	}
	if n := strings.Count(e.Error(), "PROHIBITED_CONTENT"); n != 1 {
		t.Errorf("message %q names the reason %d times, want once", e.Error(), n)
	}
	if resp.StopReason != "prompt blocked: PROHIBITED_CONTENT" || !resp.Usage.Reported || resp.Usage.Input != 812 {
		t.Errorf("StopReason %q, Usage %+v", resp.StopReason, resp.Usage)
	}
}

// TestClientErrorsNotRetryable: a provider's refusal of the request as invalid is a bad
// request and never retryable, over HTTP and in the stream. The in-band case is OpenAI's
// error object with type invalid_request_error and a null code (the error shape of
// platform.openai.com/docs/guides/error-codes; a stream's error event as coder/aibridge
// recorded it in fixtures/openai/chatcompletions/stream_error.txtar); the Gemini 400 is the
// message vercel/ai captured for thinking budget and level set together
// (packages/google/src/__fixtures__/issue-22372-live-errors.json).
func TestClientErrorsNotRetryable(t *testing.T) {
	t.Parallel()
	t.Run("openai in-band invalid_request_error", func(t *testing.T) {
		t.Parallel()
		fc := flavorFor(fake.OpenAI)
		p, srv := setup(t, fc)
		srv.Push(fake.Script{NoFinish: true, Steps: []fake.Step{fake.Raw(
			`data: {"error": {"message": "Invalid value for 'reasoning_effort'.", "type": "invalid_request_error", "param": "reasoning_effort", "code": null}}` + "\n\n")}})
		_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		e := asError(t, err)
		if e.Kind != BadRequest || !e.InBand || Retryable(err) {
			t.Errorf("kind %q, in band %v, retryable %v; want %q, true, false", e.Kind, e.InBand, Retryable(err), BadRequest)
		}
	})
	t.Run("openai in-band server_error stays retryable", func(t *testing.T) {
		t.Parallel()
		fc := flavorFor(fake.OpenAI)
		p, srv := setup(t, fc)
		srv.Push(fake.Script{NoFinish: true, Steps: []fake.Step{fake.Raw(
			`data: {"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error"}}` + "\n\n")}})
		_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		if e := asError(t, err); e.Kind != Server || !Retryable(err) {
			t.Errorf("kind %q, retryable %v; want %q, true", e.Kind, Retryable(err), Server)
		}
	})
	t.Run("gemini 400 thinking settings", func(t *testing.T) {
		t.Parallel()
		fc := flavorFor(fake.Gemini)
		p, srv := setup(t, fc)
		srv.Push(fake.Script{Status: 400, ErrorMessage: "You can only set only one of thinking budget and thinking level."})
		_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		e := asError(t, err)
		if e.Kind != BadRequest || e.Status != 400 || e.Code != "INVALID_ARGUMENT" || Retryable(err) {
			t.Errorf("kind %q, status %d, code %q, retryable %v; want %q, 400, INVALID_ARGUMENT, false", e.Kind, e.Status, e.Code, Retryable(err), BadRequest)
		}
		if !strings.Contains(e.Error(), "thinking budget") {
			t.Errorf("message %q lacks the provider's words", e.Error())
		}
	})
}

// TestOpenRouterDailyQuota: OpenRouter's 429 for the free models' daily limit names the
// quota in its message and copies the rate-limit headers into metadata.headers (the body
// Gitlawb/openclaude#936 quotes; X-RateLimit-Reset in milliseconds since the epoch, per
// openrouter.ai/docs/api-reference/limits; the reset value here is our own). It is not
// retryable and says when the quota resets; the per-minute limit stays retryable.
func TestOpenRouterDailyQuota(t *testing.T) {
	t.Parallel()
	fc := flavorFor(fake.OpenRouter)
	reset := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, body string
		want       Quota
		retryable  bool
		note       string
	}{
		{"per day",
			`{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"50","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"` +
				strconv.FormatInt(reset.UnixMilli(), 10) + `"}}}}`,
			Quota{ID: "free-models-per-day", Period: PerDay, Limit: 50, ResetsAt: reset}, false,
			"the daily quota free-models-per-day (limit 50) is used up: it resets at 2026-11-27 00:00 UTC"},
		{"per minute",
			`{"error":{"message":"Rate limit exceeded: free-models-per-min. ","code":429}}`,
			Quota{ID: "free-models-per-min", Period: PerMinute}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(fake.Script{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: tt.body})
			_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
			e := asError(t, err)
			if e.Kind != RateLimited || Retryable(err) != tt.retryable {
				t.Errorf("kind %q, retryable %v; want %q, %v", e.Kind, Retryable(err), RateLimited, tt.retryable)
			}
			if e.Quota == nil || !e.Quota.ResetsAt.Equal(tt.want.ResetsAt) {
				t.Fatalf("Quota = %+v, want %+v", e.Quota, tt.want)
			}
			got := *e.Quota
			got.ResetsAt = tt.want.ResetsAt
			if got != tt.want {
				t.Errorf("Quota = %+v, want %+v", got, tt.want)
			}
			if tt.note != "" && !strings.Contains(e.Error(), tt.note) {
				t.Errorf("message %q lacks %q", e.Error(), tt.note)
			}
			if wantAfter := map[bool]time.Duration{true: 7 * time.Second, false: 0}[tt.retryable]; e.RetryAfter != wantAfter {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, wantAfter)
			}
		})
	}
}
