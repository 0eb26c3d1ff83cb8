package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/memhttp"
)

// held is a tool whose calls run until released or cancelled. Each reports its JSON-RPC id
// when it starts and, when cancelled, its id and the cause its context ended with; a
// released call sends one progress notification with its token, then returns "finished"
// once finish is closed (a notification sent just before a result may never reach the
// client: mcp-go queues them apart).
type held struct {
	started chan string
	ended   chan heldEnd
	release chan struct{}
	finish  chan struct{}
}

type heldEnd struct {
	id    string
	cause error
}

func addHeld(s *server.MCPServer) *held {
	h := &held{started: make(chan string, 8), ended: make(chan heldEnd, 8), release: make(chan struct{}), finish: make(chan struct{})}
	s.AddTool(mcp.NewTool("held"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, stop := callContext(ctx, req)
		defer stop()
		id, _ := req.Params.Meta.AdditionalFields[requestIDMeta].(string)
		h.started <- id
		select {
		case <-ctx.Done():
			h.ended <- heldEnd{id, context.Cause(ctx)}
			return mcp.NewToolResultText("stopped"), nil
		case <-h.release:
		}
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
			map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "message": "still mine"})
		<-h.finish
		return mcp.NewToolResultText("finished"), nil
	})
	return h
}

// TestCancelIsItsSenders: two clients of the official Go SDK share the server's HTTP
// endpoint (and, in consult, its one bearer token) and each calls a tool with the same
// JSON-RPC id and the same progress token. A notifications/cancelled naming that id is posted
// apart (before 2026-07-28, in the first client's session), then the first client cancels its
// call: its own call ends, and the other's call is untouched; it then gets its progress and
// its result. Over protocol 2026-07-28, where requests have no session, and 2025-11-25, where
// they have one each. In a synctest bubble over in-memory HTTP.
func TestCancelIsItsSenders(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { cancelIsItsSenders(t, version) })
		})
	}
}

