package mcpserver

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
	"github.com/consultmcp/consult/tooldefs"
)

// backgroundClient starts an in-process client against a server with a background engine
// whose workers run in this process, against a fake upstream on loopback.
func backgroundClient(t *testing.T, log *progressLog) (*client.Client, *fake.Server, *background.Engine) {
	t.Helper()
	srv := fake.New(t, fake.OpenRouter)
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-123", BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	svc := &consultation.Service{Counter: tokens.NewCounter(), Model: p, DefaultModel: "google/gemini-2.5-pro", Heartbeat: 100 * time.Millisecond}
	eng := background.New(background.Config{Service: svc, Store: results.Open(t.TempDir(), 0, 0, 0), Heartbeat: 100 * time.Millisecond})
	t.Cleanup(eng.Wait)
	var on func(mcp.JSONRPCNotification)
	if log != nil {
		on = log.add
	}
	c, _ := inProcess(t, New(Config{Service: svc, Background: eng}), clientOpts{onNotification: on})
	return c, srv, eng
}

// stateOf is the listed state of consultation id.
func stateOf(t *testing.T, eng *background.Engine, id string) string {
	t.Helper()
	rec, err := eng.Store().Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return eng.State(rec)
}

func callWith(ctx context.Context, c *client.Client, tool string, args map[string]any, token any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if token != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	return c.CallTool(ctx, req)
}

func TestListToolsWithBackgroundJobs(t *testing.T) {
	t.Parallel()
	c, _, _ := backgroundClient(t, nil)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "consultation,consultation_cancel,consultation_result" {
		t.Errorf("tools = %s", got)
	}
}

// TestHybridThroughClient runs the hybrid wait through mcp-go's client: the call returns
// "still running" at its timeout, with the id in every heartbeat; consultation_result waits
// with its own heartbeats (the upstream holds the answer until three have come) and returns
// the answer; both results match their output schemas.
func TestHybridThroughClient(t *testing.T) {
	t.Parallel()
	log := &progressLog{}
	c, srv, _ := backgroundClient(t, log)
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before the fake closes: a held request would keep it open
	srv.SetFunc(func(*fake.Request) fake.Script {
		<-held
		return fake.Script{Steps: []fake.Step{fake.Think("hmm "), fake.Text("the answer")}}
	})
	ctx := context.Background()
	res, err := callWith(ctx, c, "consultation", map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 1, "on_timeout": "continue"}, "tok-c")
	if err != nil || res.IsError {
		t.Fatalf("consultation: %v %s", err, text(res))
	}
	m := checkStructured(t, schemaOf(t, tooldefs.Consultation(tooldefs.Server{})), res)
	id, _ := m["id"].(string)
	if m["kind"] != "running" || id == "" {
		t.Fatalf("structured = %v", m)
	}
	// The heartbeat sent as the call started names the id; how many more came before the
	// timeout depends on the machine's load, and each of them names it too. (Notifications
	// travel apart from results: wait for the first, 30 s being a hang guard.)
	var first, withID int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		log.mu.Lock()
		first, withID = 0, 0
		for i, msg := range log.msgs {
			if log.tokens[i] == "tok-c" {
				first++
				if strings.HasSuffix(msg, ", id "+id) {
					withID++
				}
			}
		}
		log.mu.Unlock()
		if first > 0 || time.Now().After(deadline) {
			break
		}
	}
	if first == 0 || withID != first {
		t.Errorf("%d of %d heartbeats of the call name the id %s", withID, first, id)
	}

	go func() { // release the answer once consultation_result has sent three heartbeats
		defer release()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			log.mu.Lock()
			n := 0
			for _, tok := range log.tokens {
				if tok == "tok-r" {
					n++
				}
			}
			log.mu.Unlock()
			if n >= 3 {
				return
			}
		}
	}()
	res, err = callWith(ctx, c, "consultation_result", map[string]any{"id": id, "wait": 60}, "tok-r")
	if err != nil || res.IsError {
		t.Fatalf("consultation_result: %v %s", err, text(res))
	}
	m = checkStructured(t, schemaOf(t, tooldefs.Result()), res)
	if m["kind"] != "answer" || m["id"] != id || !strings.HasPrefix(text(res), "the answer\n\n---\nmodel ") {
		t.Errorf("collected %v:\n%s", m, text(res))
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	waiting := 0
	for _, tok := range log.tokens {
		if tok == "tok-r" {
			waiting++
		}
	}
	if waiting < 3 {
		t.Errorf("%d heartbeats while consultation_result waited at 100 ms, want at least 3", waiting)
	}
}

