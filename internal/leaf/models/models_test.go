package models

import (
	"errors"
	"fmt"
	"strings"
	"testing"
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
