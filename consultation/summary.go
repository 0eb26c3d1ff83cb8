package consultation

import (
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
)

// Kinds of Summary.
const (
	KindAnswer = "answer"
	KindDryRun = "dry_run"
	KindError  = "error"
	// KindRunning is a consultation still running in the background: collect it by ID.
	KindRunning = "running"
	// KindCancelled is what consultation_cancel returns for a consultation it stopped: its
	// final state, kept as its result.
	KindCancelled = "cancelled"
	// KindList is consultation_result without an id: the consultations the server knows.
	KindList = "list"
)

// Summary is the structured content of every consultation result: the same figures as the
// text, for programs. The tools' output schema is derived from it (package tooldefs reads
// the tags: desc, enum, and schema:"list" for what only a listing holds).
type Summary struct {
	// Kind is "answer", "dry_run", "error", "running", "list" or "cancelled".
	Kind string `json:"kind" enum:"answer,dry_run,error,running|list,cancelled"`
	// ID names a consultation started with on_timeout "continue", for consultation_result.
	ID string `json:"id,omitempty"`
	// Answer is the model's answer (absent when written to OutputFile; partial on error).
	Answer string `json:"answer,omitempty"`
	// OutputFile is where the answer was written, when output_file was given.
	OutputFile string `json:"output_file,omitempty"`
	// Model is the model that answered (or would have).
	Model string `json:"model,omitempty"`
	// Files, Bytes and PromptTokens size what was gathered and sent (absent: none, or a
	// later page of a long answer, whose first page has them).
	Files        int            `json:"files,omitempty"`
	Bytes        consult.Bytes  `json:"bytes,omitempty"`
	PromptTokens consult.Tokens `json:"prompt_tokens,omitempty"`
	// Usage is what the provider reported.
	Usage *UsageSummary `json:"usage,omitempty" desc:"tokens, cost_usd, cache_saved_usd"`
	// Estimate is the request's price before it was sent.
	Estimate *CostEstimate `json:"cost_estimate,omitempty" schema:"undeclared"`
	// Streamed counts what a running consultation has received so far.
	Streamed *StreamedSummary `json:"streamed,omitempty" desc:"tokens so far"`
	// Truncated is true when the answer is incomplete; TruncatedBy says why.
	Truncated bool `json:"truncated,omitempty"`
	// TruncatedBy is [TruncatedByOutputLimit], [TruncatedByCostCap] or [TruncatedByAnswerCap]
	// when Truncated.
	TruncatedBy string `json:"truncated_by,omitempty" enum:"output_limit,cost_cap,answer_cap"`
	// StopReason is the provider's own reason the model stopped ("STOP", "length",
	// "SAFETY", "content_filter (SAFETY)").
	StopReason string `json:"stop_reason,omitempty" schema:"undeclared"`
	// Phase is where a failed call stopped.
	Phase string `json:"phase,omitempty"`
	// ElapsedSeconds is the call's wall time; Attempts counts model requests sent.
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
	Attempts       int     `json:"attempts,omitempty"`
	// Report is the full size report (dry runs and size-related failures).
	Report *Report `json:"report,omitempty"`
	// Error says, for kind "error", what failed: its class, the failure in one line (Message
	// goes on from there), whether a retry may help, and the provider's status, code and
	// requested delay.
	Error *ErrorInfo `json:"error,omitempty" desc:"class, message, retryable"`
	// Withheld and Redacted list the files held back as possible secrets and the files
	// sent with secrets replaced (answers; dry runs and failures have them in Report).
	Withheld []files.Withheld `json:"withheld,omitempty" schema:"undeclared"`
	Redacted []files.Redacted `json:"redacted,omitempty" schema:"undeclared"`
	// Consultations lists the known consultations (kind "list").
	Consultations []ListEntry `json:"consultations,omitempty" schema:"list" desc:"id, status, created, query"`
	// Warnings are notes on the call the agent should act on (a timeout long enough for
	// clients to give up, an idle timeout clamped, a result that could not be saved).
	Warnings []string `json:"warnings,omitempty" desc:"notes to act on"`
	// Message is, for every kind but answer, what the result is in words: for an error its
	// cause and what to do (the figures are in Report), for a dry run its figures in a line,
	// for a running consultation how to collect it, and whether Answer is only a partial one.
	Message string `json:"message,omitempty" desc:"the cause and what to do, in words"`
	// Page says which part of a long answer Answer holds, when it holds only a part: fetch
	// the next with Next.
	Page *Page `json:"page,omitempty" desc:"part of a long answer"`
	// FollowUpOf is the consultation this one followed up (follow_up_of).
	FollowUpOf string `json:"follow_up_of,omitempty" schema:"undeclared"`
	// Next is the next step of a running consultation, or of a long answer's next page, as
	// data.
	Next *NextStep `json:"next,omitempty" desc:"the call to make next"`
}