// TestClientCutCallIsCollected: the client gives up on the call before the server's timeout
// (it cancels the request once the upstream has it); the consultation was already sent, so
// it goes on, and the client finds it by listing and collects the answer, which the
// upstream holds until then.
func TestClientCutCallIsCollected(t *testing.T) {
	t.Parallel()
	c, srv, _ := backgroundClient(t, nil)
	arrived, held := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before the fake closes: a held request would keep it open
	srv.SetFunc(func(*fake.Request) fake.Script {
		close(arrived)
		<-held
		return fake.Answer("paid for and kept")
	})
	cut, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-arrived
		cancel()
	}()
	res, err := callWith(cut, c, "consultation", map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "a question to find again", "timeout": 10, "on_timeout": "continue"}, nil)
	// In process, the request's context is the caller's, so the server's reply to the
	// cancellation may still reach it; over a wire the client has stopped listening.
	if err == nil && !strings.Contains(text(res), "the client stopped waiting") {
		t.Fatalf("the call should have been cut by the client's deadline; got %s", text(res))
	}
	ctx := context.Background()
	list, err := callWith(ctx, c, "consultation_result", map[string]any{}, nil)
	if err != nil || list.IsError {
		t.Fatalf("listing: %v %s", err, text(list))
	}
	m := checkStructured(t, schemaOf(t, tooldefs.Result()), list)
	entries, _ := m["consultations"].([]any)
	if len(entries) != 1 {
		t.Fatalf("listing = %v", m)
	}
	entry, _ := entries[0].(map[string]any)
	id, _ := entry["id"].(string)
	if entry["status"] != "running" || entry["query"] != "a question to find again" || !regexp.MustCompile(`^\d{8}-\d{6}-[a-z2-7]{26}$`).MatchString(id) {
		t.Fatalf("entry = %v", entry)
	}
	release()
	res, err = callWith(ctx, c, "consultation_result", map[string]any{"id": id, "wait": 60}, nil)
	if err != nil || res.IsError || !strings.HasPrefix(text(res), "paid for and kept") {
		t.Errorf("collecting the cut call: %v %s", err, text(res))
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d completion requests, want 1", n)
	}
}

// TestCancelThroughClient stops a background consultation with consultation_cancel.
func TestCancelThroughClient(t *testing.T) {
	t.Parallel()
	c, srv, eng := backgroundClient(t, nil)
	srv.Push(fake.Script{Steps: []fake.Step{fake.Text("begun"), fake.Hang()}})
	ctx := context.Background()
	res, err := callWith(ctx, c, "consultation", map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 1, "on_timeout": "continue"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("consultation: %v %s", err, text(res))
	}
	id := regexp.MustCompile(`id (\d{8}-\d{6}-[a-z2-7]{26})`).FindStringSubmatch(text(res))
	if id == nil {
		t.Fatalf("no id in %s", text(res))
	}
	// Cancel once the worker has the first part (its record says so), however busy the machine.
	for rec, _ := eng.Store().Load(id[1]); rec.Answer != "begun"; rec, _ = eng.Store().Load(id[1]) {
		time.Sleep(20 * time.Millisecond)
	}
	res, err = callWith(ctx, c, "consultation_cancel", map[string]any{"id": id[1]}, nil)
	if err != nil || res.IsError || !strings.Contains(text(res), "Consultation "+id[1]+" is stopped") || !strings.Contains(text(res), "begun") {
		t.Fatalf("cancel: %v %s", err, text(res))
	}
	if got := stateOf(t, eng, id[1]); got != "cancelled" {
		t.Errorf("state %q after the cancel, want cancelled", got)
	}
}

