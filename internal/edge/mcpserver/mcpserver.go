// Package mcpserver adapts the consultation use case to MCP with mcp-go: it declares the
// tools, turns tool calls into consultations and results into MCP results, and serves them
// over stdio or streamable HTTP.
package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/tooldefs"
)

// WorkerPoolSize is how many tool calls one stdio session runs at once: mcp-go's largest
// (server.WithWorkerPoolSize takes at most 100). Agents fan out consultations, and a call
// waiting in mcp-go's queue for a worker spends its deadline, which runs from its arrival
// (see cancel.go). Memory is bounded by the bytes in flight (consultation.Inflight), which
// knows each call's deadline, not by this count; and a call whose deadline passed while it
// waited for a worker is answered at once with a timeout in phase "queued", reading and
// sending nothing, so one worker clears the expired calls in moments. Every call thus ends
// at its deadline however many arrive: with 1 s answers, 200 calls of timeout 2 end within
// 2.2 s of being sent (TestDeadlineFromArrivalUnderLoad).
const WorkerPoolSize = 100

// Config is what the server needs.
type Config struct {
	// Service runs the consultations.
	Service *consultation.Service
	// Background runs the consultations that go on past their call (on_timeout
	// "continue") and serves consultation_result and consultation_cancel; nil refuses them.
	// It also keeps long answers, returned in pages.
	Background *background.Engine
	// PageBytes is the longest answer a result holds whole: a longer one is returned in
	// pages (background.DefaultPageBytes if 0; negative: never paged). Paging needs
	// Background.
	PageBytes int
	// Provider is the provider's name as the command line takes it (openrouter, openai,
	// gemini), for the instructions and the tool description; the default model is
	// Service.DefaultModel.
	Provider string
	// Logger receives the server's own log lines (stderr in the binary); nil discards.
	Logger *slog.Logger
}

// New builds the MCP server with every consult tool registered.
func New(cfg Config) *server.MCPServer {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := tooldefs.Server{Provider: cfg.Provider, Model: cfg.Service.DefaultModel, DefaultTimeout: cfg.Service.DefaultTimeout}
	instructions := Instructions(srv, cfg.Background != nil)
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(rememberRequestID)
	h := &handler{svc: cfg.Service, bg: cfg.Background, page: cmp.Or(cfg.PageBytes, background.DefaultPageBytes), log: logger}
	hooks.AddOnRequestInitialization(h.beforeRequest)
	levels := &levelChoices{}
	h.levels = levels
	hooks.AddBeforeSetLevel(levels.note)
	hooks.AddOnUnregisterSession(levels.forget)
	// The token vocabulary loads in the background once a client has the tool list (or at
	// its first call, if it never asks for the list): initialize and tools/list are answered
	// without it taking the CPU, and the first consultation usually finds it loaded.
	hooks.AddAfterListTools(func(context.Context, any, *mcp.ListToolsRequest, *mcp.ListToolsResult) { tokens.Preload() })
	hooks.AddBeforeCallTool(func(context.Context, any, *mcp.CallToolRequest) { tokens.Preload() })
	s := server.NewMCPServer("consult", consult.Version,
		server.WithToolCapabilities(false),
		server.WithHooks(hooks),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithInstructions(instructions),
	)
	s.AddTool(tooldefs.Consultation(srv), h.tool("a JSON object with path, pattern and query", h.consultCall))
	if cfg.Background != nil {
		s.AddTool(tooldefs.Result(), h.tool("a JSON object with id and wait", h.resultCall))
		s.AddTool(tooldefs.Cancel(), h.tool("a JSON object with id", h.cancelCall))
	}
	return s
}

// Instructions are the server's instructions for a client. The first sentence stands
// alone within 250 characters (Codex shows no more): what consult does, with which provider
// and model. background says whether on_timeout "continue" is served. They do not repeat
// the tool's description (its timeout rule): a client sends both to its model every turn.
func Instructions(srv tooldefs.Server, background bool) string {
	var b strings.Builder
	b.WriteString("consult answers questions about a codebase: the consultation tool sends the files under a directory that match a glob, with your question, to a large-context model")
	if srv.Provider != "" && srv.Model != "" {
		fmt.Fprintf(&b, " (%s, default %s)", srv.Provider, srv.Model)
	}
	b.WriteString(". Try dry_run first on large trees.")
	if background {
		b.WriteString(` Collect a "still running" answer with consultation_result.`)
	}
	return b.String()
}

