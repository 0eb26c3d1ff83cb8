//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestZDRThroughBinary: `consult openrouter --zdr` sends every model request, the call's and
// a background worker's alike (the worker builds its provider from the server's
// configuration), with OpenRouter's preferences for endpoints that keep no data.
func TestZDRThroughBinary(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	srv.SetDefault(fake.Answer("kept nowhere"))
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	s := startRaw(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--zdr")
	dir := fixture(t)
	for n, mode := range []string{"fail", "continue"} {
		text, _ := s.call(t, 2+n, "consultation", map[string]any{"path": dir, "pattern": "**/*.go", "query": "q",
			"model": "google/gemini-2.5-pro", "timeout": 20, "on_timeout": mode})
		if !strings.Contains(text, "kept nowhere") {
			t.Fatalf("%s: %s", mode, text)
		}
	}
	var sent int
	for _, r := range srv.Requests() {
		if !strings.Contains(r.Path, "chat/completions") {
			continue
		}
		sent++
		if p, _ := r.JSON()["provider"].(map[string]any); p["zdr"] != true || p["data_collection"] != "deny" {
			t.Errorf("request %d: provider %v, want zdr true and data_collection deny", r.Seq, r.JSON()["provider"])
		}
	}
	if sent != 2 {
		t.Errorf("%d model requests, want 2", sent)
	}
}

// TestZDRRefusedForDirectProviders: --zdr (or CONSULT_ZDR) with a provider that cannot be
// asked per request to keep no data stops the server at start, saying why and what to use;
// with openrouter it is taken from the flag or the variable.
func TestZDRRefusedForDirectProviders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider string
		args     []string
		env      map[string]string
	}{
		{"openai", []string{"--zdr"}, nil},
		{"gemini", nil, map[string]string{"CONSULT_ZDR": "1"}},
	} {
		var stderr bytes.Buffer
		_, err := parseServe(tc.provider, tc.args, env(tc.env), &stderr)
		if err == nil || !strings.Contains(err.Error(), "consult openrouter --zdr") || !strings.Contains(err.Error(), tc.provider+" cannot be asked") {
			t.Errorf("%s with ZDR: %v", tc.provider, err)
		}
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want bool
	}{
		{[]string{"--zdr"}, nil, true},
		{nil, map[string]string{"CONSULT_ZDR": "true"}, true},
		{[]string{"--zdr=false"}, map[string]string{"CONSULT_ZDR": "1"}, false},
		{nil, nil, false},
	} {
		var stderr bytes.Buffer
		cfg, err := parseServe("openrouter", tc.args, env(tc.env), &stderr)
		if err != nil || cfg.ZDR != tc.want {
			t.Errorf("openrouter %q %v: zdr %v, %v; want %v", tc.args, tc.env, cfg.ZDR, err, tc.want)
		}
	}
	var stderr bytes.Buffer
	if _, err := parseServe("openrouter", nil, env(map[string]string{"CONSULT_ZDR": "maybe"}), &stderr); err == nil || !strings.Contains(err.Error(), "CONSULT_ZDR") {
		t.Errorf("CONSULT_ZDR=maybe: %v", err)
	}
}

// TestPageBytesFloor: --page-bytes below the smallest page is refused, saying the floor and
// that 0 turns paging off; 0 and the floor itself are taken.
func TestPageBytesFloor(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1", "4095", "-1"} {
		var stderr bytes.Buffer
		_, err := parseServe("openrouter", []string{"--page-bytes", v}, env(nil), &stderr)
		if err == nil || !strings.Contains(err.Error(), "at least 4096") || !strings.Contains(err.Error(), "0 (answers are never paged)") {
			t.Errorf("--page-bytes %s: %v", v, err)
		}
	}
	for _, v := range []string{"0", "4096"} {
		var stderr bytes.Buffer
		if _, err := parseServe("openrouter", []string{"--page-bytes", v}, env(nil), &stderr); err != nil {
			t.Errorf("--page-bytes %s: %v", v, err)
		}
	}
}

// TestZDRNoEndpoint: a model without an endpoint that keeps no data is refused by
// OpenRouter with a 404; the failure quotes its words and says what they mean here (class
// not_found), and nothing else is tried. The message is the one OpenRouter sent users whose data policy no endpoint met
// (github.com/dnakov/anon-kode issue 13).
func TestZDRNoEndpoint(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	const words = "No endpoints found matching your data policy. Check your settings: https://openrouter.ai/settings/privacy"
	srv.SetDefault(fake.Script{Status: 404, ErrorMessage: words})
	s := startRaw(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", t.TempDir(), "--zdr")
	text, sc := s.call(t, 2, "consultation", map[string]any{"path": fixture(t), "pattern": "**/*.go", "query": "q", "model": "google/gemini-2.5-pro", "timeout": 20})
	e, _ := sc["error"].(map[string]any)
	if e["class"] != "not_found" || !strings.Contains(text, "No endpoints found matching your data policy") || !strings.Contains(text, "no endpoint that keeps no data: choose another model") {
		t.Errorf("class %v:\n%s", e["class"], text)
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}
