package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/memhttp"
)

func TestCancelCause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason string
		want   error
	}{
		{"", consultation.ErrClientCancelled},
		{"context canceled", consultation.ErrClientCancelled},
		{"MCP request cancelled by caller", consultation.ErrClientCancelled}, // Codex, also at its tool timeout
		{"User pressed stop", consultation.ErrUserCancelled},
		{"AbortError: user-cancel", consultation.ErrUserCancelled},                // Claude Code, the user's Esc
		{"AbortError: This operation was aborted", consultation.ErrUserCancelled}, // TypeScript SDK, an AbortSignal
		{"McpError: MCP error -32001: Request timed out", consultation.ErrClientGaveUp},
		{"Request TIMED OUT", consultation.ErrClientGaveUp},
		{"tool call timeout after 60s", consultation.ErrClientGaveUp},
		{"-32001", consultation.ErrClientGaveUp},
		{"context deadline exceeded", consultation.ErrClientGaveUp},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if got := CancelCause(tt.reason); got != tt.want {
				t.Errorf("CancelCause(%q) = %v, want %v", tt.reason, got, tt.want)
			}
		})
	}
}

// TestReasonGrace: over HTTP a call's stream may end before the client's
// notifications/cancelled arrives (the Go SDK posts it after closing the stream). A
// cancellation that arrives within reasonGrace still gives the call its cause, and at once;
// without one the call ends with the stream's own cause when the grace is over.
func TestReasonGrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		after time.Duration // the cancellation arrives this long after the stream ended; <0 never
		want  error
		at    time.Duration // when the call's context ends, after the stream
	}{
		{"cancellation 150 ms late", 150 * time.Millisecond, consultation.ErrUserCancelled, 150 * time.Millisecond},
		{"timeout reason 10 ms late", 10 * time.Millisecond, consultation.ErrClientGaveUp, 10 * time.Millisecond},
		{"none", -1, context.Canceled, reasonGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				c := newCancels()
				k := cancelKey{"session", `7`}
				c.begin(k, "", time.Now())
				defer c.end(k)
				stream, endStream := context.WithCancel(context.WithValue(context.Background(), cancelScopeKey{}, cancelScope{c, k.session, reasonGrace}))
				req := mcp.CallToolRequest{}
				req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{requestIDMeta: k.id}}
				ctx, stop := callContext(stream, req)
				defer stop()
				start := time.Now()
				endStream()
				if tc.after >= 0 {
					time.Sleep(tc.after)
					reason := "user pressed stop"
					if tc.want == consultation.ErrClientGaveUp {
						reason = "Request timed out"
					}
					c.cancel(k, reason)
				}
				<-ctx.Done()
				if got := time.Since(start); got != tc.at {
					t.Errorf("the call's context ended %v after the stream, want %v", got, tc.at)
				}
				if got := context.Cause(ctx); !errors.Is(got, tc.want) {
					t.Errorf("cause = %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// expiringCtx is a context whose deadline passes when its expire function is called: a
// client deadline that comes once the call has started, however long the start took on a
// busy machine. (Its parent must not end first: Done follows only expire.)
type expiringCtx struct {
	context.Context
	done    chan struct{}
	expired atomic.Bool
}

func (c *expiringCtx) Done() <-chan struct{} { return c.done }

func (c *expiringCtx) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}

// expiring returns a context under parent and the function that makes its deadline pass.
func expiring(parent context.Context) (context.Context, context.CancelFunc) {
	c := &expiringCtx{Context: parent, done: make(chan struct{})}
	return c, func() {
		if c.expired.CompareAndSwap(false, true) {
			close(c.done)
		}
	}
}

// probe is a tool that runs until its call is cancelled and reports its JSON-RPC id and
// the cause its context ended with, run as handler.run runs the consult tools.
type probe struct {
	started chan string // the call's id, as rememberRequestID left it
	causes  chan error
}

func addProbe(s *server.MCPServer) *probe {
	p := &probe{started: make(chan string, 8), causes: make(chan error, 8)}
	s.AddTool(mcp.NewTool("probe"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, stop := callContext(ctx, req)
		defer stop()
		id, _ := req.Params.Meta.AdditionalFields[requestIDMeta].(string)
		p.started <- id
		select {
		case <-ctx.Done():
			p.causes <- context.Cause(ctx)
		case <-time.After(time.Minute): // a hang guard
			p.causes <- errors.New("never cancelled")
		}
		if req.Params.Meta.ProgressToken != nil { // a heartbeat that races the cancellation
			_ = server.ServerFromContext(ctx).SendNotificationToClient(context.WithoutCancel(ctx), "notifications/progress",
				map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "message": "late"})
		}
		return mcp.NewToolResultText("stopped"), nil
	})
	return p
}

func (p *probe) waitStart(t *testing.T) string {
	t.Helper()
	select {
	case id := <-p.started:
		return id
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the probe call did not start")
		return ""
	}
}

func (p *probe) waitCause(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.causes:
		return err
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the probe call did not end")
		return nil
	}
}