type handler struct {
	svc    *consultation.Service
	bg     *background.Engine
	page   int // bytes of answer a result holds whole; negative: no paging
	log    *slog.Logger
	levels *levelChoices
}

// levelChoices remembers the sessions whose client chose a log level (logging/setLevel).
type levelChoices struct{ sessions sync.Map }

func (l *levelChoices) note(ctx context.Context, _ any, _ *mcp.SetLevelRequest) {
	if s := server.ClientSessionFromContext(ctx); s != nil {
		l.sessions.Store(s.SessionID(), true)
	}
}

// forget drops a session that ended, so a long-lived HTTP server keeps no entry per past session.
func (l *levelChoices) forget(_ context.Context, s server.ClientSession) {
	l.sessions.Delete(s.SessionID())
}

// chosen reports whether the client of ctx's session chose a log level.
func (l *levelChoices) chosen(ctx context.Context) bool {
	s := server.ClientSessionFromContext(ctx)
	if s == nil || l == nil {
		return false
	}
	_, ok := l.sessions.Load(s.SessionID())
	return ok
}

// consultCall is the consultation tool on its decoded arguments.
func (h *handler) consultCall(ctx context.Context, args map[string]any, rep consultation.Reporter) consultation.Result {
	in, err := tooldefs.Decode[consultation.Request](tooldefs.ConsultationName, args, h.svc.ArgRules()...)
	if err != nil {
		return h.refuse(err)
	}
	if in.OnTimeout == consultation.OnTimeoutContinue && !in.DryRun && h.bg == nil {
		return consultation.Failure(consultation.ClassInvalidArgument, `on_timeout "continue" is not available: this server has no usable results directory to keep background consultations in (its log says why; start it with --results-dir DIR, a directory of yours that others cannot write). Call again without on_timeout.`)
	}
	if res, ok := h.consultTask(ctx, in, rep); ok {
		return res
	}
	if in.OnTimeout == consultation.OnTimeoutContinue && !in.DryRun {
		return h.paged(ctx, h.bg.Start(ctx, in, rep))
	}
	if h.bg != nil && !in.DryRun {
		return h.paged(ctx, h.bg.Consult(ctx, in, rep)) // kept, for paging and follow-ups
	}
	if in.FollowUpOf != "" {
		return consultation.Failure(consultation.ClassInvalidArgument, `follow_up_of is not available: this server has no usable results directory to keep consultations in. Ask the question with path and pattern alone.`)
	}
	return h.paged(ctx, h.svc.Consult(ctx, in, rep))
}

// paged is res with its answer cut to its first page when it is too long for clients to
// pass on whole (see background.Engine.Paged); res as it is without a results directory. A
// server that never pages (h.page < 0) still has Paged note a result returned whole.
func (h *handler) paged(ctx context.Context, res consultation.Result) consultation.Result {
	if h.bg == nil {
		return res
	}
	return h.bg.Paged(ctx, res, h.page)
}

// resultCall is consultation_result on its decoded arguments.
func (h *handler) resultCall(ctx context.Context, args map[string]any, rep consultation.Reporter) consultation.Result {
	in, err := tooldefs.Decode[background.ResultArgs](tooldefs.ResultName, args, background.ResultArgRules...)
	if err != nil {
		return h.refuse(err)
	}
	if in.Offset != nil {
		size := h.page
		if size <= 0 { // this server does not page its answers; a page asked for is of the default size
			size = background.DefaultPageBytes
		}
		return h.bg.Page(ctx, in.ID, *in.Offset, size)
	}
	return h.paged(ctx, h.bg.Collect(ctx, in.ID, in.Wait, rep))
}

// cancelCall is consultation_cancel on its decoded argument.
func (h *handler) cancelCall(ctx context.Context, args map[string]any, _ consultation.Reporter) consultation.Result {
	in, err := tooldefs.Decode[background.CancelArgs](tooldefs.CancelName, args)
	if err != nil {
		return h.refuse(err)
	}
	return h.bg.Cancel(ctx, in.ID)
}

// refuse is the result of a call whose arguments could not be decoded.
func (h *handler) refuse(err error) consultation.Result {
	h.log.Info("tool call refused", "reason", err.Error())
	return consultation.FailureOf(err)
}

