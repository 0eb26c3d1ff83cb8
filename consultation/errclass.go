package consultation

import (
	"context"
	"errors"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// ErrorClass names the kind of a failure, from a small fixed vocabulary that programs can
// act on; every error result carries one in structuredContent.error.class.
type ErrorClass string

// The error classes.
const (
	ClassInvalidArgument  ErrorClass = "invalid_argument"  // the call's arguments break a rule
	ClassNotFound         ErrorClass = "not_found"         // no such model, file, or consultation id
	ClassUnauthenticated  ErrorClass = "unauthenticated"   // the provider rejected the API key
	ClassPermissionDenied ErrorClass = "permission_denied" // the key may not do this (or no credit left)
	ClassRateLimited      ErrorClass = "rate_limited"      // the provider asked to slow down
	ClassOverloaded       ErrorClass = "overloaded"        // the provider or model is overloaded
	ClassTooLarge         ErrorClass = "too_large"         // the request does not fit the model's window
	ClassContentFiltered  ErrorClass = "content_filtered"  // a safety or policy filter stopped the prompt or answer
	ClassOutputLimit      ErrorClass = "output_limit"      // the model's output limit ended it before any answer
	ClassTimeout          ErrorClass = "timeout"           // the call's deadline (or the background limit) passed
	ClassIdleTimeout      ErrorClass = "idle_timeout"      // the upstream was silent for the idle timeout
	ClassCancelled        ErrorClass = "cancelled"         // the client, a cancel tool, or a shutdown stopped it
	ClassUpstreamError    ErrorClass = "upstream_error"    // the provider failed otherwise
	ClassOverBudget       ErrorClass = "over_budget"       // the estimated price is over max_cost_usd or the daily budget
	ClassInternal         ErrorClass = "internal"          // consult itself failed
)

// ErrorInfo is the machine-readable side of an error result.
type ErrorInfo struct {
	// Class is the kind of failure.
	Class ErrorClass `json:"class"`
	// Message is the failure in one line, where the result has no message that says it
	// (Render leaves it out of a Summary whose Message does).
	Message string `json:"message,omitempty"`
	// Retryable says whether the same call may succeed if made again (perhaps later).
	Retryable bool `json:"retryable"`
	// HTTPStatus is the provider's HTTP status, when there was one.
	HTTPStatus int `json:"http_status,omitempty"`
	// RetryAfterSeconds is how long the provider asked to wait, when it said.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// ProviderCode is the provider's own error code or stop reason ("context_length_exceeded",
	// "RESOURCE_EXHAUSTED", "SAFETY").
	ProviderCode string `json:"provider_code,omitempty"`
	// EstimatedCostUSD is the request's estimated price, for an over_budget refusal (absent
	// when the price is unknown); MaxCostUSD the call's cap.
	EstimatedCostUSD *float64 `json:"estimated_cost_usd,omitempty"`
	MaxCostUSD       float64  `json:"max_cost_usd,omitempty"`
	// NeedsUSD is the smallest cap that admits the call (its prompt and the least useful
	// answer, at their bound), for a refusal whose cap is too small.
	NeedsUSD *float64 `json:"needs_usd,omitempty"`
	// BudgetUSD is the server's daily budget, BudgetLeftUSD what is left of it today, and
	// ResetsAt when it resets (midnight UTC), for a refusal under the daily budget.
	BudgetUSD     float64   `json:"budget_usd,omitempty"`
	BudgetLeftUSD *float64  `json:"budget_left_usd,omitempty"`
	ResetsAt      time.Time `json:"resets_at,omitzero"`
}

// errorInfo describes err for programs: its class, whether a retry may help, and the
// provider's status, code and requested delay when err is a provider failure.
func errorInfo(err error) ErrorInfo {
	info := ErrorInfo{Class: ClassInternal, Message: firstLine(err.Error())}
	var pe *providers.Error
	var ae *consult.ArgError
	switch {
	case errors.As(err, &ae):
		info.Class = ClassInvalidArgument
	case errors.As(err, &pe):
		info.HTTPStatus, info.ProviderCode = pe.Status, pe.Code
		info.RetryAfterSeconds = pe.RetryAfter.Seconds()
		info.Retryable = providers.Retryable(err)
		switch pe.Kind {
		case providers.Auth:
			info.Class = ClassUnauthenticated
			if pe.Status == 403 {
				info.Class = ClassPermissionDenied
			}
		case providers.Billing:
			info.Class = ClassPermissionDenied
		case providers.RateLimited:
			info.Class = ClassRateLimited // a daily quota is not retryable (providers.Retryable)
		case providers.Overloaded:
			info.Class, info.Retryable = ClassOverloaded, true
		case providers.NotFound:
			info.Class = ClassNotFound
		case providers.ContextLength:
			info.Class = ClassTooLarge
		case providers.ContentFiltered:
			info.Class = ClassContentFiltered
		case providers.OutputLimit:
			info.Class = ClassOutputLimit
		case providers.Canceled:
			info.Class = ClassCancelled
		case providers.BadRequest:
			info.Class = ClassInvalidArgument // the provider refused the request as invalid: the same call fails the same way
		default:
			info.Class = ClassUpstreamError
		}
	case errors.Is(err, ErrIdleTimeout):
		info.Class, info.Retryable = ClassIdleTimeout, true
	case errors.Is(err, ErrCallTimeout), errors.Is(err, context.DeadlineExceeded):
		info.Class, info.Retryable = ClassTimeout, true
	case errors.Is(err, context.Canceled), errors.Is(err, ErrUserCancelled), errors.Is(err, ErrClientGaveUp), errors.Is(err, ErrClientCancelled):
		info.Class = ClassCancelled
	}
	var stop Stop
	if errors.As(err, &stop) {
		info.Class = stop.Class()
		info.Retryable = retryableClass[info.Class]
	}
	return info
}

// FailureOf is the error result for err alone (an argument refused, a store that failed).
func FailureOf(err error) Result {
	info := errorInfo(err)
	s := said{Detail: err.Error()}
	if ae := (*consult.ArgError)(nil); errors.As(err, &ae) {
		s.Refused = ae
	}
	return Result{IsError: true, Summary: &Summary{Kind: KindError, Error: &info}, Facts: &Facts{Cause: s}}
}

// Failure is an error result of a class, worded where it arose, with no report: the Summary
// holds only the error. A call that failed for want of time or capacity may succeed when
// made again.
func Failure(class ErrorClass, text string) Result {
	info := ErrorInfo{Class: class, Message: firstLine(text), Retryable: retryableClass[class]}
	return Result{IsError: true, Summary: &Summary{Kind: KindError, Error: &info}, Facts: &Facts{Cause: said{Detail: text}}}
}

// Said is a result of the given kind worded where it arose (a background consultation's
// state, a listing): text is its message.
func Said(sum *Summary, text string) Result {
	return Result{Summary: sum, Facts: &Facts{Cause: said{Detail: text}}}
}

// retryableClass are the classes whose calls may succeed when made again as they are.
var retryableClass = map[ErrorClass]bool{
	ClassRateLimited: true, ClassOverloaded: true, ClassTimeout: true, ClassIdleTimeout: true, ClassUpstreamError: true,
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