// lines records what a server writes, one message per Write.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
	w   io.Writer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	l.mu.Unlock()
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// answered reports whether out holds a JSON-RPC response with id (canonical JSON).
func answered(out, id string) bool {
	for _, part := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' }) {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "data:"))
		var m message
		if json.Unmarshal([]byte(part), &m) == nil && m.isResponse() && canonicalID(m.ID) == id {
			return true
		}
	}
	return false
}

// progressed reports whether out holds a progress notification with token.
func progressed(out, token string) bool {
	for _, part := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' }) {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "data:"))
		var m message
		if json.Unmarshal([]byte(part), &m) == nil && m.Method == "notifications/progress" &&
			strings.Contains(string(m.Params), `"progressToken":"`+token+`"`) {
			return true
		}
	}
	return false
}

// TestCancelOverStdio: through mcp-go's client over stdio, a cancelled call's handler sees
// the cause its reason maps to, the call gets no response, and the session goes on.
func TestCancelOverStdio(t *testing.T) {
	t.Parallel()
	s := New(Config{Service: &consultation.Service{}})
	p := addProbe(s)
	c, out := stdioClient(t, s, false)
	ctx := context.Background()

	tests := []struct {
		name string
		// cancel ends the call started with callCtx's cancel, with a reason.
		cancel func(t *testing.T, id string, stop context.CancelFunc)
		want   error
	}{
		{"the client cancels", func(t *testing.T, _ string, stop context.CancelFunc) { stop() }, consultation.ErrClientCancelled},
		{"the client's deadline passes", nil, consultation.ErrClientGaveUp},
		{"the client's reason says it timed out", func(t *testing.T, id string, _ context.CancelFunc) {
			err := c.GetTransport().SendNotification(ctx, mcp.JSONRPCNotification{
				JSONRPC: mcp.JSONRPC_VERSION,
				Notification: mcp.Notification{
					Method: string(mcp.MethodNotificationCancelled),
					Params: mcp.NotificationParams{AdditionalFields: map[string]any{
						"requestId": json.RawMessage(id), "reason": "McpError: MCP error -32001: Request timed out"}},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
		}, consultation.ErrClientGaveUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			callCtx, stop := context.WithCancel(ctx)
			defer stop()
			if tt.cancel == nil { // the client's deadline passes once the call has started
				callCtx, stop = expiring(ctx)
				defer stop()
			}
			probeCall := mcp.CallToolRequest{}
			probeCall.Params.Name = "probe"
			token := "tok-" + tt.name
			probeCall.Params.Meta = &mcp.Meta{ProgressToken: token}
			go c.CallTool(callCtx, probeCall)
			id := p.waitStart(t)
			if tt.cancel != nil {
				tt.cancel(t, id, stop)
			} else {
				stop()
			}
			if got := p.waitCause(t); !errors.Is(got, tt.want) {
				t.Errorf("cause = %v, want %v", got, tt.want)
			}
			if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
				t.Fatalf("the session did not survive the cancel: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // the response, if any, is written as the handler returns
			if answered(out.String(), id) {
				t.Errorf("the cancelled call %s got a response:\n%s", id, out.String())
			}
			if progressed(out.String(), token) {
				t.Errorf("the cancelled call %s got progress after its cancellation:\n%s", id, out.String())
			}
		})
	}
}

// TestCancelOverHTTPWithGoSDK: the official Go SDK, on both protocol versions over
// streamable HTTP, cancels a call: the handler sees ErrUserCancelled, no response is sent for
// it, and a later call on the same session works. In a synctest bubble over in-memory HTTP:
// the SDK posts its cancellation after it closes the call's stream, and the shim waits only
// reasonGrace for it (a loopback round trip on a busy machine once outlasted a shorter grace).
func TestCancelOverHTTPWithGoSDK(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { cancelOverHTTPWithGoSDK(t, version) })
		})
	}
}

