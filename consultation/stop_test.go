package consultation

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// sse frames JSON events as a server-sent event stream.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// Streams that end normally but without a usable answer, through the real SDK clients. Each
// event is assembled field by field from the provider's documented schema (no field or value
// is invented); where a behaviour was seen in the wild, the report is named:
//   - Gemini: GenerateContentResponse, Candidate.finishReason (SAFETY, RECITATION, MAX_TOKENS,
//     OTHER), Candidate.safetyRatings (category, probability, blocked) and
//     PromptFeedback.blockReason (PROHIBITED_CONTENT), in the Gemini API reference
//     (ai.google.dev/api/generate-content). A MAX_TOKENS candidate whose content has no parts
//     is what a thinking model sends when thinking used the whole output limit: reported in
//     googleapis/python-genai#811 ("Empty response ... finish_reason MAX_TOKENS") and handled
//     in stanford-crfm/helm#3804 ("No content parts in candidate").
//   - OpenAI: ChatCompletionChunk, choices[].finish_reason "content_filter" and
//     choices[].delta.refusal, in the OpenAI API reference (platform.openai.com/docs/api-reference/chat-streaming).
//   - OpenRouter: finish_reason normalised to "content_filter" beside native_finish_reason,
//     the upstream model's own reason, and the usage block with cost, in the OpenRouter API
//     reference (openrouter.ai/docs/api-reference/overview, "Finish Reason"; usage accounting).
func TestStopReasons(t *testing.T) {
	t.Parallel()
	const (
		geminiSafety        = `{"candidates": [{"finishReason": "SAFETY","index": 0,"safetyRatings": [{"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT","probability": "NEGLIGIBLE"},{"category": "HARM_CATEGORY_HATE_SPEECH","probability": "HIGH","blocked": true},{"category": "HARM_CATEGORY_HARASSMENT","probability": "NEGLIGIBLE"},{"category": "HARM_CATEGORY_DANGEROUS_CONTENT","probability": "NEGLIGIBLE"}]}],"usageMetadata": {"promptTokenCount": 812,"totalTokenCount": 812},"modelVersion": "gemini-2.5-pro","responseId": "r1"}`
		geminiPartial       = `{"candidates": [{"content": {"parts": [{"text": "The handler starts by"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 812,"candidatesTokenCount": 4,"totalTokenCount": 816},"modelVersion": "gemini-2.5-pro","responseId": "r2"}`
		geminiRecitation    = `{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "RECITATION","index": 0}],"usageMetadata": {"promptTokenCount": 812,"candidatesTokenCount": 4,"totalTokenCount": 816},"modelVersion": "gemini-2.5-pro","responseId": "r2"}`
		geminiPromptBlocked = `{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},"usageMetadata": {"promptTokenCount": 812,"totalTokenCount": 812},"modelVersion": "gemini-2.5-pro","responseId": "r3"}`
		geminiMaxTokens     = `{"candidates": [{"content": {"role": "model"},"finishReason": "MAX_TOKENS","index": 0}],"usageMetadata": {"promptTokenCount": 812,"totalTokenCount": 1835,"thoughtsTokenCount": 1023},"modelVersion": "gemini-2.5-pro","responseId": "r4"}`
		geminiOther         = `{"candidates": [{"content": {"parts": [{"text": "Partly answered."}],"role": "model"},"finishReason": "OTHER","index": 0}],"usageMetadata": {"promptTokenCount": 812,"candidatesTokenCount": 3,"totalTokenCount": 815},"modelVersion": "gemini-2.5-pro","responseId": "r5"}`

		openaiFiltered1 = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763900000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`
		openaiFiltered2 = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763900000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{"content":"The function first"},"logprobs":null,"finish_reason":null}]}`
		openaiFiltered3 = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763900000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"content_filter"}]}`
		openaiRefusal1  = `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1763900000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"logprobs":null,"finish_reason":null}]}`
		openaiRefusal2  = `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1763900000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{"refusal":"I'm sorry, I can't help with that."},"logprobs":null,"finish_reason":null}]}`
		openaiRefusal3  = `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1763900000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`

		openrouterFiltered = `{"id":"gen-1","provider":"Google","model":"google/gemini-2.5-pro","object":"chat.completion.chunk","created":1763900000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"content_filter","native_finish_reason":"SAFETY","logprobs":null}]}`
		openrouterUsage    = `{"id":"gen-1","provider":"Google","model":"google/gemini-2.5-pro","object":"chat.completion.chunk","created":1763900000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":812,"completion_tokens":0,"total_tokens":812,"cost":0.001015}}`
	)
	cases := []struct {
		name, flavorName string
		flavor           int
		body             string
		class            ErrorClass // "" for an answer
		want             []string   // in the result text
		partial          string     // the partial answer kept in the structured result
	}{
		{"gemini safety, no text", "gemini", 2, sse(geminiSafety), ClassContentFiltered,
			[]string{"content filter", "SAFETY", "HARM_CATEGORY_HATE_SPEECH"}, ""},
		{"gemini recitation after text", "gemini", 2, sse(geminiPartial, geminiRecitation), ClassContentFiltered,
			[]string{"RECITATION", "Partial answer (cut by the content filter):\nThe handler starts by"}, "The handler starts by"},
		{"gemini prompt blocked", "gemini", 2, sse(geminiPromptBlocked), ClassContentFiltered,
			[]string{"blocked", "PROHIBITED_CONTENT"}, ""},
		{"gemini output limit, no text", "gemini", 2, sse(geminiMaxTokens), ClassOutputLimit,
			[]string{"output limit before it wrote any answer", "MAX_TOKENS", "1,023 reasoning tokens"}, ""},
		{"gemini unknown reason", "gemini", 2, sse(geminiOther), "",
			[]string{"Partly answered.", "does not know: OTHER"}, ""},
		{"openai content filter after text", "openai", 1, sse(openaiFiltered1, openaiFiltered2, openaiFiltered3) + "data: [DONE]\n\n", ClassContentFiltered,
			[]string{"content filter", "content_filter", "Partial answer (cut by the content filter):\nThe function first"}, "The function first"},
		{"openai refusal", "openai", 1, sse(openaiRefusal1, openaiRefusal2, openaiRefusal3) + "data: [DONE]\n\n", ClassContentFiltered,
			[]string{"refused to answer", "I'm sorry, I can't help with that."}, ""},
		{"openrouter filtered upstream", "openrouter", 0, ": OPENROUTER PROCESSING\n\n" + sse(openrouterFiltered, openrouterUsage) + "data: [DONE]\n\n", ClassContentFiltered,
			[]string{"content filter", "content_filter (SAFETY)"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, tc.flavor)
			srv.Push(fake.Script{Body: tc.body})
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
			sum := summaryOf(t, res)
			switch {
			case tc.class == "" && res.IsError:
				t.Fatalf("error result, want an answer:\n%s", res.Text())
			case tc.class != "" && (!res.IsError || sum.Error == nil || sum.Error.Class != tc.class):
				t.Fatalf("isError %v, error %+v; want class %s:\n%s", res.IsError, sum.Error, tc.class, res.Text())
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Text(), w) {
					t.Errorf("result lacks %q:\n%s", w, res.Text())
				}
			}
			if tc.class != "" && sum.Answer != tc.partial {
				t.Errorf("structured answer = %q, want %q", sum.Answer, tc.partial)
			}
			if tc.class == ClassOutputLimit && (sum.Usage == nil || sum.Usage.Reasoning != 1023 || sum.Error.ProviderCode != "MAX_TOKENS") {
				t.Errorf("usage %+v, provider code %q: the usage and the stop reason must be kept", sum.Usage, sum.Error.ProviderCode)
			}
			if n := len(srv.Requests()); n > 2 { // the model look-up, then one request: never retried
				t.Errorf("%d requests: a stop was retried", n)
			}
		})
	}
}

