package providers

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestRegistryComplete checks each registry entry is whole and is what its constructor
// builds, and that the tests cover it: a fake that speaks its wire format and a test model.
func TestRegistryComplete(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range Registry() {
		if s.Name == "" || seen[s.Name] {
			t.Errorf("name %q is empty or declared twice", s.Name)
		}
		seen[s.Name] = true
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			if len(s.KeyEnv) == 0 || s.DefaultModel == "" || s.DefaultBaseURL == "" || s.New == nil {
				t.Errorf("entry %+v lacks key variables, default model, base URL or constructor", s)
			}
			if _, ok := fake.ForProvider(s.Name); !ok {
				t.Errorf("providers/fake has no flavor for %q: add one so the provider tests cover it", s.Name)
			}
			if testModels[s.Name] == "" {
				t.Errorf("testModels has no model for %q", s.Name)
			}
			p, err := s.New(Config{APIKey: testKey})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := p.Name(); got != s.Name {
				t.Errorf("New(...).Name() = %q, want %q", got, s.Name)
			}
			if got, ok := Lookup(s.Name); !ok || got.Name != s.Name {
				t.Errorf("Lookup(%q) = %q, %v", s.Name, got.Name, ok)
			}
		})
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found a provider`)
	}
}

// TestNoKeyAdvice checks a provider built without a key names its key variables, from
// the registry, in order.
func TestNoKeyAdvice(t *testing.T) {
	t.Parallel()
	for _, s := range Registry() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			_, err := s.New(Config{})
			if err == nil {
				t.Fatal("New without a key succeeded")
			}
			want := s.Name + ": no API key: pass it as an argument or set " + strings.Join(s.KeyEnv, " or ")
			if got := err.Error(); got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
		})
	}
}

// TestAuthAdvice checks an authentication failure names the provider's key variables.
func TestAuthAdvice(t *testing.T) {
	t.Parallel()
	for _, s := range Registry() {
		e := &Error{Provider: s.Name, Kind: Auth, Status: 401}
		if want := "(the key argument or " + strings.Join(s.KeyEnv, " or ") + ")"; !strings.HasSuffix(e.Error(), want) {
			t.Errorf("%s: error = %q, want it to end %q", s.Name, e.Error(), want)
		}
	}
}

// TestReadmeProviderTable: README's provider table lists exactly the registry's providers,
// each with its key variables in order and its default model, so the two cannot drift.
func TestReadmeProviderTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| provider | key variables | default model |\n| --- | --- | --- |\n")
	if !ok {
		t.Fatal("README has no provider table")
	}
	var got []string
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		got = append(got, strings.TrimSpace(line))
	}
	var want []string
	for _, s := range Registry() {
		want = append(want, fmt.Sprintf("| %s | `%s` | `%s` |", s.Name, strings.Join(s.KeyEnv, "`, then `"), s.DefaultModel))
	}
	if !slices.Equal(got, want) {
		t.Errorf("README's provider table:\n%s\nwant, from the registry:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
