package providers

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// sendAndRecord streams req through fc's provider against a fake and returns the decoded
// request body the fake received.
func sendAndRecord(t *testing.T, fc flavorCase, req Request) map[string]any {
	t.Helper()
	p, srv := setup(t, fc)
	if req.Prompt == "" {
		req.Prompt = "q"
	}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the fake got %d requests, want 1", len(reqs))
	}
	body := reqs[0].JSON()
	if body == nil {
		t.Fatalf("request body is not JSON: %s", reqs[0].Body)
	}
	return body
}

// field walks a decoded JSON body along path; missing fields give nil.
func field(body map[string]any, path ...string) any {
	var cur any = body
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// jsonValue normalises a Go value to what it decodes to from JSON (numbers -> float64).
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

type expect map[string]any // dotted path -> value (nil: absent)

func checkBody(t *testing.T, body map[string]any, want expect) {
	t.Helper()
	for path, w := range want {
		got := field(body, splitPath(path)...)
		if !reflect.DeepEqual(got, jsonValue(w)) {
			t.Errorf("%s = %v, want %v", path, got, w)
		}
	}
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := range len(p) {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

func TestThinkingOpenRouter(t *testing.T) {
	t.Parallel()
	fc := flavorFor(fake.OpenRouter)
	tests := []struct {
		name string
		req  Request
		want expect
	}{
		{"off", Request{Model: "x/y"},
			expect{"reasoning": nil, "max_tokens": nil, "max_completion_tokens": nil}},
		{"on, no budget", Request{Model: "x/y", Thinking: Thinking{On: true}},
			expect{"reasoning": map[string]any{"effort": "high"}, "max_tokens": nil}},
		{"on, budget", Request{Model: "x/y", Thinking: Thinking{On: true, Budget: 8000}},
			expect{"reasoning": map[string]any{"max_tokens": 8000}, "max_tokens": 8000 + 16384}},
		{"off, max output", Request{Model: "x/y", MaxOutput: 1000},
			expect{"reasoning": nil, "max_tokens": 1000}},
		{"on, budget, max output", Request{Model: "x/y", Thinking: Thinking{On: true, Budget: 8000}, MaxOutput: 1000},
			expect{"reasoning.max_tokens": 8000, "max_tokens": 9000}},
		{"on, no budget, max output", Request{Model: "x/y", Thinking: Thinking{On: true}, MaxOutput: 1000},
			expect{"reasoning.effort": "high", "max_tokens": 1000 + 32768}},
		{"output limit", Request{Model: "x/y", OutputLimit: 5000, MaxOutput: 1000},
			expect{"reasoning": nil, "max_tokens": 5000}},
		// A budget larger than the whole limit leaves room for the answer within it.
		{"output limit under the budget", Request{Model: "x/y", Thinking: Thinking{On: true, Budget: 8000}, OutputLimit: 6000},
			expect{"reasoning.max_tokens": 6000 - 1024, "max_tokens": 6000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := sendAndRecord(t, fc, tt.req)
			checkBody(t, body, tt.want)
			checkBody(t, body, expect{"usage.include": true, "stream_options.include_usage": true, "model": "x/y"})
		})
	}
}

func TestThinkingOpenAI(t *testing.T) {
	t.Parallel()
	fc := flavorFor(fake.OpenAI)
	tests := []struct {
		name string
		req  Request
		want expect
	}{
		{"off", Request{Model: "o3"},
			expect{"reasoning_effort": nil, "max_completion_tokens": nil, "max_tokens": nil}},
		{"on, no budget", Request{Model: "o3", Thinking: Thinking{On: true}},
			expect{"reasoning_effort": "high", "max_completion_tokens": nil}},
		{"on, small budget", Request{Model: "gpt-5", Thinking: Thinking{On: true, Budget: 2000}},
			expect{"reasoning_effort": "low", "max_completion_tokens": nil}},
		{"on, medium budget", Request{Model: "o4-mini", Thinking: Thinking{On: true, Budget: 8000}},
			expect{"reasoning_effort": "medium"}},
		{"on, large budget", Request{Model: "o3", Thinking: Thinking{On: true, Budget: 30000}},
			expect{"reasoning_effort": "high"}},
		{"on, budget, max output", Request{Model: "o3", Thinking: Thinking{On: true, Budget: 8000}, MaxOutput: 1000},
			expect{"reasoning_effort": "medium", "max_completion_tokens": 9000, "max_tokens": nil}},
		{"off, max output", Request{Model: "gpt-4.1", MaxOutput: 500},
			expect{"reasoning_effort": nil, "max_completion_tokens": 500}},
		{"output limit", Request{Model: "o3", Thinking: Thinking{On: true, Budget: 30000}, OutputLimit: 4000},
			expect{"reasoning_effort": "high", "max_completion_tokens": 4000, "max_tokens": nil}},
		{"non-reasoning model", Request{Model: "gpt-4.1", Thinking: Thinking{On: true}},
			expect{"reasoning_effort": nil}},
		{"unknown model gets effort", Request{Model: "my-local-r1", Thinking: Thinking{On: true}},
			expect{"reasoning_effort": "high"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := sendAndRecord(t, fc, tt.req)
			checkBody(t, body, tt.want)
			checkBody(t, body, expect{"reasoning": nil, "usage": nil, "stream_options.include_usage": true})
		})
	}
}

func TestThinkingGemini(t *testing.T) {
	t.Parallel()
	fc := flavorFor(fake.Gemini)
	tests := []struct {
		name string
		req  Request
		want expect
	}{
		{"off", Request{Model: "gemini-2.5-pro"},
			expect{"generationConfig.thinkingConfig": nil, "generationConfig.maxOutputTokens": nil}},
		{"on, no budget", Request{Model: "gemini-2.5-pro", Thinking: Thinking{On: true}},
			expect{"generationConfig.thinkingConfig": map[string]any{"includeThoughts": true, "thinkingBudget": -1},
				"generationConfig.maxOutputTokens": nil}},
		{"on, no budget, gemini 3", Request{Model: "gemini-3-pro-preview", Thinking: Thinking{On: true}},
			expect{"generationConfig.thinkingConfig": map[string]any{"includeThoughts": true, "thinkingLevel": "HIGH"}}},
		{"on, budget", Request{Model: "gemini-2.5-pro", Thinking: Thinking{On: true, Budget: 8000}},
			expect{"generationConfig.thinkingConfig": map[string]any{"includeThoughts": true, "thinkingBudget": 8000},
				"generationConfig.maxOutputTokens": 8000 + 16384}},
		{"budget clamped high", Request{Model: "gemini-2.5-pro", Thinking: Thinking{On: true, Budget: 100_000}},
			expect{"generationConfig.thinkingConfig.thinkingBudget": 32768, "generationConfig.maxOutputTokens": 32768 + 16384}},
		{"budget clamped low", Request{Model: "gemini-2.5-pro", Thinking: Thinking{On: true, Budget: 50}},
			expect{"generationConfig.thinkingConfig.thinkingBudget": 128}},
		{"flash budget clamped", Request{Model: "gemini-2.5-flash", Thinking: Thinking{On: true, Budget: 30000}},
			expect{"generationConfig.thinkingConfig.thinkingBudget": 24576}},
		{"max output", Request{Model: "gemini-2.5-flash", MaxOutput: 700},
			expect{"generationConfig.maxOutputTokens": 700, "generationConfig.thinkingConfig": nil}},
		{"output limit", Request{Model: "gemini-2.5-pro", Thinking: Thinking{On: true, Budget: 8000}, OutputLimit: 4000},
			expect{"generationConfig.maxOutputTokens": 4000, "generationConfig.thinkingConfig.thinkingBudget": 4000 - 1000}},
		{"system instruction", Request{Model: "gemini-2.5-flash", System: "Be brief.", Prompt: "the prompt"},
			expect{"systemInstruction.parts": []any{map[string]any{"text": "Be brief."}},
				"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "the prompt"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := sendAndRecord(t, fc, tt.req)
			checkBody(t, body, tt.want)
		})
	}
}

func TestOutputLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		req           Request
		answerDefault bool
		want          int64
	}{
		{Request{}, true, 0},
		{Request{MaxOutput: 100}, true, 100},
		{Request{Thinking: Thinking{On: true}}, true, 0},
		{Request{Thinking: Thinking{On: true, Budget: 1000}}, true, 1000 + 16384},
		{Request{Thinking: Thinking{On: true, Budget: 1000}}, false, 0},
		{Request{Thinking: Thinking{On: true, Budget: 1000}, MaxOutput: 10}, false, 1010},
		{Request{Thinking: Thinking{On: true}, MaxOutput: 10}, false, 10 + 32768},
		{Request{Thinking: Thinking{Budget: 1000}, MaxOutput: 10}, true, 10},
		{Request{Thinking: Thinking{On: true, Budget: 1000}, MaxOutput: 10, OutputLimit: 3000}, true, 3000},
	}
	for _, tt := range tests {
		if got := int64(outputLimit(tt.req, tt.answerDefault)); got != tt.want {
			t.Errorf("outputLimit(%+v, %v) = %d, want %d", tt.req, tt.answerDefault, got, tt.want)
		}
	}
}

func TestGeminiBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		in    int64
		want  int64
	}{
		{"gemini-2.5-pro", 100, 128},
		{"models/gemini-2.5-pro", 40_000, 32_768},
		{"gemini-2.5-flash", 30_000, 24_576},
		{"gemini-2.5-flash", 100, 100},
		{"gemini-2.5-flash-lite", 100, 512},
		{"gemini-3-pro-preview", 50_000, 50_000},
	}
	for _, tt := range tests {
		if got := int64(geminiBudget(tt.model, consult.Tokens(tt.in))); got != tt.want {
			t.Errorf("geminiBudget(%q, %d) = %d, want %d", tt.model, tt.in, got, tt.want)
		}
	}
}

func TestNormaliseFinish(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"": "", "FINISH_REASON_UNSPECIFIED": "", "stop": "stop", "STOP": "stop", "end_turn": "stop",
		"length": "length", "MAX_TOKENS": "length", "content_filter": "content_filter",
		"SAFETY": "content_filter", "RECITATION": "content_filter", "error": "error", "tool_calls": "tool_calls",
	}
	for in, want := range tests {
		if got := normaliseFinish(in); got != want {
			t.Errorf("normaliseFinish(%q) = %q, want %q", in, got, want)
		}
	}
}
