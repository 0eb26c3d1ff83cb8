package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

// The MCP tasks extension (io.modelcontextprotocol/tasks, protocol 2026-07-28), held on the
// wire: these tests speak raw JSON-RPC to the server through the shim, as Claude Code does.

// taskServer is a server with a background engine over dir, against upstream; its workers
// run in this process.
func taskServer(t *testing.T, upstream *fake.Server, dir string) (*server.MCPServer, *background.Engine) {
	t.Helper()
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-123", BaseURL: upstream.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	svc := &consultation.Service{Counter: tokens.NewCounter(), Model: p, DefaultModel: "google/gemini-2.5-pro", Heartbeat: 100 * time.Millisecond}
	eng := background.New(background.Config{Service: svc, Store: results.Open(dir, 0, 0, 0), Heartbeat: 100 * time.Millisecond})
	t.Cleanup(eng.Wait)
	return New(Config{Service: svc, Background: eng}), eng
}

// taskTree is a directory with one Go file.
func taskTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rawConn speaks JSON-RPC lines to a server: over stdio (ServeStdio on pipes) or HTTP.
type rawConn struct {
	t    *testing.T
	send func(msg []byte) // one message
	mu   sync.Mutex
	got  map[string]chan json.RawMessage // responses by id
	next atomic.Int64
}

// rawStdio serves s over stdio and returns a raw connection to it.
func rawStdio(t *testing.T, s *server.MCPServer) *rawConn {
	t.Helper()
	write, lines := stdioPipes(t, s)
	c := &rawConn{t: t, got: map[string]chan json.RawMessage{}}
	var wmu sync.Mutex
	c.send = func(msg []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		write(msg)
	}
	go func() {
		for lines.Scan() {
			c.deliver(append([]byte(nil), lines.Bytes()...))
		}
	}()
	return c
}

// stdioPipes serves s with ServeStdio over pipes for the test: write sends one message (a
// line), lines reads what the server writes, in order. Everything ends with the test.
func stdioPipes(t *testing.T, s *server.MCPServer) (write func([]byte), lines *bufio.Scanner) {
	t.Helper()
	stdioSession.Lock()
	t.Cleanup(stdioSession.Unlock)
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeStdio(ctx, s, serverIn, serverOut, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		clientIn.Close() // a write of the server's then fails rather than waits for a reader
		<-served
		serverOut.Close()
	})
	lines = bufio.NewScanner(clientIn)
	lines.Buffer(nil, 64<<20)
	return func(msg []byte) {
		if _, err := clientOut.Write(append(msg, '\n')); err != nil {
			t.Errorf("write: %v", err)
		}
	}, lines
}

