// Package tooldefs declares the MCP tools consult serves: names, argument schemas and the
// descriptions a calling agent reads to decide how to use them. The declarations are
// golden-tested so a change to what agents see is always deliberate.
package tooldefs

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
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

// consultationDescription is the consultation tool's description; %s is the sentence that
// names this server's provider and default model (see Server).
const consultationDescription = `Ask a large-context model a question about many files at once. The server reads the files under path matching pattern (skipping .gitignored files, dependencies, lock files, binaries, secrets), sends them with query to the model and returns the answer with a footer: files, tokens, cost, time.%s

Use it for questions that need many files together: architecture, cross-file bugs, reviews, "where is X handled". The model sees only these files and the query: make it self-contained.

On a large or unfamiliar tree, call first with dry_run: true: files, tokens, the largest files and directories, whether it fits; no model call.

timeout covers the whole call; on timeout the error says what was gathered and what to do. ` + TimeoutRule + ` If the answer is not ready by then, the result says "still running" with an id: collect it with consultation_result, or stop it with consultation_cancel.`

// TimeoutRule is how to choose a call's timeout, in the consultation tool's description
// and the server's instructions.
const TimeoutRule = `Choosing timeout: a fast model reads 100k tokens and writes a 1,000-token answer in 10-20 s (default timeout 22 s); a thinking model ("model|thinking") or a bigger request takes minutes: pass on_timeout: "continue" with a timeout under your client's tool-call limit.`

// Server is what the tool descriptions say about the server that serves them.
type Server struct {
	// Provider is the provider's name as the command line takes it: openrouter, openai, gemini.
	Provider string
	// Model is the default model, used when a call names none.
	Model string
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

// summaryProperties are the fields of consultation.Summary every result tool declares.
const summaryProperties = `"kind":{"type":"string","enum":["answer","dry_run","error","running"%s]},"id":{"type":"string"},` +
	`"answer":{"type":"string"},"output_file":{"type":"string"},"model":{"type":"string"},` +
	`"files":{"type":"integer"},"bytes":{"type":"integer"},"prompt_tokens":{"type":"integer"},` +
	`"usage":{"type":"object","description":"input, output, reasoning, cached tokens; cost_usd"},` +
	`"streamed":{"type":"object","description":"tokens so far"},` +
	`"truncated":{"type":"boolean"},"truncated_by":{"type":"string","enum":["output_limit","answer_cap"]},"phase":{"type":"string"},` +
	`"elapsed_seconds":{"type":"number"},"attempts":{"type":"integer"},"report":{"type":"object"},` +
	`"error":{"type":"object","description":"class, message, retryable"}`

// consultationOutput is the JSON schema of the structured content of every consultation
// result (consultation.Summary), kept compact: agents pay for it on every turn.
var consultationOutput = `{"type":"object","properties":{` + fmt.Sprintf(summaryProperties, "") + `},"required":["kind"]}`

// resultOutput is consultation_result's: a Summary, or a listing of consultations.
var resultOutput = `{"type":"object","properties":{` + fmt.Sprintf(summaryProperties, `,"list"`) +
	`,"consultations":{"type":"array","items":{"type":"object","description":"id, status, created, query"}}},"required":["kind"]}`

// Consultation returns the declaration of the consultation tool served by srv.
func Consultation(srv Server) mcp.Tool {
	return mcp.NewTool(ConsultationName,
		mcp.WithTitleAnnotation("Consult a large-context model about a codebase"),
		mcp.WithDescription(fmt.Sprintf(consultationDescription, srv.describe())),
		mcp.WithString("path", mcp.Required(),
			mcp.Description("Absolute directory to gather files from.")),
		mcp.WithString("pattern", mcp.Required(),
			mcp.Description(`Glob relative to path, e.g. "**/*.py" or "src/**/*.{ts,tsx}".`)),
		mcp.WithString("query", mcp.Required(),
			mcp.Description("The question, self-contained.")),
		mcp.WithString("model",
			mcp.Description(`Model id as the provider names it; server default if omitted. Suffix "|thinking" or "|thinking=N" turns on reasoning (N = budget in tokens).`)),
		mcp.WithString("exclude_pattern",
			mcp.Description(`Glob of files to leave out, e.g. "{**/*_test.go,docs/**}".`)),
		mcp.WithNumber("timeout",
			mcp.Description(fmt.Sprintf("Seconds for the whole call, %g-%g.", consult.MinTimeout.Seconds(), consult.MaxTimeout.Seconds())),
			mcp.Min(consult.MinTimeout.Seconds()), mcp.Max(consult.MaxTimeout.Seconds()),
			mcp.DefaultNumber(consult.DefaultTimeout.Seconds())),
		mcp.WithString("output_file",
			mcp.Description("Absolute path of a new file to write the answer to; the result then holds the path and the footer.")),
		mcp.WithBoolean("dry_run",
			mcp.Description("Gather and count only; no model call.")),
		mcp.WithString("on_timeout",
			mcp.Description(`"fail" (default): stop at timeout. "continue": at timeout return an id and finish in the background.`),
			mcp.Enum("fail", "continue")),
		mcp.WithRawOutputSchema(json.RawMessage(consultationOutput)),
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
		mcp.WithString("id",
			mcp.Description("The id from the \"still running\" result.")),
		mcp.WithNumber("wait",
			mcp.Description(fmt.Sprintf("Seconds to wait for the answer, %g-%g.", consult.MinWait.Seconds(), consult.MaxWait.Seconds())),
			mcp.Min(consult.MinWait.Seconds()), mcp.Max(consult.MaxWait.Seconds()),
			mcp.DefaultNumber(consult.DefaultWait.Seconds())),
		mcp.WithRawOutputSchema(json.RawMessage(resultOutput)),
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
		mcp.WithString("id", mcp.Required(),
			mcp.Description("The id from the \"still running\" result.")),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
}
