package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// The official Go SDK as a second client beside the TypeScript SDK: the built binary over
// stdio (the SDK spawns it) and over streamable HTTP with the bearer token, on both protocol
// versions the SDK speaks.

// goVersions are the protocol versions the Go SDK is asked for: its latest, which drops
// the initialize handshake, and the last one with it.
var goVersions = []string{"2026-07-28", "2025-11-25"}

// eachGoClient runs f as parallel subtests for every transport and protocol version.
func eachGoClient(t *testing.T, f func(t *testing.T, transport, version string)) {
	t.Parallel()
	for _, tr := range []string{"stdio", "http"} {
		for _, v := range goVersions {
			t.Run(tr+"/"+v, func(t *testing.T) {
				t.Parallel()
				f(t, tr, v)
			})
		}
	}
}

// goClient is one Go SDK session with a consult server, and the progress it was sent.
type goClient struct {
	t         *testing.T
	transport string
	cs        *mcp.ClientSession

	mu       sync.Mutex
	progress map[any][]progressNote // by progress token
	started  map[any]time.Time
	// onProgress, when set, is called with a progress token and how many notifications it
	// has had, as each arrives.
	onProgress func(token string, n int)
	calls      int // calls made, which number the tokens
}

// connect opens a Go SDK session with e's server at protocol version, failing unless the
// server agreed to that version.
func (e *env) connect(version string) *goClient {
	t := e.t
	t.Helper()
	g := &goClient{t: t, transport: e.transport, progress: map[any][]progressNote{}, started: map[any]time.Time{}}
	cl := mcp.NewClient(&mcp.Implementation{Name: "consult-e2e-go", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			g.mu.Lock()
			tok := fmt.Sprint(r.Params.ProgressToken)
			g.progress[tok] = append(g.progress[tok], progressNote{
				Progress: r.Params.Progress, Message: r.Params.Message,
				At: time.Since(g.started[tok]).Milliseconds(),
			})
			n, on := len(g.progress[tok]), g.onProgress
			g.mu.Unlock()
			if on != nil {
				on(tok, n)
			}
		},
	})
	var tr mcp.Transport
	if e.transport == "http" {
		tr = &mcp.StreamableClientTransport{
			Endpoint:   e.http.url,
			HTTPClient: &http.Client{Transport: bearer{e.http.token}},
			MaxRetries: -1,
		}
	} else {
		tr = &mcp.CommandTransport{Command: exec.Command(binary, e.args...)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Go SDK connect (%s, %s): %v", e.transport, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("protocol version %s, want %s", got, version)
	}
	g.cs = cs
	return g
}

// bearer sends the server's token with every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// token is the progress token of the n-th call (from 1) a goClient makes, of tool.
func token(tool string, n int) string { return fmt.Sprintf("%s-%d", tool, n) }

// awaitProgress waits until the call with progress token tok has had a notification (30 s:
// a hang guard): notifications travel apart from results.
func (g *goClient) awaitProgress(tok string) {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		g.mu.Lock()
		n := len(g.progress[tok])
		g.mu.Unlock()
		if n > 0 {
			return
		}
	}
}

// call makes one tool call with a progress token under ctx and returns it as the node
// client reports calls, so the TypeScript tests' checks apply. Its progress token is
// token(tool, n) for the client's n-th call.
func (g *goClient) call(ctx context.Context, tool string, args map[string]any) (callOutcome, error) {
	g.mu.Lock()
	g.calls++
	tok := token(tool, g.calls)
	g.mu.Unlock()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(tok)
	start := time.Now()
	g.mu.Lock()
	g.started[tok] = start
	g.mu.Unlock()
	res, err := g.cs.CallTool(ctx, params)
	out := callOutcome{StartedAt: start.UnixMilli(), FinishedAt: time.Now().UnixMilli(), ElapsedMs: time.Since(start).Milliseconds()}
	g.mu.Lock()
	out.Progress = g.progress[tok]
	g.mu.Unlock()
	out.Progress = sentOrder(g.transport, out.Progress)
	if err != nil {
		out.Error = &callError{Name: "GoSDKError", Message: err.Error()}
		return out, err
	}
	out.OK = true
	out.Result = &toolResult{IsError: res.IsError}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	out.Result.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return out, err
		}
		if err := json.Unmarshal(b, &out.Result.StructuredContent); err != nil {
			return out, err
		}
		g.validate(tool, b)
	}
	return out, nil
}

