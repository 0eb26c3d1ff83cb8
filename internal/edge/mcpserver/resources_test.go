package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/memhttp"
)

// Resources of the test server: one readable, one whose handler fails though the lookup
// finds it (a fault, not a missing resource), and every other results URI missing.
const (
	knownURI  = "results://known"
	brokenURI = "results://broken"
	otherURI  = "results://other"
)

// resourceServer is a server with a results://{id} template whose handler fails for
// anything but knownURI, as consult's fails for an id it cannot read, and the lookup in ctx.
func resourceServer(t *testing.T) (*server.MCPServer, context.Context) {
	t.Helper()
	s := New(Config{Service: &consultation.Service{}})
	s.AddResourceTemplate(mcp.NewResourceTemplate("results://{id}", "result"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		if req.Params.URI != knownURI {
			return nil, errors.New("cannot read " + req.Params.URI)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: knownURI, MIMEType: "text/plain", Text: "the answer"}}, nil
	})
	lookup := func(_ context.Context, uri string) (bool, string) {
		if uri == knownURI || uri == brokenURI {
			return true, ""
		}
		return false, "no such result"
	}
	return s, WithResourceLookup(context.Background(), lookup)
}

// TestResourceNotFoundOverHTTP: with the official Go SDK over streamable HTTP, reading a
// resource the lookup refuses answers -32602 for protocol 2026-07-28 and -32002 before it,
// with data.uri; a readable resource is read, and a resource that exists but fails to read
// keeps mcp-go's internal error.
func TestResourceNotFoundOverHTTP(t *testing.T) {
	t.Parallel()
	for version, code := range map[string]int64{"2026-07-28": mcp.INVALID_PARAMS, "2025-11-25": mcp.RESOURCE_NOT_FOUND} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			s, base := resourceServer(t)
			h := HTTPShim(server.NewStreamableHTTPServer(s))
			withBase := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r.WithContext(base)) // as the binary's server gives every request its base context
			})
			hc := &http.Client{Transport: memhttp.Transport(withBase)}
			cl := gosdk.NewClient(&gosdk.Implementation{Name: "resources", Version: "1"}, nil)
			cs, err := cl.Connect(t.Context(), &gosdk.StreamableClientTransport{Endpoint: "http://consult.invalid/mcp", HTTPClient: hc, MaxRetries: -1},
				&gosdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			res, err := cs.ReadResource(t.Context(), &gosdk.ReadResourceParams{URI: knownURI})
			if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "the answer" {
				t.Fatalf("reading %s: %+v, %v", knownURI, res, err)
			}
			for uri, want := range map[string]int64{otherURI: code, "file:///etc/passwd": code, brokenURI: jsonrpc.CodeInternalError} {
				_, err := cs.ReadResource(t.Context(), &gosdk.ReadResourceParams{URI: uri})
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) {
					t.Fatalf("reading %s: %v (%T), want a JSON-RPC error", uri, err, err)
				}
				if rpcErr.Code != want {
					t.Errorf("reading %s: code %d (%s), want %d", uri, rpcErr.Code, rpcErr.Message, want)
				}
				var data struct{ URI string }
				if want != jsonrpc.CodeInternalError && (json.Unmarshal(rpcErr.Data, &data) != nil || data.URI != uri) {
					t.Errorf("reading %s: data %s, want the uri", uri, rpcErr.Data)
				}
			}
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Errorf("the session after the errors: %v", err)
			}
		})
	}
}

// TestResourceNotFoundOverStdio: over stdio, a resources/read the lookup refuses gets
// -32002 in a session initialized at 2025-11-25 and -32602 in a 2026-07-28 request, each
// with data.uri; a readable one is read.
func TestResourceNotFoundOverStdio(t *testing.T) {
	t.Parallel()
	s, ctx := resourceServer(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = ServeStdio(ctx, s, inR, outW, io.Discard) }()
	t.Cleanup(func() { inW.Close() })
	responses := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] != nil {
				responses <- m
			}
		}
	}()
	send := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-responses:
			return m
		case <-time.After(10 * time.Second): // a hang guard
			t.Fatalf("no response to %s", line)
			return nil
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	modernMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	for _, tc := range []struct {
		name, line string
		code       int
	}{
		{"legacy", `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"` + otherURI + `"}}`, mcp.RESOURCE_NOT_FOUND},
		{"legacy, string id", `{"jsonrpc":"2.0","id":"r-3","method":"resources/read","params":{"uri":"` + otherURI + `"}}`, mcp.RESOURCE_NOT_FOUND},
		{"2026-07-28", `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"` + otherURI + `",` + modernMeta + `}}`, mcp.INVALID_PARAMS},
	} {
		m := send(tc.line)
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if code, _ := e["code"].(float64); int(code) != tc.code || data["uri"] != otherURI || !strings.Contains(e["message"].(string), "no such result") {
			t.Errorf("%s: %v, want code %d with data.uri", tc.name, m, tc.code)
		}
	}
	m := send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"` + knownURI + `"}}`)
	if b, _ := json.Marshal(m); !strings.Contains(string(b), "the answer") {
		t.Errorf("reading %s: %s", knownURI, b)
	}
}

// TestResourceResponseReplaces: the HTTP shim replaces mcp-go's error response to the
// refused request, written as a JSON body or as an SSE event (with or without an event id),
// and passes every other message of the stream unchanged.
func TestResourceResponseReplaces(t *testing.T) {
	t.Parallel()
	ours := []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"x"}}}`)
	theirs := `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"cannot read x"}}`
	for _, tc := range []struct{ name, in, want string }{
		{"json body", theirs + "\n", string(ours) + "\n"},
		{"sse event", "event: message\ndata: " + theirs + "\n\n", "event: message\ndata: " + string(ours) + "\n\n"},
		{"sse event with id", "id: 3\nevent: message\ndata: " + theirs + "\n\n", "id: 3\nevent: message\ndata: " + string(ours) + "\n\n"},
		{"sse event of two data lines", "event: message\r\ndata: " + theirs[:20] + "\r\ndata: " + theirs[20:] + "\r\n\r\n", "event: message\ndata: " + string(ours) + "\n\n"},
		{"another request's error", `{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"m"}}` + "\n", `{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"m"}}` + "\n"},
		{"a success", `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}` + "\n", `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}` + "\n"},
		{"a notification", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &lines{}
			c, k := newCancels(), cancelKey{"", "7"}
			c.replace(k, inPlaceOfError(ours))
			w := &httpResponse{ResponseWriter: &recorder{w: rec}, c: c, k: k}
			if n, err := w.Write([]byte(tc.in)); err != nil || n != len(tc.in) {
				t.Fatalf("Write: %d, %v", n, err)
			}
			if got := rec.String(); got != tc.want {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}

// recorder is an http.ResponseWriter whose body goes to w.
type recorder struct {
	http.ResponseWriter
	w io.Writer
}

func (r *recorder) Write(p []byte) (int, error) { return r.w.Write(p) }
