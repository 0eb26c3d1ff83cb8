package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/consultmcp/consult/providers"
)

// TestProvidersFromRegistry checks the command line serves every provider in the registry:
// it takes its name as a command, its key variables are read in order, its default model
// applies, and the usage text names it and its variables; a name not in the registry is
// refused.
func TestProvidersFromRegistry(t *testing.T) {
	t.Parallel()
	for _, s := range providers.Registry() {
		var help bytes.Buffer
		if err := run(context.Background(), []string{s.Name, "--help"}, env(nil), strings.NewReader(""), &help, io.Discard); err != nil ||
			!strings.HasPrefix(help.String(), "consult "+s.Name+": ") {
			t.Errorf("consult %s --help: %v, %q; want its help", s.Name, err, help.String())
		}
		if !strings.Contains(usage, s.Name) {
			t.Errorf("the usage text does not name %s", s.Name)
		}
		for i, k := range s.KeyEnv {
			if !strings.Contains(usage, k) {
				t.Errorf("the usage text does not name %s", k)
			}
			// Every variable from k on is set: k, the first of them, wins.
			vars := map[string]string{}
			for _, later := range s.KeyEnv[i:] {
				vars[later] = "key-from-" + later
			}
			var stderr bytes.Buffer
			cfg, err := parseServe(s.Name, nil, env(vars), &stderr)
			if err != nil {
				t.Fatalf("parseServe(%s): %v", s.Name, err)
			}
			if got, want := cfg.APIKey, "key-from-"+k; got != want {
				t.Errorf("%s: api key = %q, want %q", s.Name, got, want)
			}
			if cfg.Model != s.DefaultModel {
				t.Errorf("%s: model = %q, want the default %q", s.Name, cfg.Model, s.DefaultModel)
			}
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"nope"}, env(nil), strings.NewReader(""), io.Discard, &stderr); err != exitCode(2) ||
		!strings.Contains(stderr.String(), `unknown command or provider "nope"`) {
		t.Errorf(`consult nope: %v, %q; want exit status 2 naming it unknown`, err, stderr.String())
	}
}

// TestUsageProviders checks the generated paragraph on providers reads as it always has.
func TestUsageProviders(t *testing.T) {
	t.Parallel()
	want := "Providers: openrouter, openai, gemini. The API key comes from the argument or from\n" +
		"OPENROUTER_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY (then GOOGLE_API_KEY).\n"
	if got := providerUsage(); got != want {
		t.Errorf("providerUsage() = %q, want %q", got, want)
	}
	if !strings.Contains(usage, "consult version\n\nEach command says more with --help, e.g. consult dry-run --help.\n\n"+want+"\nServer flags") {
		t.Errorf("usage does not hold the paragraph in its place:\n%s", usage)
	}
}
