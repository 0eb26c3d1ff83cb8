package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/tooldefs"
)

// TestDeadlineFromArrival: a tool call's deadline runs from when the stdio shim read it, not
// from when its handler ran. The call here waits 1.2 s between the two (a BeforeCallTool
// hook stands for mcp-go's queue of calls waiting for a worker); with timeout 1 it is
// answered with a timeout in phase "queued", having gathered nothing: the phase proves the
// deadline had passed before the handler began. Without the arrival it would have had its
// whole second for a dry run, which succeeds (or, on a busy machine, times out while
// gathering). (Wall-clock time: mcp-go's stdio client does not run inside a synctest
// bubble; the 1.2 s wait is a lower bound, which load only lengthens.)
func TestDeadlineFromArrival(t *testing.T) {
	t.Parallel()
	dir := goTree(t)
	svc := &consultation.Service{Counter: tokens.NewCounter()}
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(rememberRequestID)
	var ran time.Time
	hooks.AddBeforeCallTool(func(context.Context, any, *mcp.CallToolRequest) {
		time.Sleep(1200 * time.Millisecond)
		ran = time.Now()
	})
	s := server.NewMCPServer("consult", "test", server.WithToolCapabilities(false), server.WithHooks(hooks))
	h := &handler{svc: svc, log: nil, levels: &levelChoices{}}
	s.AddTool(tooldefs.Consultation(tooldefs.Server{}), h.tool("a JSON object with path, pattern and query", h.consultCall))

	c, _ := stdioClient(t, s, false)
	ctx := context.Background()
	req := mcp.CallToolRequest{}
	req.Params.Name = "consultation"
	req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "timeout": 1, "dry_run": true}
	sent := time.Now()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	answered := time.Since(sent)
	if got := ran.Sub(sent); got < 1200*time.Millisecond {
		t.Errorf("handler ran %v after the call was sent, want 1.2s or more", got)
	}
	t.Logf("answered %v after the handler ran", answered-ran.Sub(sent))
	if !res.IsError || !strings.Contains(text(res), "Request timed out after 1 second while queued") {
		t.Errorf("result (error %v): %s\nwant a timeout while queued", res.IsError, text(res))
	}
	var sum struct {
		Phase string `json:"phase"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &sum); err != nil || sum.Phase != "queued" {
		t.Errorf("structured phase = %q (%v), want \"queued\": %s", sum.Phase, err, raw)
	}
}