// TestOwnershipThroughClient: calls made under two owners (over HTTP, two bearer tokens)
// through the MCP client: the second owner neither lists, collects nor cancels the first's
// consultation, and gets the answer an unknown id gets; the first collects it.
func TestOwnershipThroughClient(t *testing.T) {
	t.Parallel()
	c, srv, eng := backgroundClient(t, nil)
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before the fake closes: a held request would keep it open
	// The answer is held until the other owner has tried.
	srv.SetFunc(func(*fake.Request) fake.Script {
		<-held
		return fake.Answer("for alice only")
	})
	alice := background.WithOwner(context.Background(), "alice")
	bob := background.WithOwner(context.Background(), "bob")
	res, err := callWith(alice, c, "consultation", map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 1, "on_timeout": "continue"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("consultation: %v %s", err, text(res))
	}
	id, _ := checkStructured(t, schemaOf(t, tooldefs.Consultation(tooldefs.Server{})), res)["id"].(string)
	unknown := results.NewID(time.Now())
	for _, tool := range []string{"consultation_result", "consultation_cancel"} {
		got, err := callWith(bob, c, tool, map[string]any{"id": id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := callWith(bob, c, tool, map[string]any{"id": unknown}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ReplaceAll(text(got), id, "ID") != strings.ReplaceAll(text(want), unknown, "ID") || got.IsError != want.IsError {
			t.Errorf("%s by another owner: got %q, want as for an unknown id %q", tool, text(got), text(want))
		}
	}
	list, err := callWith(bob, c, "consultation_result", map[string]any{}, nil)
	if err != nil || strings.Contains(text(list), id) {
		t.Errorf("another owner's listing: %v %s", err, text(list))
	}
	if got := stateOf(t, eng, id); got != "running" {
		t.Errorf("state %q after another owner's cancel, want running", got)
	}
	release()
	res, err = callWith(alice, c, "consultation_result", map[string]any{"id": id, "wait": 5}, nil)
	if err != nil || res.IsError || !strings.HasPrefix(text(res), "for alice only") {
		t.Errorf("the owner collecting: %v %s", err, text(res))
	}
}

// TestLongAnswerInPagesThroughClient: a 120,000-byte answer reaches the client whole over
// pages: the call's result holds the first page (under the page size, valid against the
// output schema) with page and next; consultation_result with next's arguments returns each
// following page; together they are the answer. The answer counts as collected only once
// its last page was read, a short one as soon as it is returned.
func TestLongAnswerInPagesThroughClient(t *testing.T) {
	t.Parallel()
	c, srv, eng := backgroundClient(t, nil)
	var want strings.Builder
	for i := 0; want.Len() < 120_000; i++ {
		fmt.Fprintf(&want, "%d. a line of the long answer, with an é in it\n", i)
	}
	srv.Push(fake.Script{Steps: fake.Chunks(want.String(), 4096)})
	ctx := context.Background()
	res, err := callWith(ctx, c, "consultation", map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 20}, nil)
	if err != nil || res.IsError {
		t.Fatalf("consultation: %v %s", err, text(res))
	}
	m := checkStructured(t, schemaOf(t, tooldefs.Consultation(tooldefs.Server{})), res)
	got, _ := m["answer"].(string)
	id, _ := m["id"].(string)
	if eng.Store().Collected(id) {
		t.Error("the answer reads as collected after its first page")
	}
	for pages := 1; ; pages++ {
		if len(m["answer"].(string)) > background.DefaultPageBytes {
			t.Fatalf("page %d holds %d bytes", pages, len(m["answer"].(string)))
		}
		next, _ := m["next"].(map[string]any)
		if next == nil {
			break
		}
		if pages > 8 {
			t.Fatal("too many pages")
		}
		args, _ := next["arguments"].(map[string]any)
		res, err = callWith(ctx, c, next["tool"].(string), args, nil)
		if err != nil || res.IsError {
			t.Fatalf("page %d: %v %s", pages+1, err, text(res))
		}
		m = checkStructured(t, schemaOf(t, tooldefs.Result()), res)
		part, _ := m["answer"].(string)
		got += part
	}
	if got != want.String() {
		t.Errorf("the pages make %d bytes, want the %d-byte answer", len(got), want.Len())
	}
	if !eng.Store().Collected(id) {
		t.Error("the answer does not read as collected after its last page")
	}
	srv.Push(fake.Answer("short"))
	res, err = callWith(ctx, c, "consultation", map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 20}, nil)
	if err != nil || res.IsError {
		t.Fatalf("consultation: %v %s", err, text(res))
	}
	short := checkStructured(t, schemaOf(t, tooldefs.Consultation(tooldefs.Server{})), res)
	if sid, _ := short["id"].(string); sid == "" || !eng.Store().Collected(sid) {
		t.Errorf("a short answer returned whole (id %q) does not read as collected", sid)
	}
}
