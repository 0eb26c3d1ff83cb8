package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/edge/mcpserver"
	"github.com/consultmcp/consult/internal/engine/background"
)

const (
	testToken  = "test-token-0123456789abcdef"
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
)

// guardedMCP serves consult's real MCP server, plus a tool "whoami" that answers with the
// owner its handler's context carries, behind the real guard in the real HTTP server.
// tweak, when not nil, adjusts the guard first.
func guardedMCP(t *testing.T, origins []string, tweak func(*httpGuard)) *httptest.Server {
	t.Helper()
	var stderr bytes.Buffer
	cfg, err := parseServe("openai", []string{"--results-dir", t.TempDir()}, env(nil), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	srv, err := newServer(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	s := mcpserver.New(mcpserver.Config{Service: srv.svc, Background: srv.engine, Logger: logger})
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(background.OwnerFrom(ctx)), nil
	})
	g := newHTTPGuard(testToken, origins, true)
	if tweak != nil {
		tweak(g)
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newHTTPServer(t.Context(), s, g, logger)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// guardOnly serves next behind the real guard (token testToken, loopback bind), with
// tweak applied to the guard.
func guardOnly(t *testing.T, next http.Handler, tweak func(*httpGuard)) *httptest.Server {
	t.Helper()
	g := newHTTPGuard(testToken, nil, true)
	g.next = next
	if tweak != nil {
		tweak(g)
	}
	ts := httptest.NewUnstartedServer(g)
	ts.Config.ReadHeaderTimeout = readHeaderTimeout
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, url string, body io.Reader, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHTTPGuardAdmits(t *testing.T) {
	t.Parallel()
	ts := guardedMCP(t, []string{"http://localhost:3000"}, nil)
	bearer := "Bearer " + testToken
	for _, tc := range []struct {
		name   string
		query  string
		header map[string]string
		want   int
		body   string // a fragment of the response body
	}{
		{"no token", "", nil, 401, "Authorization: Bearer"},
		{"wrong token", "", map[string]string{"Authorization": "Bearer test-token-0123456789abcdeX"}, 401, "Authorization: Bearer"},
		{"token prefix", "", map[string]string{"Authorization": "Bearer " + testToken[:16]}, 401, ""},
		{"basic scheme", "", map[string]string{"Authorization": "Basic " + testToken}, 401, ""},
		{"token alone", "", map[string]string{"Authorization": testToken}, 401, ""},
		{"token in query", "?access_token=" + testToken + "&token=" + testToken, nil, 401, "not accepted"},
		{"right token", "", map[string]string{"Authorization": bearer}, 200, "serverInfo"},
		{"scheme any case", "", map[string]string{"Authorization": "bearer " + testToken}, 200, "serverInfo"},
		{"allowed origin", "", map[string]string{"Authorization": bearer, "Origin": "http://localhost:3000"}, 200, "serverInfo"},
		{"evil origin", "", map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}, 403, "--http-allow-origin"},
		{"evil origin without token", "", map[string]string{"Origin": "http://evil.example"}, 403, "Origin"},
		{"null origin", "", map[string]string{"Authorization": bearer, "Origin": "null"}, 403, "Origin"},
		{"origin on another port", "", map[string]string{"Authorization": bearer, "Origin": "http://localhost:3001"}, 403, "Origin"},
		{"evil host", "", map[string]string{"Authorization": bearer, "Host": "evil.example"}, 403, "not a loopback name"},
		{"evil host without token", "", map[string]string{"Host": "evil.example:80"}, 403, "not a loopback name"},
		{"localhost host", "", map[string]string{"Authorization": bearer, "Host": "localhost:1"}, 200, "serverInfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := post(t, ts.URL+"/mcp"+tc.query, strings.NewReader(initialize), tc.header)
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d; body %q", resp.StatusCode, tc.want, body)
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body = %q, want it to contain %q", body, tc.body)
			}
			if tc.want != 401 {
				return
			}
			first := noTokenMessage
			if _, sent := tc.header["Authorization"]; sent {
				first = wrongTokenMessage
			}
			want := fmt.Sprintf(`Bearer realm="consult", error="invalid_token", error_description="%s Send the header Authorization: Bearer <token>."`, first)
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate = %q, want %q", got, want)
			}
			if !strings.HasPrefix(body, first) || !strings.Contains(body, "--http-token-file") {
				t.Errorf("401 body = %q, want it to start %q and name --http-token-file", body, first)
			}
		})
	}
}

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8765": true, "127.0.0.1": true, "127.1.2.3:80": true, "[::1]:8765": true, "[::1]": true,
		"": false, "evil.example": false, "localhost.evil.example": false, "10.0.0.1:8765": false, "[::2]:1": false, "0.0.0.0:8765": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestHTTPOwnerReachesToolHandler: a tool handler called over HTTP sees the digest of the