// tool is the handler of a tool whose arguments must be want: it decodes a call's
// arguments, runs use with a reporter for the caller and returns its result once the last
// notification has had time to arrive first.
func (h *handler) tool(want string, use func(context.Context, map[string]any, consultation.Reporter) consultation.Result) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.GetArguments()
		if args == nil {
			if raw := req.GetRawArguments(); raw != nil {
				return toMCP(consultation.Failure(consultation.ClassInvalidArgument, "arguments must be "+want)), nil
			}
			args = map[string]any{}
		}
		ctx = withTaskReply(ctx, req)
		ctx, stop := callContext(ctx, req)
		defer stop()
		rep := &reporter{ctx: ctx, srv: server.ServerFromContext(ctx), levels: h.levels}
		if req.Params.Meta != nil {
			rep.token = req.Params.Meta.ProgressToken
		}
		res := use(ctx, args, rep)
		if h.bg != nil {
			res = h.bg.WithOrphans(ctx, res)
		}
		rep.settle()
		return toMCP(res), nil
	}
}

// settleLimit bounds how long a result waits for its call's progress notifications to go out
// (see reporter.settle): they are queued apart from results, and go out within moments.
const settleLimit = time.Second

// reporter sends a call's progress and notices to the client that made it.
type reporter struct {
	ctx    context.Context
	levels *levelChoices // which sessions chose a log level
	srv    *server.MCPServer
	token  mcp.ProgressToken // nil: the client asked for no progress

	sent atomic.Int64 // progress notifications sent
}

// Progress sends notifications/progress with the client's token, unchanged; nothing
// without a token.
func (r *reporter) Progress(progress float64, message string) {
	if r.token == nil || r.srv == nil {
		return
	}
	if r.srv.SendNotificationToClient(r.ctx, "notifications/progress", map[string]any{
		"progressToken": r.token, "progress": progress, "message": message,
	}) == nil {
		r.sent.Add(1)
	}
}

// Log sends notifications/message at level. The client's own choice of level applies once
// it made one (logging/setLevel; or, from protocol 2026-07-28 on, the level a request
// declares). Until then the server chooses, as MCP leaves it to: warning and above are
// sent. mcp-go would otherwise filter at its default, error, and drop every warning.
func (r *reporter) Log(level consultation.Level, message string) {
	if r.srv == nil {
		return
	}
	info := server.RequestProtocolInfoFromContext(r.ctx)
	switch {
	case info != nil && info.Modern, r.levels.chosen(r.ctx):
		_ = r.srv.SendLogMessageToClient(r.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevel(level), "consult", message))
	case level == consultation.LevelWarning || level == consultation.LevelError:
		_ = r.srv.SendNotificationToClient(r.ctx, "notifications/message", map[string]any{
			"level": level, "logger": "consult", "data": message,
		})
	}
}

// settle waits until the progress notifications the call sent have gone out (the shim counts
// them as it writes them), so that none follows the result; at most settleLimit. Without a
// shim (an in-process client) or a token there is nothing to wait for.
func (r *reporter) settle() {
	sc, ok := r.ctx.Value(cancelScopeKey{}).(cancelScope)
	if !ok || r.token == nil {
		return
	}
	if n := r.sent.Load(); n > 0 {
		sc.c.awaitProgress(cancelKey{sc.session, canonicalID(r.token)}, int(n), settleLimit)
	}
}

// toMCP words a consultation result as an MCP tool result: its text, and its structured
// content with the same words in its message.
func toMCP(r consultation.Result) *mcp.CallToolResult {
	var res *mcp.CallToolResult
	text, sum := consultation.Render(r, consultation.ToolNames)
	if sum != nil {
		res = mcp.NewToolResultStructured(sum, text)
	} else {
		res = mcp.NewToolResultText(text)
	}
	res.IsError = r.IsError
	return res
}

// ServeStdio serves MCP on in and out until ctx ends or in closes. Calls still running are
// cancelled when it returns. A cancelled call gets no response (see cancel.go); a
// resources/read that ctx's ResourceLookup refuses gets the specification's error (see
// resources.go).
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, errLog io.Writer) error {
	c := newCancels()
	ctx = context.WithValue(ctx, cancelScopeKey{}, cancelScope{c: c})
	stdin := newStdioIn(in, c)
	defer stdin.stop()
	in, out = stdin, &stdioOut{w: out, c: c}
	ss := server.NewStdioServer(s)
	ss.SetErrorLogger(log.New(errLog, "mcp: ", log.LstdFlags))
	server.WithWorkerPoolSize(WorkerPoolSize)(ss)
	server.WithQueueSize(1000)(ss)
	return ss.Listen(ctx, in, out)
}
