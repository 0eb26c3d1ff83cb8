package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

func TestStreamHTTPErrors(t *testing.T) {
	t.Parallel()
	dated := time.Now()
	httpDate := dated.Add(90 * time.Second).UTC().Format(http.TimeFormat)
	type want struct {
		kind       Kind
		retry      bool
		retryAfter time.Duration // exact unless approx: then at most this, less the time since dated
		approx     bool
		msg        string // substring of the error message
	}
	tests := []struct {
		name    string
		flavors []fake.Flavor // nil = all
		script  fake.Script
		want    want
	}{
		{"429 Retry-After seconds", nil,
			fake.Script{Status: 429, Header: map[string]string{"Retry-After": "2"}},
			want{kind: RateLimited, retry: true, retryAfter: 2 * time.Second}},
		{"429 retry-after-ms", nil,
			fake.Script{Status: 429, Header: map[string]string{"retry-after-ms": "1500", "Retry-After": "9"}},
			want{kind: RateLimited, retry: true, retryAfter: 1500 * time.Millisecond}},
		{"429 Retry-After HTTP date", nil,
			fake.Script{Status: 429, Header: map[string]string{"Retry-After": httpDate}},
			want{kind: RateLimited, retry: true, retryAfter: 90 * time.Second, approx: true}},
		{"429 Gemini retryDelay", []fake.Flavor{fake.Gemini},
			fake.Script{Status: 429, RetryDelay: 3500 * time.Millisecond, ErrorMessage: "You exceeded your current quota"},
			want{kind: RateLimited, retry: true, retryAfter: 3500 * time.Millisecond, msg: "exceeded your current quota"}},
		{"401", nil,
			fake.Script{Status: 401, ErrorMessage: "Incorrect API key provided: " + testKey},
			want{kind: Auth, msg: "check the API key"}},
		{"403", nil,
			fake.Script{Status: 403, ErrorMessage: "Permission denied"},
			want{kind: Auth, msg: "check the API key"}},
		{"Gemini invalid key is a 400", []fake.Flavor{fake.Gemini},
			fake.Script{Status: 400, ErrorMessage: "API key not valid. Please pass a valid API key."},
			want{kind: Auth, msg: "check the API key"}},
		{"402", []fake.Flavor{fake.OpenRouter},
			fake.Script{Status: 402, ErrorMessage: "Insufficient credits"},
			want{kind: Billing, msg: "credit"}},
		{"408", nil, fake.Script{Status: 408}, want{kind: UpstreamTimeout, retry: true}},
		{"500", nil, fake.Script{Status: 500}, want{kind: Server, retry: true}},
		{"502", nil, fake.Script{Status: 502}, want{kind: Server, retry: true}},
		{"503", nil, fake.Script{Status: 503}, want{kind: Overloaded, retry: true}},
		{"504", nil, fake.Script{Status: 504}, want{kind: UpstreamTimeout, retry: true}},
		{"529", []fake.Flavor{fake.OpenRouter}, fake.Script{Status: 529, ErrorMessage: "Overloaded"}, want{kind: Overloaded, retry: true}},
		{"502 HTML page", nil,
			fake.Script{Status: 502, ContentType: "text/html", Body: "<html><body><h1>Bad gateway</h1></body></html>"},
			want{kind: Server, retry: true, msg: "server error (HTTP 502): Bad gateway"}},
		{"400", nil, fake.Script{Status: 400, ErrorMessage: "temperature must be a number"},
			want{kind: BadRequest, msg: "temperature"}},
		{"404", nil, fake.Script{Status: 404}, want{kind: NotFound}},
		{"OpenAI context_length_exceeded", []fake.Flavor{fake.OpenAI},
			fake.Script{Status: 400, ErrorCode: "context_length_exceeded",
				ErrorMessage: "This model's maximum context length is 200000 tokens. However, your messages resulted in 250000 tokens."},
			want{kind: ContextLength, msg: "maximum context length"}},
		{"OpenRouter context length", []fake.Flavor{fake.OpenRouter},
			fake.Script{Status: 400,
				ErrorMessage: "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens (250000 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."},
			want{kind: ContextLength, msg: "maximum context length"}},
		{"Gemini token limit", []fake.Flavor{fake.Gemini},
			fake.Script{Status: 400, ErrorMessage: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."},
			want{kind: ContextLength, msg: "exceeds the maximum number of tokens"}},
		{"OpenRouter invalid model", []fake.Flavor{fake.OpenRouter},
			fake.Script{Status: 400, ErrorMessage: "nope/nothing is not a valid model ID"},
			want{kind: NotFound}},
	}
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				if tt.flavors != nil && !contains(tt.flavors, fc.flavor) {
					continue
				}
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					p, srv := setup(t, fc)
					srv.Push(tt.script)
					resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
					e := asError(t, err)
					if e.Kind != tt.want.kind {
						t.Errorf("Kind = %q, want %q (%v)", e.Kind, tt.want.kind, e)
					}
					if !errors.Is(err, tt.want.kind) {
						t.Errorf("errors.Is(err, %q) = false", tt.want.kind)
					}
					if e.Status != tt.script.Status {
						t.Errorf("Status = %d, want %d", e.Status, tt.script.Status)
					}
					if e.InBand || e.Partial {
						t.Errorf("InBand, Partial = %v, %v; want false, false", e.InBand, e.Partial)
					}
					if got := Retryable(err); got != tt.want.retry {
						t.Errorf("Retryable = %v, want %v (%v)", got, tt.want.retry, e)
					}
					if tt.want.approx {
						// The date is whole seconds, and the subtest may run a while after it was made.
						if lo := tt.want.retryAfter - time.Second - time.Since(dated); e.RetryAfter < lo || e.RetryAfter > tt.want.retryAfter {
							t.Errorf("RetryAfter = %v, want from %v to %v", e.RetryAfter, lo, tt.want.retryAfter)
						}
					} else if e.RetryAfter != tt.want.retryAfter {
						t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.want.retryAfter)
					}
					if !strings.Contains(err.Error(), tt.want.msg) {
						t.Errorf("message %q lacks %q", err.Error(), tt.want.msg)
					}
					if !strings.HasPrefix(err.Error(), fc.name+": ") {
						t.Errorf("message %q does not name the provider", err.Error())
					}
					if resp == nil || resp.Text != "" {
						t.Errorf("response = %+v, want empty", resp)
					}
					if n := len(srv.Requests()); n != 1 {
						t.Errorf("the fake got %d requests, want 1 (no SDK retries)", n)
					}
				})
			}
		})
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("plain"), false},
		{context.DeadlineExceeded, false},
		{&Error{Kind: Transport}, true},
		{&Error{Kind: Transport, Partial: true}, false},
		{&Error{Kind: UpstreamTimeout}, true},
		{&Error{Kind: RateLimited}, true},
		{&Error{Kind: Overloaded, InBand: true}, true},
		{&Error{Kind: Overloaded, InBand: true, Partial: true}, false},
		{&Error{Kind: Server}, true},
		{&Error{Kind: Auth}, false},
		{&Error{Kind: Billing}, false},
		{&Error{Kind: BadRequest}, false},
		{&Error{Kind: NotFound}, false},
		{&Error{Kind: ContextLength}, false},
		{&Error{Kind: Canceled}, false},
		{errors.Join(errors.New("wrapped"), &Error{Kind: RateLimited}), true},
	}
	for _, tt := range tests {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"nil", nil, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"ms wins", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"7"}}, 250 * time.Millisecond},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"bad ms falls back", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"2"}}, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseRetryAfter(tt.header, now); got != tt.want {
				t.Errorf("parseRetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseRetryDelay(t *testing.T) {
	t.Parallel()
	retryInfo := func(v any) []map[string]any {
		return []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
			{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": v},
		}
	}
	tests := []struct {
		name    string
		details []map[string]any
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", retryInfo("37s"), 37 * time.Second},
		{"fraction", retryInfo("0.25s"), 250 * time.Millisecond},
		{"object", retryInfo(map[string]any{"seconds": float64(2), "nanos": float64(5e8)}), 2500 * time.Millisecond},
		{"garbage", retryInfo("soon"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseRetryDelay(tt.details); got != tt.want {
				t.Errorf("parseRetryDelay = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Provider: "openai", Kind: RateLimited, Status: 429, Code: "rate_limit_exceeded", Message: "slow down", RetryAfter: 2 * time.Second},
			"openai: rate limited (HTTP 429, rate_limit_exceeded): slow down; retry after 2 seconds"},
		{&Error{Provider: "openrouter", Kind: Server, Code: "502", InBand: true, Message: "Provider disconnected", Partial: true},
			"openrouter: server error (502) in the stream: Provider disconnected (after part of the answer had arrived)"},
		{&Error{Provider: "gemini", Kind: Auth, Status: 400, Code: "INVALID_ARGUMENT", Message: "API key not valid."},
			"gemini: authentication failed (HTTP 400, INVALID_ARGUMENT): API key not valid.; check the API key (the key argument or GEMINI_API_KEY or GOOGLE_API_KEY)"},
		{&Error{Provider: "openrouter", Kind: Billing, Status: 402, Code: "402"},
			"openrouter: payment required (HTTP 402); check the account's credit"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() =\n %q\nwant\n %q", got, tt.want)
		}
	}
}

func TestKindIsAnError(t *testing.T) {
	t.Parallel()
	err := error(&Error{Provider: "openai", Kind: NotFound})
	if !errors.Is(err, NotFound) || errors.Is(err, BadRequest) {
		t.Error("errors.Is does not match the Kind")
	}
	if got := NotFound.Error(); got != "model not found" {
		t.Errorf("NotFound.Error() = %q", got)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	r := redactor{key: testKey}
	tests := []struct{ in, want string }{
		{"key " + testKey + " rejected", "key [redacted] rejected"},
		{"Incorrect API key provided: sk-proj-abc****wxyz.", "Incorrect API key provided: [redacted]."},
		{"bad key AIzaSyA1234567890abcdefg", "bad key [redacted]"},
		{"  many\n\n spaces  ", "many spaces"},
		{"<html><head><style>p{}</style></head><body><h1>502 Bad Gateway</h1></body></html>", "502 Bad Gateway"},
		{strings.Repeat("é", 400), strings.Repeat("é", 300) + "…"},
	}
	for _, tt := range tests {
		if got := r.clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestKindForStatusAndRefine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		code, msg string
		want      Kind
	}{
		{400, "", "bad", BadRequest},
		{400, "context_length_exceeded", "", ContextLength},
		{400, "", "Please reduce the length of the messages", ContextLength},
		{413, "", "too large", ContextLength},
		{400, "", "API key not valid", Auth},
		{400, "", "foo is not a valid model ID", NotFound},
		{500, "", "The server is overloaded", Overloaded},
		{500, "", "boom", Server},
		{429, "", "", RateLimited},
		{400, "RESOURCE_EXHAUSTED", "quota", RateLimited},
		{418, "", "", BadRequest},
	}
	for _, tt := range tests {
		if got := refine(kindForStatus(tt.status), tt.code, tt.msg); got != tt.want {
			t.Errorf("kind(%d, %q, %q) = %q, want %q", tt.status, tt.code, tt.msg, got, tt.want)
		}
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	echo := "the key " + testKey + " is wrong"
	scripts := []fake.Script{
		{Status: 401, ErrorMessage: echo},
		{Status: 400, ErrorMessage: echo},
		{Status: 429, ErrorMessage: echo},
		{Status: 500, ContentType: "text/plain", Body: echo},
		{Steps: []fake.Step{fake.Text("a"), fake.Fail(502, echo)}},
		{Steps: []fake.Step{fake.Fail(400, echo)}},
	}
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(scripts...)
			for i := range scripts {
				_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
				if err == nil {
					t.Fatalf("script %d: no error", i)
				}
				var logs syncBuffer
				slog.New(slog.NewJSONHandler(&logs, nil)).Error("failed", "err", err)
				for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err),
					fmt.Sprintf("%#v", err), logs.String()} {
					assertNoKey(t, fmt.Sprintf("script %d", i), s)
				}
				var e *Error
				if errors.As(err, &e) && !strings.Contains(e.Message, "[redacted]") {
					t.Errorf("script %d: message %q, want the echoed key redacted", i, e.Message)
				}
			}
		})
	}
}

// TestRedactKeyPieces: any run of 16 or more of the key's characters is redacted, whatever
// surrounds it (a provider echoing the key without its "sk-or-v1-" prefix, or part of it);
// shorter runs are left alone.
func TestRedactKeyPieces(t *testing.T) {
	t.Parallel()
	const key = "sk-or-v1-0123456789abcdefghijKLMNOPQRST"
	bare := key[len("sk-or-v1-"):]
	tests := []struct{ name, in, want string }{
		{"without prefix", "invalid key " + bare + ".", "invalid key [redacted]."},
		{"glued to text", "key=" + bare + "xyz", "key=[redacted]xyz"},
		{"16 characters", "got 0123456789abcdef!", "got [redacted]!"},
		{"15 characters", "got 0123456789abcde!", "got 0123456789abcde!"},
		{"two pieces", "a 0123456789abcdefg b ghijKLMNOPQRST-x c", "a [redacted] b ghijKLMNOPQRST-x c"},
		{"two long pieces", "0123456789abcdefg/cdefghijKLMNOPQRST", "[redacted]/[redacted]"},
		{"pieces that overlap in the key", "9abcdefghijKLMNOP" + "0123456789abcdefghij", "[redacted]"},
		{"no piece", "rate limited, retry later", "rate limited, retry later"},
	}
	r := redactor{key: key}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := r.clean(tt.in); got != tt.want {
				t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestUpstreamMessageEscaped: an error message from the upstream reaches reports with its
// control and bidi characters escaped, through every provider.
func TestUpstreamMessageEscaped(t *testing.T) {
	t.Parallel()
	const msg = "overloaded\x1b]52;c;ZXZpbA==\x07 \u202eretry\u009b2J"
	const want = `overloaded\x1b]52;c;ZXZpbA==\x07 \u202eretry\u009b2J`
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(fake.Script{Status: 400, ErrorMessage: msg, ErrorCode: "bad\x1b[2Jcode"})
			_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			got := err.Error()
			if !strings.Contains(got, want) || strings.ContainsAny(got, "\x1b\x07\u202e\u009b") {
				t.Errorf("error = %q, want the message escaped as %q", got, want)
			}
		})
	}
}

