package providers

import (
	"context"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// pinnedPrompt has a character of each kind the message's escaping treats apart.
const pinnedPrompt = "File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \xff é"

// pinnedBodyCases are requests that between them set every field a chat body can carry.
var pinnedBodyCases = []struct {
	name, provider string
	zdr            bool
	req            Request
	want           string
}{
	{name: "openai, plain", provider: NameOpenAI,
		req:  Request{Model: "gpt-4.1", Prompt: pinnedPrompt},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","role":"user"}],"model":"gpt-4.1","stream_options":{"include_usage":true},"stream":true}`},
	{name: "openai, everything", provider: NameOpenAI,
		req: Request{Model: "o3", Prompt: pinnedPrompt, Question: "Why?", System: "Be \"brief\" <b>&</b>\n\u2028.",
			Thinking: Thinking{On: true, Budget: 8000}, OutputLimit: 20000, CacheKey: "k1", LongCache: true},
		want: `{"messages":[{"content":"Be \"brief\" <b>&</b>\n\u2028.","role":"system"},{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd éWhy?","role":"user"}],"model":"o3","max_completion_tokens":20000,"prompt_cache_key":"k1","prompt_cache_retention":"24h","reasoning_effort":"medium","stream_options":{"include_usage":true},"stream":true}`},
	{name: "openai, thinking without budget, max output", provider: NameOpenAI,
		req:  Request{Model: "gpt-5", Prompt: pinnedPrompt, Thinking: Thinking{On: true}, MaxOutput: 1000, CacheKey: "k2"},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","role":"user"}],"model":"gpt-5","max_completion_tokens":33768,"prompt_cache_key":"k2","reasoning_effort":"high","stream_options":{"include_usage":true},"stream":true}`},
	{name: "openai, non-reasoning model thinking", provider: NameOpenAI,
		req:  Request{Model: "gpt-4o", Prompt: pinnedPrompt, Thinking: Thinking{On: true, Budget: 2000}},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","role":"user"}],"model":"gpt-4o","stream_options":{"include_usage":true},"stream":true}`},
	{name: "openrouter, plain", provider: NameOpenRouter,
		req:  Request{Model: "x-ai/grok-4", Prompt: pinnedPrompt, Question: "Why?"},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd éWhy?","role":"user"}],"model":"x-ai/grok-4","stream_options":{"include_usage":true},"usage":{"include":true},"stream":true}`},
	{name: "openrouter, budget, system, limit", provider: NameOpenRouter,
		req: Request{Model: "google/gemini-2.5-pro", Prompt: pinnedPrompt, System: "Be brief.",
			Thinking: Thinking{On: true, Budget: 8000}, OutputLimit: 6000, CacheKey: "ignored", LongCache: true},
		want: `{"messages":[{"content":"Be brief.","role":"system"},{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","role":"user"}],"model":"google/gemini-2.5-pro","max_tokens":6000,"stream_options":{"include_usage":true},"reasoning":{"max_tokens":4976},"usage":{"include":true},"stream":true}`},
	{name: "openrouter, effort, max output", provider: NameOpenRouter,
		req:  Request{Model: "openai/o3", Prompt: pinnedPrompt, Thinking: Thinking{On: true}, MaxOutput: 1000},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","role":"user"}],"model":"openai/o3","max_tokens":33768,"stream_options":{"include_usage":true},"reasoning":{"effort":"high"},"usage":{"include":true},"stream":true}`},
	{name: "openrouter, zdr", provider: NameOpenRouter, zdr: true,
		req:  Request{Model: "x-ai/grok-4", Prompt: pinnedPrompt, Thinking: Thinking{On: true, Budget: 3000}},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","role":"user"}],"model":"x-ai/grok-4","max_tokens":19384,"stream_options":{"include_usage":true},"provider":{"data_collection":"deny","zdr":true},"reasoning":{"max_tokens":3000},"usage":{"include":true},"stream":true}`},
	{name: "openrouter, cache breakpoint", provider: NameOpenRouter,
		req: Request{Model: "anthropic/claude-sonnet-4", Prompt: pinnedPrompt, Question: "Why \"so\" <b>&</b>?\u2028",
			System: "Be brief.", CacheBreakpoint: true},
		want: `{"messages":[{"content":"Be brief.","role":"system"},{"content":[{"text":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","type":"text","cache_control":{"type":"ephemeral"}},{"text":"Why \"so\" <b>&</b>?\u2028","type":"text"}],"role":"user"}],"model":"anthropic/claude-sonnet-4","stream_options":{"include_usage":true},"usage":{"include":true},"stream":true}`},
	{name: "openrouter, cache breakpoint, long cache, zdr", provider: NameOpenRouter, zdr: true,
		req: Request{Model: "anthropic/claude-sonnet-4", Prompt: pinnedPrompt, Question: "Why?",
			CacheBreakpoint: true, LongCache: true, Thinking: Thinking{On: true, Budget: 4000}},
		want: `{"messages":[{"content":[{"text":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd é","type":"text","cache_control":{"ttl":"1h","type":"ephemeral"}},{"text":"Why?","type":"text"}],"role":"user"}],"model":"anthropic/claude-sonnet-4","max_tokens":20384,"stream_options":{"include_usage":true},"provider":{"data_collection":"deny","zdr":true},"reasoning":{"max_tokens":4000},"usage":{"include":true},"stream":true}`},
	{name: "openrouter, breakpoint asked for a model that needs none", provider: NameOpenRouter,
		req:  Request{Model: "x-ai/grok-4", Prompt: pinnedPrompt, Question: "Why?", CacheBreakpoint: true},
		want: `{"messages":[{"content":"File: a.go\n\"q\"\t\\ <b>&</b> \u2028 \ufffd éWhy?","role":"user"}],"model":"x-ai/grok-4","stream_options":{"include_usage":true},"usage":{"include":true},"stream":true}`},
}

// TestBodyPinned: each request encodes to exactly the bytes pinned here, taken from
// openai-go's encoding of the same request (the SDK this package sent through until it
// was replaced by plain structs), and Stream sends exactly those bytes.
func TestBodyPinned(t *testing.T) {
	t.Parallel()
	for _, tc := range pinnedBodyCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flavor, _ := fake.ForProvider(tc.provider)
			srv := fake.New(t, flavor)
			spec, _ := Lookup(tc.provider)
			p, err := spec.New(Config{APIKey: testKey, BaseURL: srv.BaseURL(), ZDR: tc.zdr})
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.(Encoder).Encode(tc.req)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if got := string(b.bytes()); got != tc.want {
				t.Errorf("body:\n got  %s\n want %s", got, tc.want)
			}
			if _, err := p.Stream(context.Background(), tc.req, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if got := string(srv.Requests()[0].Body); got != tc.want {
				t.Errorf("sent:\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}
