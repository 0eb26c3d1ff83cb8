package mcpserver

// MCP tasks (the io.modelcontextprotocol/tasks extension of protocol 2026-07-28), which
// mcp-go v1.2.1 does not implement (its own tasks are the 2025-11-25 shape, and stay off).
// They are carried in the shim in front of mcp-go (cancel.go), on stdio and HTTP alike:
//
//   - server/discover: mcp-go's answer gains capabilities.extensions[tasks] (only discover
//     has extensions; initialize's capabilities do not).
//   - tools/call of consultation whose request declares the extension, and that will reach
//     a model: the handler starts it as a task (background.Engine.StartTask) and mcp-go's
//     response is replaced by the CreateTaskResult.
//   - tasks/get, tasks/cancel, tasks/update: mcp-go answers them "method not found" (its
//     tasks are off); a hook that sees each request first (OnRequestInitialization) computes
//     the answer, which replaces mcp-go's.
//
// A task is a background consultation (its id is the task id, its record the task's state),
// so it outlives the server and any server process sharing the results directory answers
// for it; ownership is the caller's owner (over HTTP, its bearer token).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
)

const (
	// tasksExtension names the MCP tasks extension.
	tasksExtension = "io.modelcontextprotocol/tasks"
	// agentTaskMeta is Claude Code's _meta key on a CreateTaskResult: its
	// modelImmediateResponse is shown to the model when the task starts.
	agentTaskMeta = "com.anthropic/agent-task"
	// taskPollInterval is the polling interval a task suggests: a task's record is a small
	// file, and its answer is handed on within this long of landing.
	taskPollInterval = time.Second
)

// declaresTasks reports whether a request's _meta declares the tasks extension among its
// client capabilities.
func declaresTasks(meta *mcp.Meta) bool {
	caps := meta.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// taskReplyKey is the context key of the function that replaces a tool call's response with
// a task: set when the call's request declared the extension and came through a shim.
type taskReplyKey struct{}

// taskReplier returns the function that answers ctx's tool call with a CreateTaskResult;
// nil when the call cannot be a task.
func taskReplier(ctx context.Context) func(result []byte) {
	f, _ := ctx.Value(taskReplyKey{}).(func([]byte))
	return f
}

// withTaskReply returns ctx for the tool call req: when req declares the tasks extension and
// came through a shim, it carries the function that replaces the call's response.
func withTaskReply(ctx context.Context, req mcp.CallToolRequest) context.Context {
	if !declaresTasks(req.Params.Meta) {
		return ctx
	}
	sc, k, ok := requestKey(ctx, req)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, taskReplyKey{}, func(result []byte) {
		sc.c.replace(k, func([]byte) []byte { return rpcResult(k.id, result) })
	})
}

// taskJSON is a task as the extension's results carry it: a CreateTaskResult
// (resultType "task") or a tasks/get result (resultType "complete").
type taskJSON struct {
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Meta           map[string]any      `json:"_meta,omitempty"`
}

func newTaskJSON(resultType string, t background.Task) taskJSON {
	return taskJSON{ResultType: resultType, TaskID: t.ID, Status: string(t.Status), StatusMessage: t.Message,
		CreatedAt: t.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.Updated.UTC().Format(time.RFC3339Nano),
		TTLMs: t.TTL.Milliseconds(), PollIntervalMs: taskPollInterval.Milliseconds()}
}

// createTaskResult is the CreateTaskResult of a task just created, with the words its model
// reads at once.
func createTaskResult(t *background.Task) []byte {
	j := newTaskJSON("task", *t)
	j.Meta = map[string]any{agentTaskMeta: map[string]any{"modelImmediateResponse": TaskStartedWords(t)}}
	b, _ := json.Marshal(j) // strings and numbers only
	return b
}

// TaskStartedWords tell the model what a task runs and that its answer comes by itself.
func TaskStartedWords(t *background.Task) string {
	what := "the files"
	model := "the model"
	if st := t.Launch; st != nil {
		if st.Model != "" {
			model = st.Model
		}
		if st.Files > 0 {
			files := consult.Thousands(int64(st.Files)) + " files"
			if st.Files == 1 {
				files = "1 file"
			}
			what = fmt.Sprintf("%s (%s, %s prompt tokens", files, st.Bytes, st.PromptTokens)
			if st.Estimate != "" {
				what += "; " + st.Estimate
			}
			what += ")"
		}
	}
	return fmt.Sprintf("consult is asking %s about %s as task %s; it may take until %s (%s from the start). "+
		"Its result arrives by itself in a task notification when it is ready: do not call consultation_result for it, and go on with other work meanwhile. "+
		"If it is no longer needed, stop it with TaskStop.",
		consult.Printable(model), what, t.ID, t.Deadline.UTC().Format("15:04:05 UTC"), consult.FormatDuration(t.Deadline.Sub(t.Created).Round(time.Second)))
}

