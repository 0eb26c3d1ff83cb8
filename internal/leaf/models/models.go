// Package models parses the model argument of a consultation. What a model costs and how
// large it is, is internal/core/catalog's.
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
