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

// ConsultationName is the name of the main tool.
const ConsultationName = "consultation"

const consultationDescription = `Ask a large-context model a question about many files at once. The server reads the files under path matching pattern (skipping .gitignored files, dependencies, lock files, binaries, secrets), sends them with query to the model and returns the answer with a footer: files, tokens, cost, time.

Use it for questions that need many files together: architecture, cross-file bugs, reviews, "where is X handled". The model sees only these files and the query: make the query self-contained.

pattern is a glob relative to path: "**/*.go", "src/**/*.{ts,tsx}", "{cmd,internal}/**/*.go". Keep it narrow; leave out tests or generated code with exclude_pattern, e.g. "**/*_test.go".

On a large or unfamiliar tree call first with dry_run: true: it returns files, tokens, the largest files and directories and whether the request fits the model, without calling the model.

timeout covers the whole call. Big requests and thinking models ("model|thinking") need more than the default; above 25 s your client must accept progress notifications or it may give up first. On timeout the error says what was gathered and how to shrink it.`

// consultationOutput is the JSON schema of the structured content of every consultation
// result (consultation.Summary), kept compact: agents pay for it on every turn.
const consultationOutput = `{"type":"object","properties":{` +
	`"kind":{"type":"string","enum":["answer","dry_run","error"]},` +
	`"answer":{"type":"string"},"output_file":{"type":"string"},"model":{"type":"string"},` +
	`"files":{"type":"integer"},"bytes":{"type":"integer"},"prompt_tokens":{"type":"integer"},` +
	`"usage":{"type":"object","description":"input, output, reasoning, cached tokens; cost_usd"},` +
	`"truncated":{"type":"boolean"},"phase":{"type":"string"},` +
	`"elapsed_seconds":{"type":"number"},"attempts":{"type":"integer"},"report":{"type":"object"}},` +
	`"required":["kind","files","bytes","prompt_tokens","elapsed_seconds","attempts"]}`

// Consultation returns the declaration of the consultation tool.
func Consultation() mcp.Tool {
	return mcp.NewTool(ConsultationName,
		mcp.WithTitleAnnotation("Consult a large-context model about a codebase"),
		mcp.WithDescription(consultationDescription),
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
		mcp.WithRawOutputSchema(json.RawMessage(consultationOutput)),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
	)
}
