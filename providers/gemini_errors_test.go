package providers

import (
	"context"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// geminiErrorBody is a Google API error as the Gemini API sends it (google.rpc.Status in
// JSON: ai.google.dev/gemini-api/docs/troubleshooting, the details types from googleapis
// google/rpc/error_details.proto).
const geminiErrorBody = `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota. Please retry in 37.2s.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
       "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
         "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "5"}]},
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    ]
  }
}
`

// TestGeminiErrorFields: every field of the error a Gemini failure becomes, for HTTP errors
// with Google's error body, with other bodies and with none, and for error events inside a
// stream. The bodies in Google's layout follow the documented google.rpc.Status shape (see
// geminiErrorBody); their messages are illustrative, not recorded. The others (a proxy's
// text page, an empty body, JSON that is no Google error, a string code) are made up on
// purpose: inputs outside the documented format, to pin what the client does with them,
// standing for no provider's wire format. Recorded real error responses are among the
// replayed recordings (docs/testing.md).
func TestGeminiErrorFields(t *testing.T) {
	t.Parallel()
	event := func(json string) fake.Script {
		return fake.Script{Body: "data: " + json + "\r\n\r\n"}
	}
	tests := []struct {
		name   string
		script fake.Script
		want   Error
	}{
		{"429 RetryInfo and a per-minute quota",
			fake.Script{Status: 429, ContentType: "application/json; charset=UTF-8", Body: geminiErrorBody},
			Error{Kind: RateLimited, Status: 429, Code: "RESOURCE_EXHAUSTED",
				Message: "You exceeded your current quota. Please retry in 37.2s.", RetryAfter: 37 * time.Second,
				Quota: &Quota{ID: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
					Metric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", Limit: 5, Period: PerMinute}}},
		{"429 without RetryInfo: Retry-After",
			fake.Script{Status: 429, Header: map[string]string{"Retry-After": "12"}, ContentType: "application/json",
				Body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`},
			Error{Kind: RateLimited, Status: 429, Code: "RESOURCE_EXHAUSTED",
				Message: "Resource has been exhausted (e.g. check quota).", RetryAfter: 12 * time.Second}},
		{"400 API_KEY_INVALID",
			fake.Script{Status: 400, ContentType: "application/json", Body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`},
			Error{Kind: Auth, Status: 400, Code: "INVALID_ARGUMENT", Message: "API key not valid. Please pass a valid API key."}},
		{"404 NOT_FOUND",
			fake.Script{Status: 404, ContentType: "application/json", Body: `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta","status":"NOT_FOUND"}}`},
			Error{Kind: NotFound, Status: 404, Code: "NOT_FOUND", Message: "models/gemini-9 is not found for API version v1beta"}},
		{"503 plain text",
			fake.Script{Status: 503, ContentType: "text/plain", Body: "upstream connect error or disconnect/reset before headers"},
			Error{Kind: Overloaded, Status: 503, Message: "upstream connect error or disconnect/reset before headers"}},
		{"502 empty body", fake.Script{Status: 502, ContentType: "text/plain", Body: " "},
			Error{Kind: Server, Status: 502}},
		{"500 JSON without an error", fake.Script{Status: 500, ContentType: "application/json", Body: `{"oops":true}`},
			Error{Kind: Server, Status: 500, Message: `{"oops":true}`}},
		{"400 error with a string code", fake.Script{Status: 400, ContentType: "application/json", Body: `{"error":{"code":"400","message":"bad"}}`},
			Error{Kind: BadRequest, Status: 400, Message: `{"error":{"code":"400","message":"bad"}}`}},
		{"in band, a Google error",
			event(`{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`),
			Error{Kind: Server, Code: "INTERNAL", Message: "An internal error has occurred.", InBand: true}},
		{"in band, a code and no status",
			event(`{"error":{"code":503,"message":"The model is overloaded. Please try again later."}}`),
			Error{Kind: Overloaded, Code: "503", Message: "The model is overloaded. Please try again later.", InBand: true}},
		{"in band, RetryInfo",
			event(`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}`),
			Error{Kind: RateLimited, Code: "RESOURCE_EXHAUSTED", Message: "slow down", InBand: true, RetryAfter: 1500 * time.Millisecond}},
		{"in band, no code", event(`{"error":{"message":"something broke"}}`),
			Error{Kind: Server, Message: "something broke", InBand: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, flavorFor(fake.Gemini))
			srv.Push(tt.script)
			_, err := p.Stream(context.Background(), Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil)
			got := *asError(t, err)
			got.Err, got.cause = nil, nil
			want := tt.want
			want.Provider = NameGemini
			if got.Quota != nil && want.Quota != nil && *got.Quota == *want.Quota {
				got.Quota = want.Quota
			}
			if got != want {
				t.Errorf("error\n got  %+v\n want %+v", got, want)
			}
		})
	}
}

// TestGeminiStreamEnds: how the end of a Gemini stream is read: a last event the stream
// does not end with a blank line still counts (Google's Go SDK read it, and a proxy may
// drop the blank line), an event that is not JSON fails the call as a transport error, and
// one cut short by the end of the stream is not taken for a finish.
func TestGeminiStreamEnds(t *testing.T) {
	t.Parallel()
	const finish = `{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],"modelVersion":"gemini-2.5-pro"}`
	tests := []struct {
		name string
		body string
		text string
		kind Kind // "" for success
	}{
		{"last event without a blank line", "data: " + finish, "ok", ""},
		{"last event with one line end", "data: " + finish + "\r\n", "ok", ""},
		{"not JSON", "data: {\"candidates\": [\r\n\r\n", "", Transport},
		{"cut short", "data: " + finish[:len(finish)-20], "", Transport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, flavorFor(fake.Gemini))
			srv.Push(fake.Script{Body: tt.body})
			resp, err := p.Stream(context.Background(), Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
			} else if e := asError(t, err); e.Kind != tt.kind || e.Partial {
				t.Errorf("error = %v (kind %q, partial %v), want a %q error, not partial", err, e.Kind, e.Partial, tt.kind)
			}
			if resp.Text != tt.text {
				t.Errorf("Text = %q, want %q", resp.Text, tt.text)
			}
		})
	}
}