// rawHTTP returns a raw connection to handler h (a shimmed streamable HTTP server) whose
// requests carry the bearer token owner (the test's guard makes it the owner).
func rawHTTP(t *testing.T, url, owner string) *rawConn {
	t.Helper()
	c := &rawConn{t: t, got: map[string]chan json.RawMessage{}}
	c.send = func(msg []byte) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("X-Test-Owner", owner)
		var m message
		_ = json.Unmarshal(msg, &m)
		req.Header.Set("Mcp-Method", m.Method)
		var p struct {
			TaskID string `json:"taskId"`
			Name   string `json:"name"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if name := p.TaskID + p.Name; name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("post: %v", err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			for _, line := range bytes.Split(body, []byte("\n")) {
				line = bytes.TrimSpace(line)
				if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
					line = bytes.TrimSpace(d)
				}
				if bytes.HasPrefix(line, []byte("{")) {
					c.deliver(line)
				}
			}
		}()
	}
	return c
}

// testOwner is a guard that makes the X-Test-Owner header the request's owner, as the
// server's bearer-token guard does with the token's digest.
func testOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(background.WithOwner(r.Context(), r.Header.Get("X-Test-Owner"))))
	})
}

func (c *rawConn) deliver(line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method != "" || m.ID == nil {
		return // a notification
	}
	c.waiter(canonicalID(m.ID)) <- line
}

func (c *rawConn) waiter(id string) chan json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.got[id]
	if !ok {
		ch = make(chan json.RawMessage, 1)
		c.got[id] = ch
	}
	return ch
}

// meta is a 2026-07-28 request's _meta; tasks declares the tasks extension.
func meta(tasks bool) map[string]any {
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// request sends method with params (and _meta) and returns its response, decoded.
func (c *rawConn) request(method string, params map[string]any, tasks bool) map[string]any {
	c.t.Helper()
	id := c.next.Add(1)
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = meta(tasks)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.send(msg)
	select {
	case line := <-c.waiter(fmt.Sprint(id)):
		var resp map[string]any
		if err := json.Unmarshal(line, &resp); err != nil {
			c.t.Fatalf("%s: response %s: %v", method, line, err)
		}
		return resp
	case <-time.After(20 * time.Second):
		c.t.Fatalf("%s: no response", method)
	}
	return nil
}

// result is resp's result; the test fails on an error.
func result(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	r, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", resp)
	}
	return r
}

// rpcErrorOf is resp's error code and message; the test fails on a result.
func rpcErrorOf(t *testing.T, resp map[string]any) (float64, string) {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an error: %v", resp)
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return code, msg
}

func consultArgs(tree string, extra map[string]any) map[string]any {
	args := map[string]any{"path": tree, "pattern": "**/*.go", "query": "What does main do?", "timeout": 30}
	for k, v := range extra {
		args[k] = v
	}
	return map[string]any{"name": "consultation", "arguments": args}
}

// pollTask polls tasks/get until its status is no longer working.
func pollTask(t *testing.T, c *rawConn, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := result(t, c.request("tasks/get", map[string]any{"taskId": id}, true))
		if r["status"] != "working" {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s still working", id)
	return nil
}

func TestTasksDeclaredOnDiscoverOnly(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	s, _ := taskServer(t, upstream, t.TempDir())
	c := rawStdio(t, s)
	disc := result(t, c.request("server/discover", nil, true))
	caps, _ := disc["capabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	if _, ok := ext["io.modelcontextprotocol/tasks"]; !ok {
		t.Errorf("server/discover capabilities = %v, want extensions with io.modelcontextprotocol/tasks", caps)
	}
	if _, ok := caps["tasks"]; ok {
		t.Errorf("server/discover declares mcp-go's 2025-11-25 tasks: %v", caps)
	}
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
	c.send(init)
	var resp map[string]any
	_ = json.Unmarshal(<-c.waiter(`"init"`), &resp)
	caps, _ = result(t, resp)["capabilities"].(map[string]any)
	if _, ok := caps["extensions"]; ok {
		t.Errorf("initialize (2025-11-25) declares extensions: %v", caps)
	}
	if _, ok := caps["tasks"]; ok {
		t.Errorf("initialize declares mcp-go's 2025-11-25 tasks: %v", caps)
	}
}

func TestTaskCreatedPolledCompleted(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	release := make(chan struct{})
	upstream.SetFunc(func(*fake.Request) fake.Script {
		<-release
		return fake.Answer("main does nothing.")
	})
	s, _ := taskServer(t, upstream, t.TempDir())
	c := rawStdio(t, s)
	tree := taskTree(t)

	created := result(t, c.request("tools/call", consultArgs(tree, nil), true))
	if created["resultType"] != "task" || created["status"] != "working" {
		t.Fatalf("tools/call with the extension = %v, want a CreateTaskResult (resultType task, status working)", created)
	}
	id, _ := created["taskId"].(string)
	if _, err := results.ParseID(id); err != nil {
		t.Errorf("taskId %q is not a consultation id: %v", id, err)
	}
	for _, f := range []string{"createdAt", "lastUpdatedAt", "statusMessage"} {
		if s, _ := created[f].(string); s == "" {
			t.Errorf("CreateTaskResult has no %s: %v", f, created)
		}
	}
	if ttl, _ := created["ttlMs"].(float64); ttl < 30_000 {
		t.Errorf("ttlMs = %v, want at least the 30 s timeout", created["ttlMs"])
	}
	if poll, _ := created["pollIntervalMs"].(float64); poll < 250 || poll > 30_000 {
		t.Errorf("pollIntervalMs = %v", created["pollIntervalMs"])
	}
	if _, ok := created["content"]; ok {
		t.Errorf("CreateTaskResult carries a tool result's content: %v", created)
	}
	m, _ := created["_meta"].(map[string]any)
	at, _ := m["com.anthropic/agent-task"].(map[string]any)
	words, _ := at["modelImmediateResponse"].(string)
	for _, want := range []string{"google/gemini-2.5-pro", id, "1 file", "prompt tokens", "arrives by itself", "consultation_result"} {
		if !strings.Contains(words, want) {
			t.Errorf("modelImmediateResponse %q does not say %q", words, want)
		}
	}

	working := result(t, c.request("tasks/get", map[string]any{"taskId": id}, true))
	if working["resultType"] != "complete" || working["status"] != "working" || working["taskId"] != id {
		t.Errorf("tasks/get while it works = %v", working)
	}
	if msg, _ := working["statusMessage"].(string); msg == "" {
		t.Errorf("tasks/get while it works has no statusMessage: %v", working)
	}
	close(release)
	done := pollTask(t, c, id)
	if done["status"] != "completed" {
		t.Fatalf("final task = %v, want completed", done)
	}
	res, _ := done["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc["answer"] != "main does nothing." || res["isError"] == true {
		t.Errorf("completed task's result = %v, want the answer in structuredContent", res)
	}
	if content, _ := res["content"].([]any); len(content) == 0 {
		t.Errorf("completed task's result has no text: %v", res)
	}
}

func TestTaskOnlyWhenAskedAndWhenItReachesAModel(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	upstream.SetDefault(fake.Answer("an answer"))
	s, _ := taskServer(t, upstream, t.TempDir())
	c := rawStdio(t, s)
	tree := taskTree(t)
	for _, tc := range []struct {
		name  string
		args  map[string]any
		tasks bool
		isErr bool
	}{
		{"without the extension", nil, false, false},
		{"an argument refused", map[string]any{"timeout": 0}, true, true},
		{"a dry run", map[string]any{"dry_run": true}, true, false},
		{"no file matched", map[string]any{"pattern": "**/*.rs"}, true, true},
		{"over max_cost_usd", map[string]any{"max_cost_usd": 0.0000001}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := result(t, c.request("tools/call", consultArgs(tree, tc.args), tc.tasks))
			if r["resultType"] == "task" || r["taskId"] != nil {
				t.Fatalf("got a task: %v", r)
			}
			if _, ok := r["content"]; !ok {
				t.Fatalf("not a tool result: %v", r)
			}
			if isErr := r["isError"] == true; isErr != tc.isErr {
				t.Errorf("isError = %v, want %v: %v", isErr, tc.isErr, r)
			}
		})
	}
}

func TestTaskCancelledTwice(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	upstream.SetDefault(fake.Script{Steps: []fake.Step{fake.Hang()}})
	s, _ := taskServer(t, upstream, t.TempDir())
	c := rawStdio(t, s)
	created := result(t, c.request("tools/call", consultArgs(taskTree(t), nil), true))
	id, _ := created["taskId"].(string)
	req, err := upstream.Await(1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // Claude Code's TaskStop sends tasks/cancel twice
		r := result(t, c.request("tasks/cancel", map[string]any{"taskId": id}, true))
		if r["resultType"] != "complete" || len(r) != 1 {
			t.Errorf("tasks/cancel %d = %v, want {resultType: complete}", i+1, r)
		}
	}
	select {
	case <-req.Ended():
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not closed after tasks/cancel")
	}
	if final := pollTask(t, c, id); final["status"] != "cancelled" {
		t.Errorf("task after tasks/cancel = %v, want cancelled", final)
	}
	if r := result(t, c.request("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}, true)); r["resultType"] != "complete" {
		t.Errorf("tasks/update = %v, want an acknowledgement", r)
	}
}

func TestTaskTimeoutCompletesWithError(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	upstream.SetDefault(fake.Script{Steps: []fake.Step{fake.Hang()}})
	s, _ := taskServer(t, upstream, t.TempDir())
	c := rawStdio(t, s)
	created := result(t, c.request("tools/call", consultArgs(taskTree(t), map[string]any{"timeout": 1}), true))
	res := created
	// A machine too busy to reach the model within the second answers the call itself, before
	// any task: with the same timeout error.
	if id, ok := created["taskId"].(string); ok {
		final := pollTask(t, c, id)
		res, _ = final["result"].(map[string]any)
		if final["status"] != "completed" {
			t.Fatalf("task past its timeout = %v, want completed with isError", final)
		}
	} else {
		t.Logf("no task: the timeout came before the model was reached: %v", created)
	}
	if res["isError"] != true {
		t.Fatalf("past its timeout: %v, want isError", res)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	if e["class"] != "timeout" {
		t.Errorf("error = %v, want class timeout", e)
	}
}

func TestTaskIDsRefused(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	s, _ := taskServer(t, upstream, t.TempDir())
	c := rawStdio(t, s)
	unknown := results.NewID(time.Now())
	for _, tc := range []struct {
		method, id string
		tasks      bool
		code       float64
	}{
		{"tasks/get", unknown, true, -32602},
		{"tasks/cancel", unknown, true, -32602},
		{"tasks/update", unknown, true, -32602},
		{"tasks/get", "../../etc/passwd", true, -32602},
		{"tasks/get", unknown, false, -32021},
	} {
		code, msg := rpcErrorOf(t, c.request(tc.method, map[string]any{"taskId": tc.id}, tc.tasks))
		if code != tc.code {
			t.Errorf("%s %q (extension declared: %v) = error %v %q, want %v", tc.method, tc.id, tc.tasks, code, msg, tc.code)
		}
		if tc.code == -32602 && !strings.Contains(msg, tc.id) {
			t.Errorf("%s %q: message %q does not name the id", tc.method, tc.id, msg)
		}
	}
}

func TestTaskOutlivesItsServer(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	release := make(chan struct{})
	upstream.SetFunc(func(*fake.Request) fake.Script {
		<-release
		return fake.Answer("answered after the restart")
	})
	dir := t.TempDir()
	first, _ := taskServer(t, upstream, dir)
	var id string
	func() {
		c := rawStdio(t, first)
		created := result(t, c.request("tools/call", consultArgs(taskTree(t), nil), true))
		id, _ = created["taskId"].(string)
	}()
	// Another server process sharing the results directory, as after a restart.
	second, _ := taskServer(t, upstream, dir)
	srv := httptest.NewServer(testOwner(HTTPShim(server.NewStreamableHTTPServer(second, server.WithHTTPContextFunc(ownerContext)))))
	t.Cleanup(srv.Close)
	c := rawHTTP(t, srv.URL, "")
	if r := result(t, c.request("tasks/get", map[string]any{"taskId": id}, true)); r["status"] != "working" {
		t.Errorf("tasks/get on another server = %v, want working", r)
	}
	close(release)
	final := pollTask(t, c, id)
	res, _ := final["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if final["status"] != "completed" || sc["answer"] != "answered after the restart" {
		t.Errorf("task on another server = %v", final)
	}
}

// ownerContext gives handlers the request's owner, as the server's HTTP context function does.
func ownerContext(ctx context.Context, r *http.Request) context.Context {
	return background.WithOwner(ctx, background.OwnerFrom(r.Context()))
}

func TestTaskIsItsOwnersOverHTTP(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	upstream.SetDefault(fake.Script{Steps: []fake.Step{fake.Hang()}})
	s, _ := taskServer(t, upstream, t.TempDir())
	srv := httptest.NewServer(testOwner(HTTPShim(server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(ownerContext)))))
	t.Cleanup(srv.Close)
	alice, mallory := rawHTTP(t, srv.URL, "alice"), rawHTTP(t, srv.URL, "mallory")
	created := result(t, alice.request("tools/call", consultArgs(taskTree(t), nil), true))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call over HTTP = %v, want a task", created)
	}
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		if code, msg := rpcErrorOf(t, mallory.request(method, map[string]any{"taskId": id}, true)); code != -32602 {
			t.Errorf("%s of another owner's task = %v %q, want -32602", method, code, msg)
		}
	}
	if r := result(t, alice.request("tasks/get", map[string]any{"taskId": id}, true)); r["status"] != "working" {
		t.Errorf("the owner's task after another owner's cancel = %v, want working", r)
	}
	result(t, alice.request("tasks/cancel", map[string]any{"taskId": id}, true))
}

// TestNextResultNamesTheOrphan: a consultation left running by a client that stopped waiting
// is named in the structured result of the owner's next call, once.
func TestNextResultNamesTheOrphan(t *testing.T) {
	t.Parallel()
	c, upstream, eng := backgroundClient(t, nil)
	upstream.SetDefault(fake.Script{Steps: []fake.Step{fake.Sleep(time.Second), fake.Text("kept")}})
	tree := taskTree(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		if _, err := upstream.Await(1, 5*time.Second); err == nil {
			cancel(consultation.ErrClientCancelled)
		}
	}()
	left := eng.Start(ctx, consultation.Request{Path: tree, Pattern: "**/*.go", Query: "q", Timeout: 10 * time.Second, OnTimeout: consultation.OnTimeoutContinue}, nil)
	id := left.Summary.ID
	warnings := func() []any {
		res := call(t, c, map[string]any{"path": tree, "pattern": "**/*.go", "query": "q", "dry_run": true})
		sc, _ := res.StructuredContent.(map[string]any)
		w, _ := sc["warnings"].([]any)
		return w
	}
	w := warnings()
	if len(w) != 1 || !strings.Contains(fmt.Sprint(w[0]), id) {
		t.Fatalf("next result's warnings = %v, want one naming %s", w, id)
	}
	if w := warnings(); len(w) != 0 {
		t.Errorf("named again: %v", w)
	}
	eng.Collect(context.Background(), id, 10*time.Second, nil)
}

// TestNoProgressAfterTheResult: over stdio, every progress notification of a call goes out
// before its result, with no fixed wait: the result waits for the call's own notifications
// to be written. A heartbeat of a millisecond puts one just before the result.
func TestNoProgressAfterTheResult(t *testing.T) {
	t.Parallel()
	upstream := fake.New(t, fake.OpenRouter)
	upstream.SetDefault(fake.Script{Steps: append([]fake.Step{fake.Sleep(30 * time.Millisecond)}, fake.Chunks("an answer in pieces", 2)...)})
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-123", BaseURL: upstream.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	svc := &consultation.Service{Counter: tokens.NewCounter(), Model: p, DefaultModel: "google/gemini-2.5-pro", Heartbeat: time.Millisecond}
	s := New(Config{Service: svc})
	write, lines := stdioPipes(t, s)
	write([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if !lines.Scan() {
		t.Fatal("no answer to initialize")
	}
	tree := taskTree(t)
	for i := range 10 {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": map[string]any{
			"name": "consultation", "arguments": map[string]any{"path": tree, "pattern": "**/*.go", "query": "q", "timeout": 20},
			"_meta": map[string]any{"progressToken": fmt.Sprintf("tok-%d", i)}}})
		write(msg)
		progress := 0
		for lines.Scan() {
			var m message
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			if m.Method == "notifications/progress" {
				if tok := paramsOf(m.Params).token; tok != fmt.Sprintf(`"tok-%d"`, i) {
					t.Fatalf("call %d: a progress notification of %s arrived after its result", i, tok)
				}
				progress++
				continue
			}
			if m.isResponse() {
				break
			}
		}
		if progress == 0 {
			t.Fatalf("call %d: no progress before its result", i)
		}
	}
}

// TestTaskStartedWords: the model's first words of a task name the model, the files, bytes,
// tokens and price, the task id, until when it may run, and that the result comes by itself.
func TestTaskStartedWords(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	task := &background.Task{ID: "20261127-100000-aaaaaaaaaaaaaaaaaaaaaaaaaa", Created: created, Deadline: created.Add(90 * time.Second),
		Launch: &consultation.State{Model: "openai/gpt-5.4", Files: 12, Bytes: 48_000, PromptTokens: 12_345, Estimate: "expected $0.04, at most $0.31 (prices: OpenRouter's model list)"}}
	words := TaskStartedWords(task)
	for _, want := range []string{"openai/gpt-5.4", "12 files", "12,345 prompt tokens", "expected $0.04, at most $0.31", task.ID, "10:01:30 UTC", "90 seconds", "arrives by itself", "TaskStop"} {
		if !strings.Contains(words, want) {
			t.Errorf("%q does not say %q", words, want)
		}
	}
}
