package providers

import "strings"

// CacheControlled reports whether requests to model through OpenRouter mark the files part
// of the prompt with cache_control: Anthropic's Claude models cache nothing without it
// (https://openrouter.ai/docs/features/prompt-caching: "Anthropic Claude: ... requires
// cache_control breakpoints"); OpenAI, Gemini, DeepSeek and Grok models cache a stable
// prefix by themselves.
func CacheControlled(model string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(model)), "anthropic/")
}
