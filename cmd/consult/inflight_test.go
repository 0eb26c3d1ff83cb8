package main

import (
	"bytes"
	"testing"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
)

// TestMaxInflightFlag: --max-inflight and CONSULT_MAX_INFLIGHT take sizes with binary or
// decimal units (the flag wins), the default is consultation.DefaultInflight, and a bound
// too small or not a size is refused.
func TestMaxInflightFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		env  map[string]string
		want consult.Bytes
	}{
		{nil, nil, consultation.DefaultInflight()},
		{[]string{"--max-inflight", "2GiB"}, nil, 2 << 30},
		{[]string{"--max-inflight", "512M"}, nil, 512 << 20},
		{[]string{"--max-inflight", "1.5GB"}, nil, 1_500_000_000},
		{[]string{"--max-inflight", "100mib"}, nil, 100 << 20},
		{[]string{"--max-inflight", "33554432"}, nil, 32 << 20},
		{nil, map[string]string{"CONSULT_MAX_INFLIGHT": "256MiB"}, 256 << 20},
		{[]string{"--max-inflight", "1G"}, map[string]string{"CONSULT_MAX_INFLIGHT": "256MiB"}, 1 << 30},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		cfg, err := parseServe("openai", tt.args, env(tt.env), &stderr)
		if err != nil {
			t.Errorf("parseServe(%q, %v): %v", tt.args, tt.env, err)
			continue
		}
		if got := cfg.MaxInflight; got != tt.want {
			t.Errorf("parseServe(%q, %v): max inflight %d, want %d", tt.args, tt.env, got, tt.want)
		}
	}
	for _, bad := range []string{"lots", "-1GiB", "1MiB", "2 parsecs", ""} {
		var stderr bytes.Buffer
		if _, err := parseServe("openai", []string{"--max-inflight", bad}, env(nil), &stderr); err == nil {
			t.Errorf("--max-inflight %q accepted", bad)
		}
	}
}
