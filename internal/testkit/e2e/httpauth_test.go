package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// authAttempt is one line of httpauth.mjs's output.
type authAttempt struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Tools int    `json:"tools"`
	Error *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
	Requests []string `json:"requests"`
}

// TestHTTPMissingTokenNamed: the TypeScript SDK client connecting without the token reports
// that the bearer token is missing and how to pass it, both when it has no auth provider (the
// 401's body) and when it has one, as Claude Code and MCP Inspector do: then it runs OAuth
// discovery and client registration, and the error it reports is consult's answer to the
// registration (before, "HTTP 404: Invalid OAuth error response ... 404 page not found").
// With the token it connects.
func TestHTTPMissingTokenNamed(t *testing.T) {
	t.Parallel()
	requireClient(t)
	e := newEnv(t, "http")
	arg, err := json.Marshal(map[string]string{"url": e.http.url, "token": e.http.token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", "httpauth.mjs", string(arg))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node httpauth.mjs: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	got := map[string]authAttempt{}
	for line := range strings.SplitSeq(strings.TrimSpace(stdout.String()), "\n") {
		var a authAttempt
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("httpauth.mjs printed %q: %v", line, err)
		}
		got[a.Name] = a
		t.Logf("%s: ok=%v error=%+v requests=%v", a.Name, a.OK, a.Error, a.Requests)
	}
	for _, name := range []string{"plain", "oauth"} {
		a := got[name]
		if a.OK || a.Error == nil {
			t.Errorf("%s: connected without the token", name)
			continue
		}
		for _, frag := range []string{"Authorization: Bearer <token>", "--http-token-file", "CONSULT_HTTP_TOKEN"} {
			if !strings.Contains(a.Error.Message, frag) {
				t.Errorf("%s: the SDK reported %q, which does not say %q", name, a.Error.Message, frag)
			}
		}
	}
	if msg := got["plain"].Error; msg != nil && !strings.Contains(msg.Message, "no bearer token") {
		t.Errorf("plain: %q does not say the token is missing", msg.Message)
	}
	if a := got["oauth"]; a.Error != nil {
		if !strings.Contains(a.Error.Message, "does not use OAuth") {
			t.Errorf("oauth: %q does not say that consult does not use OAuth", a.Error.Message)
		}
		for _, probe := range []string{"GET /.well-known/oauth-protected-resource", "GET /.well-known/oauth-authorization-server", "POST /register"} {
			if !slices.Contains(a.Requests, probe) {
				t.Errorf("oauth: the SDK's requests %v lack %q: the discovery it ran is not the one this test is about", a.Requests, probe)
			}
		}
	}
	if a := got["token"]; !a.OK || a.Tools == 0 {
		t.Errorf("with the token: ok=%v, %d tools, error %+v", a.OK, a.Tools, a.Error)
	}
}