// beforeRequest is an OnRequestInitialization hook: it sees every request before mcp-go
// handles it, and arranges the replies the shim puts in place of mcp-go's: the extension's
// methods (see the file comment), and a resources/read of a resource the caller cannot read
// (resources.go).
func (h *handler) beforeRequest(ctx context.Context, id any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	sc, ok := ctx.Value(cancelScopeKey{}).(cancelScope)
	key := cancelKey{sc.session, canonicalID(id)}
	if !ok || key.id == "" {
		return nil
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			TaskID json.RawMessage `json:"taskId"`
			URI    string          `json:"uri"`
			Meta   *mcp.Meta       `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	switch m.Method {
	case string(mcp.MethodResourcesRead):
		if lookup := resourceLookup(ctx); lookup != nil {
			if found, why := lookup(ctx, m.Params.URI); !found {
				sc.c.replace(key, inPlaceOfError(resourceNotFound(key.id, m.Params.URI, why, m.Params.Meta.ProtocolVersion())))
			}
		}
	case string(mcp.MethodServerDiscover):
		if h.bg != nil {
			sc.c.replace(key, withTasksDeclared)
		}
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksCancel), "tasks/update":
		if h.bg != nil {
			reply := h.taskMethod(ctx, key.id, m.Method, m.Params.Meta, m.Params.TaskID)
			sc.c.replace(key, func([]byte) []byte { return reply })
		}
	}
	return nil
}

// taskMethod answers tasks/get, tasks/cancel or tasks/update (method), a request with id
// (canonical JSON) whose params hold meta and taskId (rawTaskID).
func (h *handler) taskMethod(ctx context.Context, id, method string, meta *mcp.Meta, rawTaskID json.RawMessage) []byte {
	var taskID string
	var err error
	switch {
	case !declaresTasks(meta):
		return rpcError(id, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability: "+method+" needs the "+tasksExtension+" extension declared in _meta",
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	case json.Unmarshal(rawTaskID, &taskID) != nil || taskID == "":
		return rpcError(id, mcp.INVALID_PARAMS, method+" needs params.taskId, the id of a task this server created", nil)
	case method == string(mcp.MethodTasksGet):
		var t background.Task
		if t, err = h.bg.TaskState(ctx, taskID); err == nil {
			j := newTaskJSON("complete", t)
			if t.Status == background.TaskCompleted {
				j.Result = toMCP(h.paged(ctx, t.Result))
			}
			b, merr := json.Marshal(j)
			if merr == nil {
				return rpcResult(id, b)
			}
			return rpcError(id, mcp.INTERNAL_ERROR, "cannot encode task "+taskID+": "+merr.Error(), nil)
		}
	case method == string(mcp.MethodTasksCancel):
		err = h.bg.CancelTask(ctx, taskID)
	default: // tasks/update: consult's tasks ask for no input; the update is acknowledged
		_, err = h.bg.TaskState(ctx, taskID)
	}
	switch {
	case errors.Is(err, background.ErrNoTask):
		return rpcError(id, mcp.INVALID_PARAMS, err.Error(), nil)
	case err != nil:
		return rpcError(id, mcp.INTERNAL_ERROR, err.Error(), nil)
	}
	return rpcResult(id, []byte(`{"resultType":"complete"}`))
}

// withTasksDeclared is mcp-go's server/discover response with the tasks extension among the
// server's capabilities; the response as it is if it is not a result.
func withTasksDeclared(resp []byte) []byte {
	if m, ok := peekOutgoing(resp); !ok || m.Result == nil {
		return resp
	}
	out, _ := withMember(resp, json.RawMessage(`{}`), "result", "capabilities", "extensions", tasksExtension)
	return out
}

// rpcResult is the JSON-RPC response with id (canonical JSON) and result (JSON).
func rpcResult(id string, result []byte) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

// rpcError is the JSON-RPC error response with id (canonical JSON).
func rpcError(id string, code int, message string, data any) []byte {
	b, _ := json.Marshal(mcp.NewJSONRPCError(mcp.NewRequestId(json.RawMessage(id)), code, message, data))
	return b
}

// consultTask runs in as a task when ctx's call may be one: the result to return instead
// when it ended before reaching a model, and whether it did.
func (h *handler) consultTask(ctx context.Context, in consultation.Request, rep consultation.Reporter) (consultation.Result, bool) {
	reply := taskReplier(ctx)
	if reply == nil || h.bg == nil || in.DryRun {
		return consultation.Result{}, false
	}
	res, t := h.bg.StartTask(ctx, in, rep)
	if t == nil {
		return h.paged(ctx, res), true
	}
	reply(createTaskResult(t))
	return consultation.Result{}, true
}