// TestRetryHint: every way a provider says how long to wait. Header names and formats from
// OpenAI's rate-limit guide (platform.openai.com/docs/guides/rate-limits: "x-ratelimit-reset-
// requests: 1s", "x-ratelimit-reset-tokens: 6m0s") and the message of an OpenAI 429 as the
// API sends it ("... Please try again in 2.734s. Visit ...").
func TestRetryHint(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	const tpm = "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 29824, Requested 1543. Please try again in 2.734s. Visit https://platform.openai.com/account/rate-limits to learn more."
	for _, tc := range []struct {
		name string
		h    http.Header
		msg  string
		want time.Duration
	}{
		{"retry-after seconds", hdr("Retry-After", "7"), "", 7 * time.Second},
		{"retry-after-ms wins", hdr("Retry-After", "7", "retry-after-ms", "1500"), "", 1500 * time.Millisecond},
		{"retry-after date", hdr("Retry-After", now.Add(20*time.Second).Format(http.TimeFormat)), "", 20 * time.Second},
		{"tokens exhausted", hdr("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s",
			"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"), "", 6 * time.Minute},
		{"requests exhausted", hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20ms",
			"x-ratelimit-remaining-tokens", "100", "x-ratelimit-reset-tokens", "3s"), "", 20 * time.Millisecond},
		{"none exhausted: the earliest", hdr("x-ratelimit-reset-requests", "2s", "x-ratelimit-reset-tokens", "500ms"), "", 500 * time.Millisecond},
		{"message seconds", nil, tpm, 2734 * time.Millisecond},
		{"message milliseconds", nil, "Please try again in 20ms.", 20 * time.Millisecond},
		{"message words", nil, "Quota exceeded. Please retry in 37.2 seconds.", 37200 * time.Millisecond},
		{"header before message", hdr("Retry-After", "3"), tpm, 3 * time.Second},
		{"nothing said", hdr("x-request-id", "r"), "Rate limit reached.", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retryHint(tc.h, tc.msg, now); got != tc.want {
				t.Errorf("retryHint = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRefineOutputLimit: a server error whose text or native reason says the output-token
// limit was reached is an output limit, which a retry would only repeat; other server errors
// stay retryable. These are classifier inputs, not recorded provider events.
func TestRefineOutputLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		message string
		want    Kind
	}{
		{"Provider returned error (output token limit reached while thinking)", OutputLimit},
		{"Provider returned error (MAX_TOKENS)", OutputLimit},
		{"max_tokens limit reached", OutputLimit},
		{"Provider disconnected unexpectedly", Server},
		{"The model is overloaded. Please try again later.", Overloaded},
	} {
		if got := refine(Server, "", tc.message); got != tc.want {
			t.Errorf("refine(Server, %q) = %v, want %v", tc.message, got, tc.want)
		}
	}
	if Retryable(&Error{Kind: OutputLimit}) {
		t.Error("an output-limit error is retryable")
	}
}

// TestQuotaPeriod: the period is read from Gemini's quota ids and OpenRouter's alike. The
// per-day and per-minute ids are ones the providers sent (Gemini's in the published
// recordings replayed against the binary, OpenRouter's per-day id in the body
// TestOpenRouterDailyQuota cites, its per-minute id in the same message as public clients of
// OpenRouter match it: "Rate limit exceeded: free-models-per-min");
// the per-hour ids and the id without a period are
// made up, to reach the parser's other branches, not to stand for anything sent.
func TestQuotaPeriod(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]QuotaPeriod{
		"GenerateRequestsPerDayPerProjectPerModel-FreeTier":    PerDay,
		"GenerateRequestsPerMinutePerProjectPerModel-FreeTier": PerMinute,
		"GenerateContentInputTokensPerModelPerHour":            PerHour, // made up
		"free-models-per-day":                                  PerDay,
		"free-models-per-min":                                  PerMinute,
		"free-models-per-hour":                                 PerHour, // made up
		"GenerateContentPaidTierInputTokens":                   "",      // made up
	} {
		if got := quotaPeriod(id); got != want {
			t.Errorf("quotaPeriod(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestCodeString: an error's code as OpenAI (a string or null) and OpenRouter (a number)
// send it; the object is made up, a code of a shape neither sends, kept as written.
func TestCodeString(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		``:                          "",
		`null`:                      "",
		`"context_length_exceeded"`: "context_length_exceeded",
		`502`:                       "502",
		`{"odd":1}`:                 `{"odd":1}`,
	} {
		if got := codeString(json.RawMessage(raw)); got != want {
			t.Errorf("codeString(%s) = %q, want %q", raw, got, want)
		}
	}
}
