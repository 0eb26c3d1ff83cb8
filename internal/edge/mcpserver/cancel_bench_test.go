package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// largeResponse is a tool call's response with id 7 carrying a 2 MB answer of source-like
// text (quotes, tabs and newlines to escape), as mcp-go writes it.
func largeResponse(tb testing.TB) []byte {
	tb.Helper()
	line := "\tif err := f(\"x\"); err != nil { return fmt.Errorf(\"f: %w\", err) }\n"
	answer := strings.Repeat(line, 2_000_000/len(line))
	b, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(7), mcp.NewToolResultText(answer)))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// discardResponse is an http.ResponseWriter that keeps nothing.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

// BenchmarkShimLargeResponse is what the cancellation shim adds to writing a response that
// carries a 2 MB answer: on stdio (one line), and over HTTP as an SSE event, with no
// request cancelled and with another request of the session cancelled.
func BenchmarkShimLargeResponse(b *testing.B) {
	resp := largeResponse(b)
	event := append(append([]byte("event: message\ndata: "), resp...), "\n\n"...)
	b.Run("stdio", func(b *testing.B) {
		c := newCancels()
		out := &stdioOut{w: io.Discard, c: c}
		b.SetBytes(int64(len(resp)))
		b.ReportAllocs()
		for b.Loop() {
			c.begin(cancelKey{"", "7"}, `"tok"`, time.Now())
			if _, err := out.Write(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name      string
		cancelled bool // another request of the session was cancelled
	}{{"http", false}, {"http-cancelled-elsewhere", true}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newCancels()
			if tc.cancelled {
				c.begin(cancelKey{"s", "8"}, `"other"`, time.Now())
				c.cancel(cancelKey{"s", "8"}, "user")
			}
			b.SetBytes(int64(len(event)))
			b.ReportAllocs()
			for b.Loop() {
				k := cancelKey{"s", "7"}
				c.begin(k, `"tok"`, time.Now())
				rw := &httpResponse{ResponseWriter: &discardResponse{h: http.Header{"Content-Type": {"text/event-stream"}}},
					c: c, session: "s", k: k}
				rw.WriteHeader(http.StatusOK)
				if _, err := rw.Write(event); err != nil {
					b.Fatal(err)
				}
				c.end(k)
			}
		})
	}
}

// TestPeekOutgoing: what the shim reads of an outgoing message without decoding all of it
// is what decoding all of it gives: the id, the method, whether it is a response, and the
// params of a progress notification; a response's result is not read once the id is known.
func TestPeekOutgoing(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}`,
		`{"jsonrpc":"2.0","id":"a-1","error":{"code":-32603,"message":"x"}}`,
		`{"jsonrpc":"2.0","result":{},"id":8}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2,"message":"model thinking"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"roots/list"}`,
		` {"id": 1 , "result" : null}`,
	} {
		var want message
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := peekOutgoing([]byte(raw))
		if !ok {
			t.Errorf("%s: not read", raw)
			continue
		}
		if canonicalID(got.ID) != canonicalID(want.ID) || got.Method != want.Method || got.isResponse() != want.isResponse() ||
			got.isRequest() != want.isRequest() {
			t.Errorf("%s: peeked id %s method %q response %v; decoded id %s method %q response %v",
				raw, got.ID, got.Method, got.isResponse(), want.ID, want.Method, want.isResponse())
		}
		if want.Method == "notifications/progress" && string(got.Params) != string(want.Params) {
			t.Errorf("%s: params %s, want %s", raw, got.Params, want.Params)
		}
	}
	// The result after the id is not read: a truncated one is not noticed.
	if m, ok := peekOutgoing([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"te`)); !ok || canonicalID(m.ID) != "7" || !m.isResponse() {
		t.Errorf("a response's head: %+v, %v", m, ok)
	}
	for _, bad := range []string{"", "[1]", `"x"`, `{"id":}`} {
		if _, ok := peekOutgoing([]byte(bad)); ok {
			t.Errorf("%q read as a message", bad)
		}
	}
}
