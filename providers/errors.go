package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/consultmcp/consult"
)

// Kind classifies a provider failure. A Kind is itself an error, so
// errors.Is(err, providers.RateLimited) reports whether err is an [*Error] of that kind.
type Kind string

// The kinds of failure.
const (
	// Transport: the connection failed (refused, reset, cut mid-stream, ended without a
	// finish) or the stream could not be decoded.
	Transport Kind = "transport error"
	// UpstreamTimeout: the provider timed out (HTTP 408 or 504).
	UpstreamTimeout Kind = "upstream timeout"
	// RateLimited: HTTP 429 or a quota error; RetryAfter says when to try again if known.
	RateLimited Kind = "rate limited"
	// Overloaded: the provider or model is overloaded (HTTP 503/529 or an in-band error).
	Overloaded Kind = "overloaded"
	// Server: any other 5xx, or an in-band server error.
	Server Kind = "server error"
	// Auth: the key was rejected (HTTP 401/403, Gemini API_KEY_INVALID).
	Auth Kind = "authentication failed"
	// Billing: the account has no credit left (HTTP 402).
	Billing Kind = "payment required"
	// BadRequest: the provider refused the request as malformed.
	BadRequest Kind = "bad request"
	// NotFound: the model does not exist (HTTP 404 or an invalid model id).
	NotFound Kind = "model not found"
	// ContextLength: the prompt is larger than the model's context window.
	ContextLength Kind = "context length exceeded"
	// Canceled: the call's context ended (deadline, cancellation, idle timeout).
	Canceled Kind = "canceled"
	// OutputLimit: the model reached its output-token limit and the stream ended in an error
	// (a reasoning model that spent the limit thinking). Sending it again would spend the
	// same tokens on the same end.
	OutputLimit Kind = "output limit reached"
	// ContentFiltered: the provider's safety or policy filter refused the prompt (Gemini's
	// promptFeedback.blockReason).
	ContentFiltered Kind = "blocked by the provider's content filter"
)

// Error implements error so that a Kind can be the target of errors.Is.
func (k Kind) Error() string { return string(k) }

// Error is a provider failure. Its message never contains the API key.
type Error struct {
	// Provider is the provider's name in [Registry] ("openrouter", "openai", "gemini").
	Provider string
	// Kind classifies the failure.
	Kind Kind
	// Status is the HTTP status, 0 for transport failures and in-band stream errors.
	Status int
	// Code is the provider's error code or status when it sent one
	// ("context_length_exceeded", "RESOURCE_EXHAUSTED", "502").
	Code string
	// Message is the provider's message (key redacted, shortened) or a description of the
	// transport failure.
	Message string
	// RetryAfter is how long the provider asked us to wait (Retry-After, retry-after-ms,
	// Gemini retryDelay); 0 when it did not say.
	RetryAfter time.Duration
	// Partial is true when part of the answer had arrived before the failure.
	Partial bool
	// InBand is true when the error arrived inside a 200 stream.
	InBand bool
	// Err is the underlying cause, if any (for Canceled: ctx.Err()).
	Err error
	// cause is context.Cause for Canceled errors when it differs from Err.
	cause error
}

// Error describes the failure in one line: provider, kind, status, message and, for
// authentication failures, the advice to check the key.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(string(e.Kind))
	switch {
	case e.Status != 0 && e.Code != "" && e.Code != strconv.Itoa(e.Status):
		fmt.Fprintf(&b, " (HTTP %d, %s)", e.Status, consult.Printable(e.Code))
	case e.Status != 0:
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	case e.Code != "":
		fmt.Fprintf(&b, " (%s)", consult.Printable(e.Code))
	}
	if e.InBand {
		b.WriteString(" in the stream")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Partial {
		b.WriteString(" (after part of the answer had arrived)")
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", consult.FormatDuration(e.RetryAfter))
	}
	if e.Kind == Auth {
		fmt.Fprintf(&b, "; check the API key (the key argument or %s)", keyEnv(e.Provider))
	}
	if e.Kind == Billing {
		b.WriteString("; check the account's credit")
	}
	return b.String()
}

// Unwrap returns the underlying cause, and for a Canceled error also the context's cause.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// Is reports whether target is this error's Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// Retryable reports whether err may be sent again, per DESIGN "Retries": transport failures
// before the answer started, upstream timeouts (408/504), rate limits (429), overload and
// other 5xx, in-band or not. Never after part of the answer arrived, never for a cancelled
// call, and never for 400, 401/403, 402, 404 or context-length errors.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Partial {
		return false
	}
	switch e.Kind {
	case Transport, UpstreamTimeout, RateLimited, Overloaded, Server:
		return true
	}
	return false
}

