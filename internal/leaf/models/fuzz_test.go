package models

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// FuzzParseSpec checks that ParseSpec never panics, refuses with ErrBadModel, and that an
// accepted spec is well formed and survives String -> ParseSpec unchanged. Seeds are in
// testdata/fuzz/FuzzParseSpec; run with
//
//	go test ./models -run '^$' -fuzz '^FuzzParseSpec$' -fuzztime 30s
func FuzzParseSpec(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		spec, err := ParseSpec(raw)
		if err != nil {
			if !errors.Is(err, ErrBadModel) {
				t.Fatalf("error does not wrap ErrBadModel: %v", err)
			}
			if strings.TrimSpace(strings.TrimPrefix(err.Error(), ErrBadModel.Error()+":")) == "" {
				t.Fatalf("empty message for %q", raw)
			}
			if spec != (Spec{}) {
				t.Fatalf("refused %q but returned %+v", raw, spec)
			}
			return
		}
		if raw == "" {
			if spec != (Spec{}) {
				t.Fatalf("empty model gave %+v, want the zero spec (server default)", spec)
			}
			return
		}
		if len(raw) > MaxModelLength {
			t.Fatalf("accepted a %d-byte model; the limit is %d", len(raw), MaxModelLength)
		}
		if spec.ID == "" {
			t.Fatalf("accepted %q with an empty id", raw)
		}
		for _, r := range spec.ID {
			if unicode.IsSpace(r) || unicode.IsControl(r) || r == '|' {
				t.Fatalf("accepted %q: id %q contains %q", raw, spec.ID, r)
			}
		}
		if spec.Budget < 0 || spec.Budget > MaxThinkingBudget || (spec.Budget > 0 && !spec.Thinking) {
			t.Fatalf("accepted %q as %+v: budget out of range or without thinking", raw, spec)
		}
		if !strings.Contains(raw, "|") && (spec.Thinking || spec.ID != strings.TrimSpace(raw)) {
			t.Fatalf("%q has no suffix but parsed as %+v", raw, spec)
		}
		s := spec.String()
		back, err := ParseSpec(s)
		if err != nil {
			t.Fatalf("%q parsed as %+v, whose String %q does not parse: %v", raw, spec, s, err)
		}
		if back != spec {
			t.Fatalf("round trip: %q -> %+v -> %q -> %+v", raw, spec, s, back)
		}
		if back.String() != s {
			t.Fatalf("String is not stable: %q then %q", s, back.String())
		}
	})
}