func cancelOverHTTPWithGoSDK(t *testing.T, version string) {
	s := New(Config{Service: &consultation.Service{}})
	p := addProbe(s)
	out := &lines{}
	hc := &http.Client{Transport: memhttp.Transport(recordResponses(HTTPShim(server.NewStreamableHTTPServer(s)), out))}
	ctx := context.Background()
	cl := gosdk.NewClient(&gosdk.Implementation{Name: "cancel", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: "http://consult.invalid/mcp", HTTPClient: hc, MaxRetries: -1},
		&gosdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}
	for _, deadline := range []bool{false, true} {
		callCtx, stop := context.WithCancel(ctx)
		want := consultation.ErrClientCancelled
		if deadline {
			callCtx, stop = context.WithTimeout(ctx, 100*time.Millisecond)
			want = consultation.ErrClientGaveUp
		}
		errc := make(chan error, 1)
		token := fmt.Sprintf("tok-%v", deadline)
		params := &gosdk.CallToolParams{Name: "probe"}
		params.SetProgressToken(token)
		go func() {
			_, err := cs.CallTool(callCtx, params)
			errc <- err
		}()
		id := p.waitStart(t)
		if !deadline {
			stop()
		}
		if got := p.waitCause(t); !errors.Is(got, want) {
			t.Errorf("deadline %v: cause = %v, want %v", deadline, got, want)
		}
		<-errc
		stop()
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("the session did not survive the cancel: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		if answered(out.String(), id) {
			t.Errorf("the cancelled call %s got a response:\n%s", id, out.String())
		}
		if progressed(out.String(), token) {
			t.Errorf("the cancelled call %s got progress after its cancellation:\n%s", id, out.String())
		}
	}
}

// recordResponses copies every response body next writes into out.
func recordResponses(next http.Handler, out *lines) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&teeWriter{ResponseWriter: w, out: out}, r)
	})
}

type teeWriter struct {
	http.ResponseWriter
	out *lines
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.out.Write(append(append([]byte(nil), p...), '\n'))
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestModernNotificationWithoutMeta: a 2026-07-28 notification posted without the
// protocol version in _meta is accepted (202), as the specification allows: a cancellation
// (kept from mcp-go), and any other notification, whose _meta the shim completes for mcp-go
// whatever its params hold (none, null, a _meta of other keys).
func TestModernNotificationWithoutMeta(t *testing.T) {
	t.Parallel()
	s := New(Config{Service: &consultation.Service{}})
	ts := httptest.NewServer(HTTPShim(server.NewStreamableHTTPServer(s)))
	t.Cleanup(ts.Close)
	for _, tc := range []struct{ method, params string }{
		{"notifications/cancelled", `{"requestId":7,"reason":"x"}`},
		{"notifications/roots/list_changed", ``},
		{"notifications/roots/list_changed", `null`},
		{"notifications/roots/list_changed", `{}`},
		{"notifications/roots/list_changed", `{"_meta":null}`},
		{"notifications/roots/list_changed", `{"_meta":{"x/y":123456789012345678901}}`},
	} {
		body := `{"jsonrpc":"2.0","method":"` + tc.method + `"`
		if tc.params != "" {
			body += `,"params":` + tc.params
		}
		body += "}"
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
		req.Header.Set("Mcp-Method", tc.method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusAccepted; got != want {
			t.Errorf("%s: status %d (%s), want %d", body, got, b, want)
		}
	}
}