// kindForStatus maps an HTTP status (or an in-band numeric code) to a Kind.
func kindForStatus(status int) Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Auth
	case status == http.StatusPaymentRequired:
		return Billing
	case status == http.StatusNotFound:
		return NotFound
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return UpstreamTimeout
	case status == http.StatusTooManyRequests:
		return RateLimited
	case status == http.StatusServiceUnavailable || status == 529:
		return Overloaded
	case status == http.StatusRequestEntityTooLarge:
		return ContextLength
	case status >= 500:
		return Server
	case status >= 400:
		return BadRequest
	}
	return Server
}

var (
	contextLengthRE = regexp.MustCompile(`(?i)context[ _-]?length|context window|maximum number of tokens|too many tokens|prompt is too long|input is too long|reduce the length`)
	outputLimitRE   = regexp.MustCompile(`(?i)(output|completion|max(imum)?)[ _-]?tokens?\b.{0,40}\b(limit|reached|exceeded)|output token limit|\bMAX_TOKENS\b`)
	overloadRE      = regexp.MustCompile(`(?i)overload|capacity|unavailable|try again later`)
	notFoundRE      = regexp.MustCompile(`(?i)not a valid model|model .*(not found|does not exist)|no endpoints found|is not found`)
	authRE          = regexp.MustCompile(`(?i)api key not valid|invalid api key|incorrect api key|no auth credentials`)
)

// refine adjusts a status-derived kind with what the provider's code and message say: a
// 400 that is really a context-length, key or unknown-model error, a 5xx that says
// "overloaded", OpenAI's 429 insufficient_quota (billing, not a rate limit).
func refine(kind Kind, code, message string) Kind {
	switch strings.ToLower(code) {
	case "context_length_exceeded", "string_above_max_length":
		return ContextLength
	case "invalid_api_key", "unauthenticated":
		return Auth
	case "insufficient_quota":
		return Billing
	case "resource_exhausted", "rate_limit_exceeded":
		return RateLimited
	case "model_not_found":
		return NotFound
	}
	text := code + " " + message
	switch kind {
	case BadRequest:
		switch {
		case contextLengthRE.MatchString(text):
			return ContextLength
		case authRE.MatchString(text):
			return Auth
		case notFoundRE.MatchString(text):
			return NotFound
		}
	case Server:
		switch {
		case outputLimitRE.MatchString(text):
			return OutputLimit
		case overloadRE.MatchString(text):
			return Overloaded
		}
	}
	return kind
}

// canceledError reports that ctx ended during a call.
func canceledError(provider string, ctx context.Context, partial bool) *Error {
	e := &Error{Provider: provider, Kind: Canceled, Partial: partial, Err: ctx.Err()}
	if c := context.Cause(ctx); c != nil && c != e.Err {
		e.cause = c
		e.Message = c.Error()
	} else if e.Err != nil {
		e.Message = e.Err.Error()
	}
	return e
}

// parseRetryAfter reads retry-after-ms, then Retry-After (seconds or an HTTP date).
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// retryHint is how long the provider asked the caller to wait, from whatever it said:
// Retry-After-Ms or Retry-After; for OpenAI-style rate limits the x-ratelimit-reset-requests
// and x-ratelimit-reset-tokens headers ("1s", "6m0s", "20ms") of the limit that is
// exhausted; else a "try again in 1.5s" in the message. 0 when it said nothing.
func retryHint(h http.Header, message string, now time.Time) time.Duration {
	if d := parseRetryAfter(h, now); d > 0 {
		return d
	}
	if d := rateLimitReset(h); d > 0 {
		return d
	}
	return retryInText(message)
}

// rateLimitReset reads OpenAI's x-ratelimit-reset-* headers: the reset of the limits whose
// remaining count is 0, the longest of them; when none says 0, the earliest reset.
func rateLimitReset(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	var exhausted, earliest time.Duration
	for _, which := range []string{"requests", "tokens"} {
		d, err := time.ParseDuration(strings.TrimSpace(h.Get("x-ratelimit-reset-" + which)))
		if err != nil || d <= 0 || d > 24*time.Hour {
			continue
		}
		if strings.TrimSpace(h.Get("x-ratelimit-remaining-"+which)) == "0" {
			exhausted = max(exhausted, d)
		}
		if earliest == 0 || d < earliest {
			earliest = d
		}
	}
	if exhausted > 0 {
		return exhausted
	}
	return earliest
}

// tryAgainRE finds the delay in messages such as OpenAI's "Please try again in 1.5s",
// "try again in 20ms" or "Please retry in 37.2 seconds".
var tryAgainRE = regexp.MustCompile(`(?i)(?:try|retry)(?: again)? in ([0-9]+(?:\.[0-9]+)?) ?(ms|milliseconds?|s|secs?|seconds?|m|min|minutes?)\b`)

