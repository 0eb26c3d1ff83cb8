// Package tooldefs declares the MCP tools consult serves: names, argument schemas and the
// descriptions a calling agent reads to decide how to use them. The declarations are
// golden-tested so a change to what agents see is always deliberate.
package tooldefs

import (
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
)

// Tool names.
const (
	// ConsultationName is the name of the main tool.
	ConsultationName = "consultation"
	// ResultName collects a consultation that went on in the background.
	ResultName = "consultation_result"
	// CancelName stops one.
	CancelName = "consultation_cancel"
)

// consultationDescription is the consultation tool's description; the first %s is the
// sentence that names this server's provider and default model (see Server), the second
// the rule for choosing timeout.
const consultationDescription = `Ask a large-context model a question about many files at once: the files under path matching pattern (skipping ignored files, dependencies, lock files, binaries, secrets) go with query to the model.%s

The model sees only these files and the query.

On a large tree, call first with dry_run: true (files, tokens, price, fit; no model call).

timeout covers the whole call; its timeout error says what was gathered and what to do. %s If not done by then, the result is "still running" with next: the call that collects it. With MCP tasks, a model call becomes a task whose result arrives by itself.`

// timeoutRule is how to choose a call's timeout; %g is the server's default timeout in seconds.
const timeoutRule = `A fast model answers about 100k tokens in 10-20 s (default timeout %g s); a thinking model ("model|thinking") or a bigger request takes minutes: pass on_timeout: "continue" with a timeout under your client's tool-call limit.`

// Server is what the tool declarations say about the server that serves them.
type Server struct {
	// Provider is the provider's name as the command line takes it: openrouter, openai, gemini.
	Provider string
	// Model is the default model, used when a call names none.
	Model string
	// DefaultTimeout is the timeout of a call that sets none (consult.DefaultTimeout if 0).
	DefaultTimeout time.Duration
}

// describe is the sentence naming s's provider and default model; "" when s names neither.
func (s Server) describe() string {
	switch {
	case s.Provider != "" && s.Model != "":
		return fmt.Sprintf(" This server uses %s; default model %s.", s.Provider, s.Model)
	case s.Model != "":
		return fmt.Sprintf(" Default model %s.", s.Model)
	}
	return ""
}

func (s Server) defaultTimeout() time.Duration { return consultation.DefaultTimeout(s.DefaultTimeout) }

// TimeoutRule is how to choose a call's timeout on this server, in the consultation tool's
// description and the server's instructions.
func (s Server) TimeoutRule() string {
	return fmt.Sprintf(timeoutRule, s.defaultTimeout().Seconds())
}

// Consultation returns the declaration of the consultation tool served by srv.
func Consultation(srv Server) mcp.Tool {
	return mcp.NewTool(ConsultationName,
		mcp.WithTitleAnnotation("Consult a large-context model about a codebase"),
		mcp.WithDescription(fmt.Sprintf(consultationDescription, srv.describe(), srv.TimeoutRule())),
		input[consultation.Request](consultation.TimeoutRule(srv.defaultTimeout())),
		output[consultation.Summary](false),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
	)
}

const resultDescription = `Collect the answer of a consultation that returned "still running" (on_timeout: "continue"). Waits up to wait seconds, then returns the answer with its footer, the failure with its report, or "still running" with progress: then call again. Results are kept across server restarts. Without id, lists recent consultations.`

// Result returns the declaration of the consultation_result tool.
func Result() mcp.Tool {
	return mcp.NewTool(ResultName,
		mcp.WithTitleAnnotation("Collect a background consultation"),
		mcp.WithDescription(resultDescription),
		input[background.ResultArgs](background.WaitRule()),
		output[consultation.Summary](true),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
}

// Cancel returns the declaration of the consultation_cancel tool.
func Cancel() mcp.Tool {
	return mcp.NewTool(CancelName,
		mcp.WithTitleAnnotation("Stop a background consultation"),
		mcp.WithDescription(`Stop a consultation that is "still running" (no further cost). What it received so far is kept as its result.`),
		input[background.CancelArgs](),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
}