// token as the owner, through mcp-go's own client.
func TestHTTPOwnerReachesToolHandler(t *testing.T) {
	t.Parallel()
	ts := guardedMCP(t, nil, nil)
	c := httpClient(t, ts.URL+"/mcp", testToken)
	req := mcp.CallToolRequest{}
	req.Params.Name = "whoami"
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resultText(res), tokenOwner(testToken); got != want {
		t.Errorf("owner in the tool handler = %q, want %q", got, want)
	}
	if o := tokenOwner(testToken); len(o) != 32 || strings.Contains(o, testToken) {
		t.Errorf("tokenOwner = %q, want 32 hex digits not revealing the token", o)
	}
}

// httpClient is mcp-go's streamable HTTP client for url, initialized, sending token.
func httpClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	initClient(t, c, mcp.LATEST_PROTOCOL_VERSION)
	return c
}

// onlyReader hides a reader's type, so the request is sent chunked with no length.
type onlyReader struct{ io.Reader }

func TestHTTPBodyCap(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64 // the largest body the handler behind the guard got
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		n, _ := io.Copy(io.Discard, r.Body)
		if n > seen.Load() {
			seen.Store(n)
		}
	})
	ts := guardOnly(t, next, nil)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for _, tc := range []struct {
		name string
		body func() io.Reader
		want int
	}{
		{"5 MiB with a length", func() io.Reader { return bytes.NewReader(make([]byte, 5<<20)) }, 413},
		{"5 MiB chunked", func() io.Reader { return onlyReader{bytes.NewReader(make([]byte, 5<<20))} }, 413},
		{"at the cap, chunked", func() io.Reader { return onlyReader{bytes.NewReader(make([]byte, maxRequestBody))} }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, ts.URL+"/mcp", tc.body(), auth)
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d; body %q", resp.StatusCode, tc.want, body)
			}
			if tc.want == 413 && !strings.Contains(body, "over 4194304 bytes") {
				t.Errorf("413 body = %q, want it to name the cap", body)
			}
		})
	}
	if got, want := calls.Load(), int64(1); got != want {
		t.Errorf("handler behind the guard called %d times, want %d (only for the body within the cap)", got, want)
	}
	if got, want := seen.Load(), int64(maxRequestBody); got != want {
		t.Errorf("largest body the handler saw = %d bytes, want %d", got, want)
	}
}

// TestHTTPSlowBodyCutOff sends a body one byte every 200 ms: the guard gives up at its
// deadline with 408 (only the body deadline answers 408: the body would trickle for ever),
// not before it, and the handler behind it never runs.
func TestHTTPSlowBodyCutOff(t *testing.T) {
	t.Parallel()
	const deadline = 400 * time.Millisecond
	var called atomic.Bool
	ts := guardOnly(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) }),
		func(g *httpGuard) { g.bodyTimeout = deadline })
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", testToken)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte("{")); err != nil {
					return
				}
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response to a trickling body within 30 s: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status = %d, want 408", resp.StatusCode)
	}
	if want := "not received within " + consult.FormatDuration(deadline); !strings.Contains(string(msg), want) {
		t.Errorf("body = %q, want it to say %q", msg, want)
	}
	if took < deadline {
		t.Errorf("cut off after %s, before the deadline %s", took.Round(time.Millisecond), deadline)
	}
	t.Logf("cut off after %s (deadline %s)", took.Round(time.Millisecond), deadline)
	if called.Load() {
		t.Error("the handler behind the guard ran with a partial body")
	}
}

// TestHTTPBodyDeadlineCleared: once the body is read, a response may take longer than the
// body's deadline (an SSE stream for a long call) without its request being cancelled.
func TestHTTPBodyDeadlineCleared(t *testing.T) {
	t.Parallel()
	// Long enough that a busy machine reads the small body within it.
	const deadline = time.Second
	ts := guardOnly(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			io.WriteString(w, "cancelled")
		case <-time.After(2 * deadline):
			io.WriteString(w, "finished")
		}
	}), func(g *httpGuard) { g.bodyTimeout = deadline })
	_, body := post(t, ts.URL+"/mcp", strings.NewReader(initialize), map[string]string{"Authorization": "Bearer " + testToken})
	if body != "finished" {
		t.Errorf("handler that outlived the body deadline: %q, want finished", body)
	}
}

func TestResolveHTTPToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  file-token-0123456789  \nsecond line\n", 0o600)
	for _, tc := range []struct {
		name, file, env string
		want            string
		wantErr         error
		errText         string
	}{
		{"file, first line trimmed", good, "", "file-token-0123456789", nil, ""},
		{"file wins over the environment", good, "env-token-0123456789", "file-token-0123456789", nil, ""},
		{"environment", "", " env-token-0123456789\n", "env-token-0123456789", nil, ""},
		{"file readable by others", write("open", "file-token-0123456789\n", 0o644), "", "", errTokenFileExposed, "chmod 600"},
		{"file readable by group", write("group", "file-token-0123456789\n", 0o640), "", "", errTokenFileExposed, "chmod 600"},
		{"short token in a file", write("short", "123456789012345\n", 0o600), "", "", errTokenTooShort, "--http-token-file"},
		{"short token in the environment", "", "123456789012345", "", errTokenTooShort, "CONSULT_HTTP_TOKEN"},
		{"space inside", "", "env token 0123456789", "", errTokenBadChar, ""},
		{"missing file", filepath.Join(dir, "none"), "", "", os.ErrNotExist, ""},
		{"a directory", dir, "", "", nil, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok, err := resolveHTTPToken(tc.file, tc.env)
			if tc.wantErr == nil && tc.errText == "" {
				if err != nil || tok.value != tc.want || tok.generated {
					t.Errorf("token %+v, %v; want %q", tok, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %+v, want an error", tok)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("error %q, want it to mention %q", err, tc.errText)
			}
		})
	}
	a, err := resolveHTTPToken("", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := resolveHTTPToken("", "")
	if !a.generated || len(a.value) < 22 || a.value == b.value || strings.Trim(a.value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Errorf("generated tokens %q, %q: want distinct, URL-safe, at least 128 bits", a.value, b.value)
	}
}

func TestPrintHTTPAccess(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:8765/mcp"
	var gen, conf bytes.Buffer
	printHTTPAccess(&gen, url, httpToken{value: "generated-0123456789", generated: true})
	printHTTPAccess(&conf, url, httpToken{value: "configured-0123456789", source: "CONSULT_HTTP_TOKEN"})
	for _, frag := range []string{url, "Authorization: Bearer", "generated-0123456789"} {
		if !strings.Contains(gen.String(), frag) {
			t.Errorf("with a generated token, stderr lacks %q:\n%s", frag, gen.String())
		}
	}
	if !strings.Contains(conf.String(), "CONSULT_HTTP_TOKEN") || strings.Contains(conf.String(), "configured-0123456789") {
		t.Errorf("with a configured token, stderr should name its source and not echo it:\n%s", conf.String())
	}
}

func TestParseServeHTTPFlags(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	e := env(map[string]string{"CONSULT_HTTP_ALLOW_ORIGIN": "http://localhost:3000, https://App.example", "CONSULT_HTTP_TOKEN": "t"})
	cfg, err := parseServe("openai", nil, e, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(cfg.HTTPAllowOrigins, " "), "http://localhost:3000 https://app.example"; got != want {
		t.Errorf("origins from the environment = %q, want %q", got, want)
	}
	if cfg.HTTPToken != "t" {
		t.Errorf("CONSULT_HTTP_TOKEN gave %q", cfg.HTTPToken)
	}
	cfg, err = parseServe("openai", []string{"--http-allow-origin", "http://a.example", "--http-allow-origin", "http://b.example:8080", "--http-token-file", "/f"}, e, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(cfg.HTTPAllowOrigins, " "), "http://a.example http://b.example:8080"; got != want || cfg.HTTPTokenFile != "/f" {
		t.Errorf("flags gave origins %q (want %q), token file %q", got, want, cfg.HTTPTokenFile)
	}
	for _, bad := range []string{"evil.example", "http://x.example/path", "*", "null", "ftp://x.example"} {
		if _, err := parseServe("openai", []string{"--http-allow-origin", bad}, env(nil), &stderr); !errors.Is(err, errBadOrigin) {
			t.Errorf("--http-allow-origin %q: error %v, want errBadOrigin", bad, err)
		}
	}
}