func cancelIsItsSenders(t *testing.T, version string) {
	s := New(Config{Service: &consultation.Service{}})
	h := addHeld(s)
	endpoint := HTTPShim(server.NewStreamableHTTPServer(s))
	ctx := context.Background()

	var mu sync.Mutex
	var progress []string // what the first client's progress handler got
	connect := func(name string, onProgress func(*gosdk.ProgressNotificationClientRequest)) *gosdk.ClientSession {
		hc := &http.Client{Transport: memhttp.Transport(endpoint)}
		cl := gosdk.NewClient(&gosdk.Implementation{Name: name, Version: "1"}, &gosdk.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *gosdk.ProgressNotificationClientRequest) {
				if onProgress != nil {
					onProgress(r)
				}
			},
		})
		cs, err := cl.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: "http://consult.invalid/mcp", HTTPClient: hc, MaxRetries: -1},
			&gosdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice := connect("alice", func(r *gosdk.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Message)
		mu.Unlock()
	})
	bob := connect("bob", nil)

	call := func(cs *gosdk.ClientSession, callCtx context.Context) <-chan *gosdk.CallToolResult {
		done := make(chan *gosdk.CallToolResult, 1)
		params := &gosdk.CallToolParams{Name: "held"}
		params.SetProgressToken("tok")
		go func() {
			res, _ := cs.CallTool(callCtx, params)
			done <- res
		}()
		return done
	}
	// Bob's call first, then Alice's: where calls are keyed by id alone, the later one holds
	// the key, and a cancellation naming the id reaches Alice's.
	bobCtx, cancelBob := context.WithCancel(ctx)
	defer cancelBob()
	bobDone := call(bob, bobCtx)
	bobID := <-h.started
	aliceDone := call(alice, ctx)
	if aliceID := <-h.started; aliceID != bobID {
		t.Fatalf("the two calls have ids %s and %s: the test needs the same id", bobID, aliceID)
	}

	// A cancellation naming the id, posted apart: before 2026-07-28 in Bob's session.
	body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + bobID +
		`,"reason":"not yours","_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + version + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, "http://consult.invalid/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, version)
	if id := bob.ID(); id != "" {
		req.Header.Set(server.HeaderKeySessionID, id)
	}
	resp, err := (&http.Client{Transport: memhttp.Transport(endpoint)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("the posted cancellation: status %d, want %d", resp.StatusCode, http.StatusAccepted)
	}

	// Bob cancels his call: the SDK closes its stream and posts notifications/cancelled for
	// its id. (Before 2026-07-28 the posted cancellation above, in his session, ended it
	// already; both reasons say nothing more than a cancel.)
	cancelBob()
	if end := <-h.ended; end.id != bobID || !errors.Is(end.cause, consultation.ErrClientCancelled) {
		t.Errorf("Bob's cancelled call ended with %v, want a client's cancel (%v)", end.cause, consultation.ErrClientCancelled)
	}
	if res := <-bobDone; res != nil {
		t.Errorf("the cancelled call got a result: %+v", res)
	}

	synctest.Wait()
	select {
	case end := <-h.ended:
		t.Fatalf("the other client's call %s ended with %v: a cancellation reached a call its sender did not make", end.id, end.cause)
	default:
	}
	close(h.release)
	synctest.Wait()
	mu.Lock()
	if len(progress) != 1 || progress[0] != "still mine" {
		t.Errorf("the untouched call's progress %q, want its notification (its token is the cancelled call's too)", progress)
	}
	mu.Unlock()
	close(h.finish)
	res := <-aliceDone
	if res == nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("the untouched call: %+v, want its result", res)
	}
	if tc, ok := res.Content[0].(*gosdk.TextContent); !ok || tc.Text != "finished" {
		t.Errorf("the untouched call returned %+v, want finished", res.Content[0])
	}
}

// TestStreamCancelMatching: a 2026-07-28 cancellation gives its reason only to a call with
// its id whose stream its client closed within reasonGrace of it, before or after it
// arrived, and to one such call at most (the latest to close); it never cancels a call
// whose stream is open.
func TestStreamCancelMatching(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	scope := func(n int) string { return streamScopePrefix + strconv.Itoa(n) }
	for _, tc := range []struct {
		name string
		run  func(c *cancels)
		want map[string]string // scope -> reason; absent: not cancelled
	}{
		{"closed, then the cancellation", func(c *cancels) {
			c.streamEnded(cancelKey{scope(1), "7"}, t0)
			c.cancelStream("7", "mine", t0.Add(reasonGrace))
		}, map[string]string{scope(1): "mine"}},
		{"the cancellation, then closed", func(c *cancels) {
			c.cancelStream("7", "mine", t0)
			c.streamEnded(cancelKey{scope(1), "7"}, t0.Add(reasonGrace))
		}, map[string]string{scope(1): "mine"}},
		{"stream open", func(c *cancels) {
			c.cancelStream("7", "not yours", t0)
		}, nil},
		{"another id", func(c *cancels) {
			c.streamEnded(cancelKey{scope(1), "7"}, t0)
			c.cancelStream("8", "not yours", t0)
		}, nil},
		{"closed too long before", func(c *cancels) {
			c.streamEnded(cancelKey{scope(1), "7"}, t0)
			c.cancelStream("7", "late", t0.Add(reasonGrace+time.Millisecond))
		}, nil},
		{"arrived too long before the close", func(c *cancels) {
			c.cancelStream("7", "early", t0)
			c.streamEnded(cancelKey{scope(1), "7"}, t0.Add(reasonGrace+time.Millisecond))
		}, nil},
		{"one call for one cancellation", func(c *cancels) {
			c.streamEnded(cancelKey{scope(1), "7"}, t0)
			c.streamEnded(cancelKey{scope(2), "7"}, t0.Add(time.Millisecond))
			c.cancelStream("7", "the latest", t0.Add(2*time.Millisecond))
		}, map[string]string{scope(2): "the latest"}},
		{"a session's request is not a stream's", func(c *cancels) {
			c.cancelStream("7", "not yours", t0)
			c.streamEnded(cancelKey{"mcp-session-x", "7"}, t0) // not a 2026-07-28 request: ignored
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCancels()
			keys := []cancelKey{{scope(1), "7"}, {scope(2), "7"}, {"mcp-session-x", "7"}}
			for _, k := range keys {
				c.begin(k, "", t0)
			}
			tc.run(c)
			for _, k := range keys {
				st, _ := c.state(k)
				want, cancelled := tc.want[k.session]
				if st.cancelled != cancelled || st.reason != want {
					t.Errorf("%q: cancelled %v with %q, want %v with %q", k.session, st.cancelled, st.reason, cancelled, want)
				}
			}
		})
	}
}
