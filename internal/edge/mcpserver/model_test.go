package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
	"github.com/consultmcp/consult/tooldefs"
)

// modelService returns a service whose provider is a real OpenRouter client talking to a
// fake upstream in memory: call it in a synctest bubble.
func modelService(t *testing.T) (*fake.Server, *consultation.Service) {
	t.Helper()
	srv := fake.NewInMemory(t, fake.OpenRouter)
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-123", BaseURL: srv.BaseURL(), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return srv, &consultation.Service{Counter: tokens.NewCounter(), Model: p, DefaultModel: "google/gemini-2.5-pro", Heartbeat: 100 * time.Millisecond}
}

// modelClient starts an in-process client against a modelService.
func modelClient(t *testing.T) (*client.Client, *fake.Server) {
	t.Helper()
	srv, svc := modelService(t)
	return startClient(t, svc, nil), srv
}

func goTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"main.go": "package main\n\nfunc main() {}\n", "util/u.go": "package util\n"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// outputSchema compiles the consultation tool's declared output schema.
func outputSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return schemaOf(t, tooldefs.Consultation(tooldefs.Server{}))
}

// schemaOf compiles a tool's declared output schema.
func schemaOf(t *testing.T, tool mcp.Tool) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(tool.RawOutputSchema)))
	if err != nil {
		t.Fatalf("output schema of %s is not JSON: %v (%s)", tool.Name, err, tool.RawOutputSchema)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("output.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// checkStructured asserts a result's structured content matches the declared output schema.
func checkStructured(t *testing.T, sch *jsonschema.Schema, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("structured content does not match the output schema: %v\n%s", err, b)
	}
	m, _ := inst.(map[string]any)
	return m
}

func TestAnswerThroughClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, srv := modelClient(t)
		srv.Push(fake.Script{Steps: fake.Chunks("It does nothing yet.", 5), Usage: &fake.Usage{Input: 50, Output: 6, Cost: 0.001}})
		sch := outputSchema(t)
		res := call(t, c, map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "What does main do?"})
		if res.IsError {
			t.Fatalf("error: %s", text(res))
		}
		if got := text(res); !strings.HasPrefix(got, "It does nothing yet.") || !strings.Contains(got, "$0.0010") {
			t.Errorf("answer + footer expected:\n%s", got)
		}
		m := checkStructured(t, sch, res)
		if m["kind"] != "answer" || m["answer"] != "It does nothing yet." {
			t.Errorf("structured = %v", m)
		}
		dry := call(t, c, map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "dry_run": true})
		if m := checkStructured(t, sch, dry); m["kind"] != "dry_run" {
			t.Errorf("dry-run structured kind = %v", m["kind"])
		}
	})
}

func TestTimeoutThroughClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, srv := modelClient(t)
		srv.Push(fake.Script{Steps: []fake.Step{fake.Text("Partial"), fake.Hang()}})
		start := time.Now()
		res := call(t, c, map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 1})
		if el := time.Since(start); el < time.Second || el > 1500*time.Millisecond {
			t.Errorf("returned after %v, want just over the 1 s deadline", el)
		}
		got := text(res)
		if !res.IsError || !strings.Contains(got, "Request timed out after 1 second while receiving the answer") || !strings.Contains(got, "Partial") {
			t.Errorf("unexpected result:\n%s", got)
		}
		checkStructured(t, outputSchema(t), res)
	})
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu     sync.Mutex
	tokens []any
	values []float64
	msgs   []string
}

func (p *progressLog) add(n mcp.JSONRPCNotification) {
	if n.Method != "notifications/progress" {
		return
	}
	f := n.Params.AdditionalFields
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = append(p.tokens, f["progressToken"])
	v, _ := f["progress"].(float64)
	p.values = append(p.values, v)
	m, _ := f["message"].(string)
	p.msgs = append(p.msgs, m)
}

func (p *progressLog) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.values)
}

func TestHeartbeatThroughClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, svc := modelService(t)
		svc.Heartbeat = 200 * time.Millisecond
		log := &progressLog{}
		c := startClient(t, svc, log.add)
		ctx := context.Background()
		srv.Push(fake.Script{Steps: []fake.Step{fake.Think("hmm "), fake.Sleep(1100 * time.Millisecond), fake.Text("answer")}})
		req := mcp.CallToolRequest{}
		req.Params.Name = "consultation"
		req.Params.Arguments = map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 10}
		req.Params.Meta = &mcp.Meta{ProgressToken: "tok-7"}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %s", err, text(res))
		}
		atResult := log.count()
		time.Sleep(300 * time.Millisecond)
		if log.count() != atResult {
			t.Errorf("%d progress notifications arrived after the result", log.count()-atResult)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.values) < 4 {
			t.Fatalf("got %d progress notifications for a 1.1 s call with a 200 ms heartbeat, want at least 4", len(log.values))
		}
		for i, v := range log.values {
			if log.tokens[i] != "tok-7" {
				t.Errorf("notification %d carries token %v, want tok-7 unchanged", i, log.tokens[i])
			}
			if i > 0 && v <= log.values[i-1] {
				t.Errorf("progress not increasing: %v", log.values)
			}
			if len(log.msgs[i]) == 0 || len(log.msgs[i]) > 200 {
				t.Errorf("message %q: want 1-200 chars", log.msgs[i])
			}
		}
		if !strings.Contains(strings.Join(log.msgs, "|"), "model thinking") {
			t.Errorf("messages should say the model is thinking: %q", log.msgs)
		}
	})
}

func TestNoProgressWithoutToken(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, srv := modelClient(t)
		log := &progressLog{}
		c.OnNotification(log.add)
		srv.Push(fake.Script{Steps: []fake.Step{fake.Sleep(500 * time.Millisecond), fake.Text("a")}})
		res := call(t, c, map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q"})
		if res.IsError {
			t.Fatal(text(res))
		}
		if n := log.count(); n != 0 {
			t.Errorf("%d progress notifications without a progress token, want 0", n)
		}
	})
}

func TestIdleTimeoutThroughClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, svc := modelService(t)
		svc.IdleTimeout = 500 * time.Millisecond
		c := startClient(t, svc, nil)
		srv.Push(fake.Script{Steps: []fake.Step{fake.Text("start"), fake.Hang()}})
		start := time.Now()
		res := call(t, c, map[string]any{"path": goTree(t), "pattern": "**/*.go", "query": "q", "timeout": 20})
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("idle call cut after %v, want about 500ms", el)
		}
		if got := text(res); !res.IsError || !strings.Contains(got, "No progress for 0.5 seconds (idle timeout) while receiving the answer") || !strings.Contains(got, "start") {
			t.Errorf("want an idle timeout keeping the partial answer:\n%s", got)
		}
	})
}