// TestErrorClasses: a program can act on every upstream failure from its structured error:
// class, retryable, the HTTP status, the provider's code and the delay it asked for.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		sc        fake.Script
		class     ErrorClass
		retryable bool
		status    int
		code      string
	}{
		{"unauthenticated", fake.Script{Status: 401}, ClassUnauthenticated, false, 401, "invalid_api_key"},
		{"context length", fake.Script{Status: 400, ErrorCode: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 1047576 tokens. However, your messages resulted in 1200000 tokens."},
			ClassTooLarge, false, 400, "context_length_exceeded"},
		{"model not found", fake.Script{Status: 404, ErrorCode: "model_not_found"}, ClassNotFound, false, 404, "model_not_found"},
		{"bad request", fake.Script{Status: 400, ErrorCode: "invalid_request_error"}, ClassInvalidArgument, false, 400, "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, 1) // OpenAI's wire format
			srv.SetDefault(tc.sc)
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
			sum := summaryOf(t, res)
			e := sum.Error
			if !res.IsError || e == nil {
				t.Fatalf("isError %v, error %+v:\n%s", res.IsError, e, res.Text())
			}
			if n := strings.Count(strings.ToLower(res.Text()), "check the"); tc.class == ClassUnauthenticated && n != 1 {
				t.Errorf("the key advice is given %d times:\n%s", n, res.Text())
			}
			if e.Class != tc.class || e.Retryable != tc.retryable || e.HTTPStatus != tc.status || e.ProviderCode != tc.code || e.Message == "" || strings.Contains(sum.Message, e.Message) {
				t.Errorf("error = %+v, want class %s, retryable %v, status %d, code %q", *e, tc.class, tc.retryable, tc.status, tc.code)
			}
		})
	}
	t.Run("rate limited with a delay", func(t *testing.T) {
		t.Parallel()
		dir := sampleTree(t)
		synctest.Test(t, func(t *testing.T) { // the fake clock: the 3 s are the call's, not the machine's
			srv, svc := bubbleUpstream(t, 1)
			srv.SetDefault(fake.Script{Status: 429, Header: map[string]string{"Retry-After": "30"}})
			res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 3 * time.Second}), nil)
			e := summaryOf(t, res).Error
			if e == nil || e.Class != ClassRateLimited || !e.Retryable || e.HTTPStatus != 429 || e.RetryAfterSeconds != 30 {
				t.Errorf("error = %+v, want rate_limited, retryable, 429, retry after 30 s:\n%s", e, res.Text())
			}
		})
	})
}