// validate checks structured content against the output schema the server declared for
// tool.
func (g *goClient) validate(tool string, content []byte) {
	t := g.t
	t.Helper()
	tools, err := g.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tl := range tools.Tools {
		if tl.Name != tool {
			continue
		}
		if tl.OutputSchema == nil {
			t.Fatalf("%s declares no output schema but returned structured content", tool)
		}
		schemaJSON, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schemaJSON)))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(tool+".json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(tool + ".json")
		if err != nil {
			t.Fatalf("%s output schema: %v", tool, err)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(content)))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s structured content does not match its output schema: %v\n%s", tool, err, content)
		}
		return
	}
	t.Fatalf("tools/list has no %s", tool)
}

// TestGoSDK: in one session per transport and protocol version, the Go SDK
//   - lists the three tools, each consultation tool with an output schema;
//   - makes a consultation with timeout 1, on_timeout "continue" and a progress token:
//     at 1 s "still running" with an id;
//   - collects the answer with consultation_result, with a progress token: the model gives
//     it once that call has had three heartbeats (--heartbeat 200ms);
//   - cancels a call (its context ends) while the model thinks: consult closes the upstream
//     request at once;
//   - then makes a dry run in the same session.
//
// Every structured result is checked against the output schema from tools/list.
func TestGoSDK(t *testing.T) {
	eachGoClient(t, func(t *testing.T, transport, version string) {
		e := newEnv(t, transport, "--heartbeat", "200ms")
		release := e.heldAnswer()
		e.fake.Push(fake.Script{Steps: []fake.Step{fake.Think("Hmm."), fake.Hang()}})
		g := e.connect(version)
		g.onProgress = func(tok string, n int) {
			if tok == token("consultation_result", 2) && n >= 3 {
				release()
			}
		}
		tools, err := g.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
			if tl.Name != "consultation_cancel" && tl.OutputSchema == nil {
				t.Errorf("%s has no output schema", tl.Name)
			}
		}
		if got, want := strings.Join(names, ","), "consultation,consultation_cancel,consultation_result"; got != want {
			t.Errorf("tools = %s, want %s", got, want)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		first, err := g.call(ctx, "consultation", continueArgs(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		id := checkRunning(t, first, 1)
		// The heartbeat sent as the call started; how many more came before its timeout
		// depends on the machine's load (and none in the last 500 ms before a deadline).
		g.awaitProgress(token("consultation", 1))
		g.mu.Lock()
		first.Progress = sentOrder(transport, g.progress[token("consultation", 1)])
		g.mu.Unlock()
		checkNotes(t, first.Progress, 1, "the one sent as the call started")
		second, err := g.call(ctx, "consultation_result", map[string]any{"id": id, "wait": 60})
		if err != nil {
			t.Fatal(err)
		}
		checkAnswer(t, second, id)
		checkNotes(t, second.Progress, 3, "the answer waited for three")

		callCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := g.call(callCtx, "consultation", callArgs(t, map[string]any{"timeout": 600}))
			done <- err
		}()
		req := e.awaitChat(2)
		time.Sleep(200 * time.Millisecond) // the model is under way
		cancelled := time.Now()
		stop()
		if err := <-done; err == nil {
			t.Fatal("the cancelled call returned a result")
		}
		// The session stays open, the model never answers and the call's timeout is ten
		// minutes: only the cancellation can end the request (30 s: a hang guard).
		end := ended(t, req, 30*time.Second)
		t.Logf("upstream request ended %s after the cancel (ClientGone=%v)", end.Sub(cancelled).Round(time.Millisecond), req.ClientGone())
		if !req.ClientGone() {
			t.Errorf("upstream request completed instead of being closed by consult")
		}
		out, err := g.call(ctx, "consultation", callArgs(t, map[string]any{"dry_run": true}))
		if err != nil {
			t.Fatalf("the session did not survive the cancel: %v", err)
		}
		if got := accepted(t, out, "consultation").StructuredContent["kind"]; got != "dry_run" {
			t.Errorf("structuredContent.kind = %v after the cancel, want dry_run", got)
		}
	})
}
