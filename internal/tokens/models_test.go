package tokens

import "testing"

func TestExactForAndLabel(t *testing.T) {
	const exact = "exact (o200k_base)"
	tests := []struct {
		model string
		exact bool
		label string
	}{
		{"gpt-4o", true, exact},
		{"gpt-4o-mini", true, exact},
		{"gpt-4o-2024-08-06", true, exact},
		{"chatgpt-4o-latest", true, exact},
		{"gpt-4.1", true, exact},
		{"gpt-4.1-nano", true, exact},
		{"gpt-4.5-preview", true, exact},
		{"gpt-5", true, exact},
		{"gpt-5-mini", true, exact},
		{"gpt-5.1-codex", true, exact},
		{"GPT-5", true, exact},
		{"gpt-oss-120b", true, exact},
		{"o1", true, exact},
		{"o1-mini", true, exact},
		{"o3", true, exact},
		{"o3-pro", true, exact},
		{"o4-mini", true, exact},
		{"openai/gpt-4o", true, exact},
		{"openai/gpt-5:online", true, exact},
		{"openai/o3-mini-high", true, exact},
		{"openai/gpt-oss-20b:free", true, exact},
		{"ft:gpt-4o-mini-2024-07-18:acme::abc123", true, exact},
		{"gpt-5|thinking=2000", true, exact},
		{" gpt-4o ", true, exact},

		{"gpt-4", false, "estimate (o200k_base; gpt-4 uses cl100k_base)"},
		{"gpt-4-turbo", false, "estimate (o200k_base; gpt-4-turbo uses cl100k_base)"},
		{"openai/gpt-3.5-turbo", false, "estimate (o200k_base; gpt-3.5-turbo uses cl100k_base)"},
		{"o30", false, "estimate (o200k_base; o30 uses its own tokenizer)"},
		{"claude-sonnet-4-5", false, "estimate (o200k_base; Claude uses its own tokenizer)"},
		{"anthropic/claude-opus-4.1", false, "estimate (o200k_base; Claude uses its own tokenizer)"},
		{"gemini-2.5-pro", false, "estimate (o200k_base; Gemini uses its own tokenizer)"},
		{"models/gemini-2.5-flash|thinking", false, "estimate (o200k_base; Gemini uses its own tokenizer)"},
		{"google/gemma-3-27b-it", false, "estimate (o200k_base; Gemma uses its own tokenizer)"},
		{"meta-llama/llama-3.3-70b-instruct", false, "estimate (o200k_base; Llama uses its own tokenizer)"},
		{"mistralai/codestral-2508", false, "estimate (o200k_base; Mistral uses its own tokenizer)"},
		{"qwen/qwen3-coder", false, "estimate (o200k_base; Qwen uses its own tokenizer)"},
		{"deepseek/deepseek-r1", false, "estimate (o200k_base; DeepSeek uses its own tokenizer)"},
		{"x-ai/grok-4", false, "estimate (o200k_base; Grok uses its own tokenizer)"},
		{"moonshotai/kimi-k2", false, "estimate (o200k_base; Kimi uses its own tokenizer)"},
		{"z-ai/glm-4.6", false, "estimate (o200k_base; GLM uses its own tokenizer)"},
		{"anthropic/some-future-model", false, "estimate (o200k_base; Claude uses its own tokenizer)"},
		{"azure/gpt-4o", false, "estimate (o200k_base; azure/gpt-4o uses its own tokenizer)"},
		{"my-local-model|thinking", false, "estimate (o200k_base; my-local-model uses its own tokenizer)"},
		{"", false, "estimate (o200k_base; the model uses its own tokenizer)"},
		{"x" + string(make([]byte, 0)) + "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé", false,
			"estimate (o200k_base; xéééééééééééééééééééééééééééééééééééééééééééééééééééééééééé… uses its own tokenizer)"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			if got := ExactFor(tt.model); got != tt.exact {
				t.Errorf("ExactFor(%q) = %v, want %v", tt.model, got, tt.exact)
			}
			if got := Label(tt.model); got != tt.label {
				t.Errorf("Label(%q) = %q, want %q", tt.model, got, tt.label)
			}
		})
	}
}
