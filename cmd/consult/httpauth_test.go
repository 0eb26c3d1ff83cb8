package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/engine/results"
)

// TestHTTPDuplicateAuthorization: a request with two Authorization headers is refused with
// 400 whichever of them holds the token (before, the first one decided).
func TestHTTPDuplicateAuthorization(t *testing.T) {
	t.Parallel()
	ts := guardedMCP(t, nil, nil)
	right, wrong := "Bearer "+testToken, "Bearer wrong-0123456789abcdef"
	for _, pair := range [][2]string{{right, wrong}, {wrong, right}, {right, right}} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Add("Authorization", pair[0])
		req.Header.Add("Authorization", pair[1])
		resp, body := do(t, req)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "2 Authorization headers") {
			t.Errorf("Authorization %q then %q: status %d, body %q; want 400 naming the two headers", pair[0], pair[1], resp.StatusCode, body)
		}
	}
}

// TestHTTPDiscoveryPathsNameToken: the OAuth endpoints an MCP client probes after a 401
// (protected resource and authorization server metadata, client registration), and every
// other path but /mcp, answer 404 with an OAuth error whose description says how to pass
// the token: Claude Code and MCP Inspector show the registration's body to the user.
func TestHTTPDiscoveryPathsNameToken(t *testing.T) {
	t.Parallel()
	ts := guardedMCP(t, nil, nil)
	for _, probe := range []struct{ method, path string }{
		{"GET", "/.well-known/oauth-protected-resource/mcp"},
		{"GET", "/.well-known/oauth-protected-resource"},
		{"GET", "/.well-known/oauth-authorization-server"},
		{"GET", "/.well-known/openid-configuration"},
		{"POST", "/register"},
		{"GET", "/authorize?response_type=code"},
		{"POST", "/token"},
		{"GET", "/"},
	} {
		req, err := http.NewRequest(probe.method, ts.URL+probe.path, strings.NewReader(`{"client_name":"Claude Code (consult)"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, body := do(t, req)
		var e oauthError
		if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusNotFound || e.Error != "invalid_token" {
			t.Errorf("%s %s: status %d, body %q; want 404 with an OAuth error invalid_token", probe.method, probe.path, resp.StatusCode, body)
			continue
		}
		for _, frag := range []string{"does not use OAuth", "Authorization: Bearer <token>", "--http-token-file", "CONSULT_HTTP_TOKEN"} {
			if !strings.Contains(body, frag) { // in the body as sent, as clients show it: no \u003c
				t.Errorf("%s %s: body %q does not say %q", probe.method, probe.path, body, frag)
			}
		}
		if !resp.Close {
			t.Errorf("%s %s: the connection is kept open", probe.method, probe.path)
		}
	}
}

// TestHTTPEndedSessionRefused: after the client ends its session with DELETE, every
// request with that session id (a POST, a GET that would open its stream, another DELETE)
// gets 404, as the MCP specification requires (before, the id went on working); a new
// initialize starts a session that works.
func TestHTTPEndedSessionRefused(t *testing.T) {
	t.Parallel()
	ts := guardedMCP(t, nil, nil)
	call := func(method, session, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		return doWithin(t, req)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	start := func() string {
		t.Helper()
		resp, body := call("POST", "", initialize)
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || id == "" {
			t.Fatalf("initialize: status %d, session %q, body %q", resp.StatusCode, id, body)
		}
		call("POST", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if resp, body := call("POST", id, list); resp.StatusCode != 200 || !strings.Contains(body, "consultation") {
			t.Fatalf("tools/list in a new session: status %d, body %q", resp.StatusCode, body)
		}
		return id
	}
	id := start()
	if resp, body := call("DELETE", id, ""); resp.StatusCode != 200 {
		t.Fatalf("DELETE: status %d, body %q", resp.StatusCode, body)
	}
	for _, method := range []string{"POST", "GET", "DELETE"} {
		if resp, body := call(method, id, list); resp.StatusCode != 404 {
			t.Errorf("%s with the ended session: status %d, body %q; want 404", method, resp.StatusCode, body)
		}
	}
	start()
}

// TestTokenFileOwner: a token file owned by another user is refused, naming the fix; the
// owner is compared with the user running consult.
func TestTokenFileOwner(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("file-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	uid, ok := results.FileOwner(fi)
	if !ok {
		t.Skip("files have no owning user id here")
	}
	if err := checkTokenFileOwner(fi, uid); err != nil {
		t.Errorf("the owner's own file: %v", err)
	}
	err = checkTokenFileOwner(fi, uid+1)
	if !errors.Is(err, errTokenFileNotOwned) || !strings.Contains(err.Error(), "--http-token-file NEWFILE") {
		t.Errorf("a file another user owns: %v, want errTokenFileNotOwned naming the fix", err)
	}
}

// do sends req with the default client and returns the response with its body read.
func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	return doClient(t, http.DefaultClient, req)
}

// doWithin is do for a request that might open a stream that never ends (a GET in a live
// session): it gives up after a generous limit instead of hanging the test.
func doWithin(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	return doClient(t, &http.Client{Timeout: 30 * time.Second}, req)
}

func doClient(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