// TestAdviceFitsTheCause: each failure gets the advice that fits it, and never advice that
// cannot help.
func TestAdviceFitsTheCause(t *testing.T) {
	t.Parallel()
	t.Run("context length refused", func(t *testing.T) {
		t.Parallel()
		srv, svc := upstream(t, 1)
		srv.SetDefault(fake.Script{Status: 400, ErrorCode: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 1047576 tokens. However, your messages resulted in 1200000 tokens."})
		res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
		for _, w := range []string{"Too large for gpt-4.1", "More time will not help", "refused this request as larger than its context window", "exclude the largest directories"} {
			if !strings.Contains(res.Text(), w) {
				t.Errorf("result lacks %q:\n%s", w, res.Text())
			}
		}
		for _, w := range []string{"raise timeout", "fits with room for the answer"} {
			if strings.Contains(res.Text(), w) {
				t.Errorf("result says %q:\n%s", w, res.Text())
			}
		}
	})
	t.Run("silent upstream", func(t *testing.T) {
		t.Parallel()
		dir := sampleTree(t)
		synctest.Test(t, func(t *testing.T) { // the fake clock: the idle timeout comes first
			srv, svc := bubbleUpstream(t, 0)
			svc.IdleTimeout = 300 * time.Millisecond
			srv.Push(fake.Script{HeaderDelay: time.Hour})
			res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 5 * time.Second}), nil)
			sum := summaryOf(t, res)
			if sum.Error == nil || sum.Error.Class != ClassIdleTimeout || !strings.Contains(res.Text(), "stuck upstream, not too large") {
				t.Errorf("error %+v:\n%s", sum.Error, res.Text())
			}
			for _, w := range []string{"raise timeout", "exclude the largest"} {
				if strings.Contains(res.Text(), w) {
					t.Errorf("a silent upstream is told to %q:\n%s", w, res.Text())
				}
			}
		})
	})
	t.Run("every match over the per-file cap", func(t *testing.T) {
		t.Parallel()
		dir := writeTree(t, map[string]string{"gen/big.go": "package gen\n" + strings.Repeat("// x\n", 300_000)})
		svc := &Service{Counter: counter}
		res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.go", Query: "q", DryRun: true}, nil)
		sum := summaryOf(t, res)
		if sum.Error == nil || sum.Error.Class != ClassTooLarge || !strings.Contains(res.Text(), "over the per-file cap") || strings.Contains(res.Text(), "No files matched") {
			t.Errorf("error %+v:\n%s", sum.Error, res.Text())
		}
	})
}

// TestInBandErrorAfterReasoning: an error event after the model reasoned names the phase
// exactly (thinking, with its tokens), not "waiting for the first token", and keeps the usage
// the event carried. The event is the one OpenRouter documents for errors mid-stream
// (openrouter.ai/docs/api-reference/streaming, "Handling Errors During Streaming", copied
// as given), with the usage block of its usage accounting added: issue #11 reports the
// recorded error events carry it ("the usage sent in the error chunk is dropped").
func TestInBandErrorAfterReasoning(t *testing.T) {
	t.Parallel()
	think := func(s string) string {
		return `{"id":"cmpl-abc123","object":"chat.completion.chunk","created":1234567890,"model":"gpt-3.5-turbo","provider":"openai","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"` + s + `"},"finish_reason":null}]}`
	}
	const failure = `{"id":"cmpl-abc123","object":"chat.completion.chunk","created":1234567890,"model":"gpt-3.5-turbo","provider":"openai","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}],"usage":{"prompt_tokens":812,"completion_tokens":4096,"total_tokens":4908,"completion_tokens_details":{"reasoning_tokens":4096},"cost":0.04197}}`
	srv, svc := upstream(t, 0)
	svc.jitter = noJitter
	srv.SetDefault(fake.Script{Body: sse(think("Let me look at the handler first and then at the tests. "), think("The retry loop is in consult, the budget is the deadline, and so on at length."), failure)})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: "google/gemini-2.5-pro|thinking"}), nil)
	sum := summaryOf(t, res)
	if !res.IsError || !strings.Contains(res.Text(), "while model thinking (") || strings.Contains(res.Text(), "first token") {
		t.Errorf("result does not name the thinking phase:\n%s", res.Text())
	}
	if sum.Error == nil || sum.Error.Class != ClassUpstreamError || !strings.Contains(res.Text(), "Provider disconnected unexpectedly") {
		t.Errorf("error %+v, want upstream_error with the provider's message:\n%s", sum.Error, res.Text())
	}
	if sum.Usage == nil || sum.Usage.Reasoning != 4096 || sum.Usage.Input != 812 || sum.Usage.CostUSD == nil {
		t.Errorf("usage = %+v, want the error event's (812 in, 4,096 reasoning, a cost)", sum.Usage)
	}
}
