// Package models parses the model argument of a consultation. What a model costs and how
// large it is, is internal/catalog's.
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

// ErrBadModel is wrapped by every error ParseSpec returns.
var ErrBadModel = errors.New("bad model")

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
		return Spec{}, fmt.Errorf("%w: model is %d characters long; model ids are at most %d", ErrBadModel, len(raw), MaxModelLength)
	}
	id, suffix, hasSuffix := strings.Cut(raw, "|")
	id = strings.TrimSpace(id)
	if id == "" {
		return Spec{}, fmt.Errorf("%w: model %q has no id before %q; use e.g. \"google/gemini-2.5-pro|thinking\"", ErrBadModel, raw, "|")
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '|' {
			return Spec{}, fmt.Errorf("%w: model %q contains %q; model ids have no spaces or control characters", ErrBadModel, raw, r)
		}
	}
	spec := Spec{ID: id}
	if !hasSuffix {
		return spec, nil
	}
	name, value, hasValue := strings.Cut(suffix, "=")
	if name != "thinking" {
		return Spec{}, fmt.Errorf("%w: model %q has suffix %q; the only suffix is \"|thinking\" or \"|thinking=N\" (N = reasoning budget in tokens)", ErrBadModel, raw, "|"+suffix)
	}
	spec.Thinking = true
	if !hasValue {
		return spec, nil
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || consult.Tokens(n) > MaxThinkingBudget {
		return Spec{}, fmt.Errorf("%w: model %q: the thinking budget must be a whole number of tokens from 1 to %d; got %q", ErrBadModel, raw, MaxThinkingBudget, value)
	}
	spec.Budget = consult.Tokens(n)
	return spec, nil
}