// retryInText reads a delay from a provider's message, 0 if it names none.
func retryInText(message string) time.Duration {
	m := tryAgainRE.FindStringSubmatch(message)
	if m == nil {
		return 0
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f <= 0 {
		return 0
	}
	unit := time.Second
	switch u := strings.ToLower(m[2]); {
	case strings.HasPrefix(u, "ms"), strings.HasPrefix(u, "milli"):
		unit = time.Millisecond
	case u == "m" || strings.HasPrefix(u, "min"):
		unit = time.Minute
	}
	d := time.Duration(f * float64(unit))
	if d > 24*time.Hour {
		return 0
	}
	return d
}

// parseRetryDelay reads google.rpc.RetryInfo.retryDelay ("37s", "1.5s") from Gemini error
// details.
func parseRetryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		t, _ := d["@type"].(string)
		if !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		switch v := d["retryDelay"].(type) {
		case string:
			if dur, err := time.ParseDuration(v); err == nil && dur > 0 {
				return dur
			}
		case map[string]any: // {"seconds": 3, "nanos": 0} in some encodings
			secs, _ := toFloat(v["seconds"])
			nanos, _ := toFloat(v["nanos"])
			if d := time.Duration(secs*float64(time.Second) + nanos); d > 0 {
				return d
			}
		}
	}
	return 0
}

// detailReason returns the first google.rpc.ErrorInfo reason in Gemini error details.
func detailReason(details []map[string]any) string {
	for _, d := range details {
		t, _ := d["@type"].(string)
		if strings.HasSuffix(t, "google.rpc.ErrorInfo") {
			if r, ok := d["reason"].(string); ok {
				return r
			}
		}
	}
	return ""
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// maxMessage bounds upstream messages kept in errors: enough for any real explanation,
// short enough that an HTML error page does not flood a tool result.
const maxMessage = 600

var htmlTagRE = regexp.MustCompile(`(?s)<(script|style)[^>]*>.*?</(script|style)>|<[^>]*>`)

var keyLikeRE = regexp.MustCompile(`\b(sk-[A-Za-z0-9_*\-]{6,}|AIza[0-9A-Za-z_\-]{10,})`)

// redactor removes a key from text.
type redactor struct{ key string }

// minKeyPiece is the shortest run of the key's characters that is redacted on its own: a
// provider may echo the key without its prefix ("sk-", "sk-or-v1-") or only part of it, and
// 16 characters of a random key are still a secret, while shorter runs would start matching
// ordinary words.
const minKeyPiece = 16

// clean removes the key and any run of minKeyPiece or more of its characters (and anything
// shaped like a provider key, including the masked forms some providers echo back), strips
// HTML tags, collapses whitespace and shortens the text.
func (r redactor) clean(s string) string {
	if r.key != "" {
		s = strings.ReplaceAll(s, r.key, "[redacted]")
		s = redactPieces(s, r.key)
	}
	s = keyLikeRE.ReplaceAllString(s, "[redacted]")
	if strings.Contains(s, "</") {
		s = htmlTagRE.ReplaceAllString(s, " ") // an HTML error page from a proxy
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return consult.Printable(s)
}

// redactPieces replaces each maximal run of s that is a substring of key and at least
// minKeyPiece bytes long with "[redacted]", in O(len(s)·len(key)).
func redactPieces(s, key string) string {
	if len(key) < minKeyPiece || len(s) < minKeyPiece {
		return s
	}
	grams := make(map[string]struct{}, len(key)-minKeyPiece+1)
	for i := 0; i+minKeyPiece <= len(key); i++ {
		grams[key[i:i+minKeyPiece]] = struct{}{}
	}
	var (
		b         strings.Builder
		from, end int // s[from:end] is the run being redacted; end == from when none
		wrote     int // s[:wrote] has been copied or redacted
	)
	flush := func() {
		if end > from {
			b.WriteString(s[wrote:from])
			b.WriteString("[redacted]")
			wrote = end
		}
	}
	for i := 0; i+minKeyPiece <= len(s); i++ {
		if end < i+minKeyPiece { // no run covers a piece starting at i
			if _, ok := grams[s[i:i+minKeyPiece]]; !ok {
				continue
			}
			if i > end { // a new run, apart from the last one
				flush()
				from = i
			}
			end = i + minKeyPiece
		}
		// s[i:end] is part of key (a suffix of a part): extend it as far as it goes.
		for end < len(s) && strings.Contains(key, s[i:end+1]) {
			end++
		}
	}
	flush()
	if wrote == 0 {
		return s
	}
	b.WriteString(s[wrote:])
	return b.String()
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// codeString renders a JSON error code that may be a string or a number.
func codeString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return string(raw)
}
