package models

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	consult "github.com/consultmcp/consult"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
	}{
		{"", Spec{}},
		{"gpt-4.1", Spec{ID: "gpt-4.1"}},
		{"google/gemini-2.5-pro|thinking", Spec{ID: "google/gemini-2.5-pro", Thinking: true}},
		{"o3|thinking=8000", Spec{ID: "o3", Thinking: true, Budget: 8000}},
		{" gpt-5 ", Spec{ID: "gpt-5"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if err != nil {
				t.Fatalf("ParseSpec(%q) error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseSpec(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseSpecRejects(t *testing.T) {
	for _, tc := range []struct {
		in, mention string
	}{
		{"|thinking", "no id"},
		{"gpt 4", "no spaces"},
		{"gpt-4\x00", "control"},
		{"o3|think", "only suffix"},
		{"o3|thinking=", "whole number"},
		{"o3|thinking=0", "whole number"},
		{"o3|thinking=-5", "whole number"},
		{"o3|thinking=abc", "whole number"},
		{"o3|thinking=999999999", "whole number"},
		{"o3|thinking|thinking", "only suffix"},
		{strings.Repeat("m", MaxModelLength+1), "at most"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseSpec(tc.in)
			if !errors.Is(err, ErrBadModel) {
				t.Fatalf("ParseSpec(%q) error = %v, want ErrBadModel", tc.in, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("ParseSpec(%q) error %q does not mention %q", tc.in, err, tc.mention)
			}
		})
	}
}

// String renders the spec back in argument form; the round trips below hold ParseSpec to a
// canonical form.
func (s Spec) String() string {
	switch {
	case s.Thinking && s.Budget > 0:
		return fmt.Sprintf("%s|thinking=%d", s.ID, s.Budget)
	case s.Thinking:
		return s.ID + "|thinking"
	}
	return s.ID
}

func TestSpecStringRoundTrip(t *testing.T) {
	for _, in := range []string{"gpt-4.1", "x/y|thinking", "o3|thinking=1024"} {
		s, err := ParseSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.String(); got != in {
			t.Errorf("ParseSpec(%q).String() = %q, want %q", in, got, in)
		}
	}
}

func TestKnownWindow(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want consult.Tokens
		ok   bool
	}{
		{"gpt-4.1", 1_047_576, true},
		{"openai/gpt-4.1-mini", 1_047_576, true},
		{"gpt-4o-mini", 128_000, true},
		{"google/gemini-2.5-pro", 1_048_576, true},
		{"models/gemini-2.5-flash", 1_048_576, true},
		{"anthropic/claude-sonnet-4.5", 200_000, true},
		{"some/unknown-model", 0, false},
		// gpt-5's 400k window counts the output: "fits" uses the 272k input limit.
		{"gpt-5", 272_000, true},
		{"openai/gpt-5", 272_000, true},
		{"gpt-5-mini-2025-08-07", 272_000, true},
		{"gpt-5.1", 272_000, true},
		{"gpt-5-chat-latest", 128_000, true},
		{"gpt-4o-2024-08-06", 128_000, true},
		{"gpt-4-0613", 8_192, true},
		{"gpt-4-turbo-preview", 128_000, true},
		{"gpt-4.5-preview", 128_000, true},
		{"gpt-3.5-turbo", 16_385, true},
		{"o1-mini-2024-09-12", 128_000, true},
		{"o1-pro", 200_000, true},
		{"o4-mini", 200_000, true},
		{"openai/o3-pro", 200_000, true},
		{"codex-mini-latest", 200_000, true},
		{"GPT-4.1", 1_047_576, true},
		{"llama3", 0, false},
		{"", 0, false},
	} {
		got, ok := KnownWindow(tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("KnownWindow(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