// Page is the part of a long answer a result holds: bytes Offset to NextOffset of
// TotalChars (UTF-8 bytes), cut at a line or character boundary. NextOffset is 0 on the
// last page.
type Page struct {
	Offset     int `json:"offset"`
	NextOffset int `json:"next_offset,omitempty"`
	TotalChars int `json:"total_chars"`
}

// NextStep is what to do about a consultation that is still running: the tool to call and
// its arguments, and the times that bound it.
type NextStep struct {
	// Tool and Arguments are the call that collects the result.
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	// MaxWaitSeconds is the longest "wait" the tool takes.
	MaxWaitSeconds float64 `json:"max_wait_seconds,omitempty"`
	// RunsUntil is when the background limit stops it; KeptSeconds is how long its result is
	// kept after it ends.
	RunsUntil   time.Time `json:"runs_until,omitzero"`
	KeptSeconds float64   `json:"kept_seconds,omitempty"`
	// Cancel is the tool that stops it.
	Cancel string `json:"cancel_tool,omitempty"`
}

// StreamedSummary is what a running consultation has received from the model so far.
type StreamedSummary struct {
	Reasoning consult.Tokens `json:"reasoning"`
	Answer    consult.Tokens `json:"answer"`
}

// ListEntry is one consultation in a listing.
type ListEntry struct {
	ID      string    `json:"id"`
	Status  string    `json:"status"`
	Created time.Time `json:"created"`
	Query   string    `json:"query,omitempty"`
	// OtherSession marks a consultation started by another client session of the same
	// owner (or by this client before the server restarted): its answer is not this
	// session's to take for its own.
	OtherSession bool `json:"other_session,omitempty"`
}

// UsageSummary is the provider's token and cost accounting.
type UsageSummary struct {
	Input     consult.Tokens `json:"input"`
	Output    consult.Tokens `json:"output"`
	Reasoning consult.Tokens `json:"reasoning"`
	Cached    consult.Tokens `json:"cached"`
	// CacheWrite is the prompt tokens written to the provider's cache, where it says.
	CacheWrite consult.Tokens `json:"cache_write,omitempty"`
	// CostUSD is the provider's reported cost (OpenRouter), else the reported tokens at the
	// model's list prices (CostFromPrices), when they are known.
	CostUSD        *float64 `json:"cost_usd,omitempty"`
	CostFromPrices bool     `json:"cost_from_prices,omitempty"`
	// CacheSavedUSD is what the prompt cache saved at the model's prices: the cached tokens
	// at the prompt price less the cache-read price, less any cache-write premium.
	CacheSavedUSD *float64 `json:"cache_saved_usd,omitempty"`
}

// summary starts a Summary of this call with the gathering figures filled in.
func (c *call) summary(kind string, rep *Report) *Summary {
	s := &Summary{
		Kind: kind, Model: c.req.Model.ID, Attempts: int(c.attempts.Load()),
		ElapsedSeconds: time.Since(c.start).Round(time.Millisecond).Seconds(),
	}
	if rep != nil {
		s.Files, s.Bytes, s.PromptTokens = rep.Files, rep.Bytes, rep.PromptTokens
	}
	s.Estimate = c.estimate
	return s
}

// fail is a failed call's result: info's class, its cause, the report attached. Render
// words it; info's message is its first line when it has none.
func (c *call) fail(info ErrorInfo, cause Cause, rep *Report) Result {
	s := c.summary(KindError, rep)
	s.Phase = c.phaseNow()
	s.Report = rep
	s.Error = &info
	return Result{IsError: true, Summary: s, Facts: &Facts{Cause: cause}}
}

// Values of [Summary.TruncatedBy].
const (
	// TruncatedByOutputLimit: the model stopped at its output-token limit.
	TruncatedByOutputLimit = "output_limit"
	// TruncatedByCostCap: the model stopped at the output limit consult sized to a cap
	// (max_cost_usd, or what was left of the daily budget).
	TruncatedByCostCap = "cost_cap"
	// TruncatedByAnswerCap: the answer reached providers.MaxAnswerBytes and the rest was
	// not read.
	TruncatedByAnswerCap = "answer_cap"
)
