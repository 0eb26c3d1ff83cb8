package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/leaf/tokens"
)

// newClient starts an in-process mcp-go client against a fresh server and initializes it.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	return startClient(t, &consultation.Service{Counter: tokens.NewCounter()}, nil)
}

// startClient serves svc in-process and returns an initialized mcp-go client for it;
// onNotification, if set, sees every notification the client receives.
func startClient(t *testing.T, svc *consultation.Service, onNotification func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	c, _ := inProcess(t, New(Config{Service: svc}), clientOpts{onNotification: onNotification})
	return c
}

// clientOpts are a test's choices about its client; the zero value is the usual client.
type clientOpts struct {
	protocol       string // the protocol version asked for; "" for mcp-go's latest
	onNotification func(mcp.JSONRPCNotification)
}

// inProcess serves s in-process and returns an initialized mcp-go client for it, and the
// server's answer to initialize.
func inProcess(t *testing.T, s *server.MCPServer, o clientOpts) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	return c, initialize(t, c, o)
}

// stdioSession is held by a test while it serves over stdio: mcp-go keeps one stdio session
// per process (its notification channel and writer are package state), so two sessions at
// once would take each other's notifications.
var stdioSession sync.Mutex

// stdioClient serves s with ServeStdio over pipes and returns an initialized mcp-go client for
// it and everything the server wrote. osPipes chooses operating-system pipes, as the binary's
// stdio (the kernel buffers what the client writes until the server reads it), over io.Pipe.
// Everything ends with the test.
func stdioClient(t *testing.T, s *server.MCPServer, osPipes bool) (*client.Client, *lines) {
	t.Helper()
	stdioSession.Lock()
	t.Cleanup(stdioSession.Unlock)
	var clientIn, serverIn io.ReadCloser
	var clientOut, serverOut io.WriteCloser
	if osPipes {
		var err1, err2 error
		clientIn, serverOut, err1 = os.Pipe()
		serverIn, clientOut, err2 = os.Pipe()
		if err := cmp.Or(err1, err2); err != nil {
			t.Fatal(err)
		}
	} else {
		clientIn, serverOut = io.Pipe()
		serverIn, clientOut = io.Pipe()
	}
	out := &lines{w: serverOut}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeStdio(ctx, s, serverIn, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		serverOut.Close()
		<-served
		clientIn.Close()
		serverIn.Close()
	})
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(nil)))
	initialize(t, c, clientOpts{})
	return c, out
}

// initialize starts c and initializes it; c closes at the end of the test.
func initialize(t *testing.T, c *client.Client, o clientOpts) *mcp.InitializeResult {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	if o.onNotification != nil {
		c.OnNotification(o.onNotification)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = cmp.Or(o.protocol, mcp.LATEST_PROTOCOL_VERSION)
	init.Params.ClientInfo = mcp.Implementation{Name: "consult-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func call(t *testing.T, c *client.Client, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "consultation"
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestListTools(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "consultation" {
		t.Fatalf("tools = %+v, want just consultation", res.Tools)
	}
	for _, arg := range []string{"path", "pattern", "query", "timeout", "dry_run"} {
		if _, ok := res.Tools[0].InputSchema.Properties[arg]; !ok {
			t.Errorf("listed schema lacks %q", arg)
		}
	}
}

func TestDryRunThroughClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"a.go": "package a\n", "sub/b.go": "package b\nfunc B() {}\n", ".env": "KEY=1\n"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t)
	res := call(t, c, map[string]any{"path": dir, "pattern": "**", "query": "What is this?", "dry_run": true})
	if res.IsError {
		t.Fatalf("dry run failed: %s", text(res))
	}
	if got := text(res); !strings.Contains(got, "2 files") || !strings.Contains(got, "secret") {
		t.Errorf("report should count 2 files and mention the skipped secret:\n%s", got)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Files  int `json:"files"`
		Tokens int `json:"prompt_tokens"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Files != 2 || rep.Tokens == 0 {
		t.Errorf("structured content = %s, want files 2 and tokens > 0", raw)
	}
}

func TestValidationThroughClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newClient(t)
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"timeout out of range", map[string]any{"path": dir, "pattern": "**", "query": "q", "timeout": 601}, "got 601"},
		{"timeout as string", map[string]any{"path": dir, "pattern": "**", "query": "q", "timeout": "abc"}, `the string "abc"`},
		{"relative path", map[string]any{"path": "rel", "pattern": "**", "query": "q"}, "not absolute"},
		{"missing query", map[string]any{"path": dir, "pattern": "**"}, `"query"`},
		{"escaping pattern", map[string]any{"path": dir, "pattern": "../../etc/*", "query": "q"}, `"../../etc/*"`},
		{"arguments not an object", []any{1, 2}, "JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, c, tc.args)
			if !res.IsError {
				t.Fatalf("want isError, got %q", text(res))
			}
			if got := text(res); !strings.Contains(got, tc.want) {
				t.Errorf("message %q lacks %q", got, tc.want)
			}
		})
	}
	// The server still answers after a run of refusals.
	if res := call(t, c, map[string]any{"path": dir, "pattern": "**", "query": "q", "dry_run": true}); !strings.Contains(text(res), "No files matched") {
		t.Errorf("after refusals the server should still answer; got %q", text(res))
	}
}

// TestWarningReachesClientWithoutSetLevel: a client that never chose a log level still gets
// consult's warnings as notifications/message (mcp-go's own default, error, would drop
// them); once it chooses a level, its choice applies.
func TestWarningReachesClientWithoutSetLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		level mcp.LoggingLevel // "" for none chosen
		want  bool
	}{
		{"no level chosen", "", true},
		{"level error chosen", mcp.LoggingLevelError, false},
		{"level debug chosen", mcp.LoggingLevelDebug, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var warnings []string
			on := func(n mcp.JSONRPCNotification) {
				if n.Method == "notifications/message" {
					mu.Lock()
					warnings = append(warnings, fmt.Sprint(n.Params.AdditionalFields["level"], ": ", n.Params.AdditionalFields["data"]))
					mu.Unlock()
				}
			}
			c, _ := inProcess(t, New(Config{Service: &consultation.Service{Counter: tokens.NewCounter()}}),
				clientOpts{protocol: "2025-11-25", onNotification: on})
			ctx := context.Background()
			if tc.level != "" {
				req := mcp.SetLevelRequest{}
				req.Params.Level = tc.level
				//lint:ignore SA1019 clients of protocol 2025-11-25 still set a level, and the warning must honour it
				if err := c.SetLevel(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			// No model: the call fails, but the warning on its timeout comes first.
			call(t, c, map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "timeout": 30})
			// Notifications travel apart from results: a warning that must come is waited for
			// (30 s, a hang guard); one that must not is given 50 ms to show itself.
			wait := 50 * time.Millisecond
			if tc.want {
				wait = 30 * time.Second
			}
			for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				mu.Lock()
				n := len(warnings)
				mu.Unlock()
				if n > 0 {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			got := len(warnings) > 0 && strings.HasPrefix(warnings[0], "warning: timeout 30 seconds accepted")
			if got != tc.want {
				t.Errorf("warnings received: %q; want the timeout warning: %v", warnings, tc.want)
			}
		})
	}
}
