// Package models parses the model argument of a consultation and knows the context windows
// of well-known models, so a request can be sized before anything is sent.
package models

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	consult "github.com/consultmcp/consult"
)

// Limits of the model argument.
const (
	// MaxModelLength is the longest model name accepted: provider ids are under 100 characters.
	MaxModelLength = 200
	// MaxThinkingBudget is the largest reasoning budget a `|thinking=N` suffix may ask for:
	// no current model accepts more than 128k reasoning tokens.
	MaxThinkingBudget consult.Tokens = 128_000
)

// ErrBadModel is wrapped by every error ParseSpec returns, with a *consult.ArgError.
var ErrBadModel = errors.New("bad model")

// badModel is the refusal of the model argument raw ("" when not shown) by rule.
func badModel(raw, rule string) error {
	value := ""
	if raw != "" {
		value = fmt.Sprintf("%q", raw)
	}
	return fmt.Errorf("%w: %w", ErrBadModel, &consult.ArgError{Arg: "model", Value: value, Rule: rule})
}

// Spec is a parsed model argument: `id`, `id|thinking` or `id|thinking=N`.
type Spec struct {
	// ID is the model as the provider names it, without the suffix.
	ID string
	// Thinking is true when the caller asked for reasoning.
	Thinking bool
	// Budget is the reasoning budget in tokens; 0 lets the provider choose.
	Budget consult.Tokens
}

// ParseSpec parses a model argument. An empty string is not an error: it means "the
// server's default model" and yields a zero Spec.
func ParseSpec(raw string) (Spec, error) {
	if raw == "" {
		return Spec{}, nil
	}
	if len(raw) > MaxModelLength {
		return Spec{}, badModel("", fmt.Sprintf("is %d characters long; model ids are at most %d", len(raw), MaxModelLength))
	}
	id, suffix, hasSuffix := strings.Cut(raw, "|")
	id = strings.TrimSpace(id)
	if id == "" {
		return Spec{}, badModel(raw, `has no id before "|"; use e.g. "google/gemini-2.5-pro|thinking"`)
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '|' {
			return Spec{}, badModel(raw, fmt.Sprintf("contains %q; model ids have no spaces or control characters", r))
		}
	}
	spec := Spec{ID: id}
	if !hasSuffix {
		return spec, nil
	}
	name, value, hasValue := strings.Cut(suffix, "=")
	if name != "thinking" {
		return Spec{}, badModel(raw, fmt.Sprintf(`has suffix %q; the only suffix is "|thinking" or "|thinking=N" (N = reasoning budget in tokens)`, "|"+suffix))
	}
	spec.Thinking = true
	if !hasValue {
		return spec, nil
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || consult.Tokens(n) > MaxThinkingBudget {
		return Spec{}, badModel(raw, fmt.Sprintf(": the thinking budget must be a whole number of tokens from 1 to %d; got %q", MaxThinkingBudget, value))
	}
	spec.Budget = consult.Tokens(n)
	return spec, nil
}

// window is one entry of the built-in table: ids that start with prefix have this context.
type window struct {
	prefix string
	tokens consult.Tokens
}

// knownWindows is the one table of context windows: it answers when the provider has no
// live figure (OpenAI publishes none; OpenRouter's model list and Gemini's models.get answer
// first). Each figure is the most a prompt may hold, the input limit, since that is what
// "fits" compares with; where a model's published window also counts the output (gpt-5: 400k
// in all = 272k input + 128k output) the input part is given. A prefix matches ids that
// start with it, the longest prefix winning ("gpt-4o-mini" takes "gpt-4o", not "gpt-4").
// OpenRouter ids ("openai/gpt-4.1") match after the vendor prefix is removed.
var knownWindows = []window{
	// OpenAI: the model pages, https://platform.openai.com/docs/models/<id> ("Context
	// window"); GPT-5's input limit from "Introducing GPT-5 for developers"
	// (https://openai.com/index/introducing-gpt-5-for-developers/: "up to 272,000 input
	// tokens and ... 128,000 reasoning & output tokens, for a total context length of
	// 400,000 tokens"), which holds for the family (mini, nano, pro, codex, 5.1, 5.2).
	{"gpt-5", 272_000},
	{"gpt-5-chat", 128_000}, // gpt-5-chat-latest: 128,000 context window
	{"gpt-4.1", 1_047_576},  // gpt-4.1, -mini, -nano
	{"gpt-4.5", 128_000},
	{"gpt-4o", 128_000}, // gpt-4o, gpt-4o-mini
	{"chatgpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"o4-mini", 200_000},
	{"o3", 200_000}, // o3, o3-pro, o3-mini
	{"o1", 200_000}, // o1, o1-pro
	{"o1-mini", 128_000},
	{"codex-mini", 200_000},
	// Google: the Gemini API's model pages, https://ai.google.dev/gemini-api/docs/models
	// ("Input token limit"), as models.get reports inputTokenLimit.
	{"gemini-3", 1_048_576},
	{"gemini-2.5", 1_048_576},
	{"gemini-2.0", 1_048_576},
	{"gemini-1.5-pro", 2_097_152},
	{"gemini-1.5-flash", 1_048_576},
	// Other vendors, reached through OpenRouter, whose model list (GET
	// https://openrouter.ai/api/v1/models, context_length) answers first; these are its
	// figures, for when the list cannot be fetched.
	{"claude-sonnet-4", 200_000},
	{"claude-opus-4", 200_000},
	{"claude-3.7-sonnet", 200_000},
	{"claude-3.5-sonnet", 200_000},
	{"claude-haiku-4", 200_000},
	{"grok-4", 256_000},
	{"deepseek-r1", 163_840},
	{"deepseek-chat", 163_840},
	{"qwen3-coder", 262_144},
}

// KnownWindow returns the context window of a well-known model from the built-in table.
// ok is false when the model is not in it; callers then ask the provider or say it is unknown.
func KnownWindow(id string) (consult.Tokens, bool) {
	bare := strings.ToLower(strings.TrimSpace(id))
	if i := strings.LastIndexByte(bare, '/'); i >= 0 {
		bare = bare[i+1:]
	}
	bare = strings.TrimPrefix(bare, "models/") // Gemini's resource form
	best := -1
	for i, w := range knownWindows {
		if strings.HasPrefix(bare, w.prefix) && (best < 0 || len(w.prefix) > len(knownWindows[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	return knownWindows[best].tokens, true
}
