package providers

import (
	"cmp"
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
	// When the provider names the quota (Error.Quota) and it is a daily one, waiting
	// seconds does not lift it and the error is not retryable.
	RateLimited Kind = "rate limited"
	// Overloaded: the provider or model is overloaded (HTTP 503/529 or an in-band error).
	Overloaded Kind = "overloaded"
	// Server: any other 5xx, or an in-band server error.
	Server Kind = "server error"
	// Auth: the key was rejected (HTTP 401/403, Gemini API_KEY_INVALID).
	Auth Kind = "authentication failed"
	// Billing: the account has no credit left (HTTP 402).
	Billing Kind = "payment required"
	// BadRequest: the provider refused the request as invalid (HTTP 400, 422 and any other
	// 4xx no other kind names; an in-band error of type invalid_request_error): a client
	// error, such as thinking settings the model does not take. Sending the same request
	// again gets the same answer, so it is never retryable.
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
	// Quota is the quota a rate-limit error names (Gemini's google.rpc.QuotaFailure), nil
	// when the provider named none.
	Quota *Quota
	// Overflow holds the figures a context-length refusal states in the provider's own
	// count (its window, the prompt, the answer reservation), nil when it gave none.
	Overflow *Overflow
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
	if q := e.Quota; q != nil && q.Period == PerDay {
		fmt.Fprintf(&b, "; the daily quota %s", consult.Printable(q.ID))
		if q.Limit > 0 {
			fmt.Fprintf(&b, " (limit %s)", consult.Thousands(q.Limit))
		}
		fmt.Fprintf(&b, " is used up: %s, so retrying sooner will not help", q.resetNote(e.Provider))
	}
	if o := e.Overflow; o != nil && o.ReservationTipped() {
		fmt.Fprintf(&b, "; the prompt alone (%s tokens) fits the %s-token window: the %s tokens reserved for the answer tipped it over",
			o.Prompt, o.Window, o.Completion)
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

// Retryable reports whether err may be sent again: transport failures before the answer
// started, upstream timeouts (408/504), rate limits (429), overload and other 5xx, in-band
// or not. Never after part of the answer arrived, never for a cancelled call, never for a
// daily quota, and never for 400, 401/403, 402, 404, context-length or output-limit errors.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Partial {
		return false
	}
	if e.Quota != nil && e.Quota.Period == PerDay {
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
	contextLengthRE = regexp.MustCompile(`(?i)context[ _-]?length|context window|context limit|tokens exceed the configured limit|maximum number of tokens|too many tokens|prompt is too long|input is too long|reduce the length`)
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

// finished completes a converted error: the figures a context-length refusal's message
// states, and no retry delay for a daily quota (waiting seconds does not lift it).
func finished(e *Error, message string) *Error {
	if e.Kind == ContextLength {
		e.Overflow = parseOverflow(message)
	}
	if e.Quota != nil && e.Quota.Period == PerDay {
		e.RetryAfter = 0
	}
	return e
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
	return cmp.Or(parseRetryAfter(h, now), rateLimitReset(h), retryInText(message))
}

// rateLimitReset reads OpenAI's x-ratelimit-reset-* headers: the reset of the limits whose
// remaining count is 0, the longest of them; when none says 0, the earliest reset.
func rateLimitReset(h http.Header) time.Duration {
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

// QuotaPeriod is how often a quota resets.
type QuotaPeriod string

// The quota periods providers name.
const (
	PerMinute QuotaPeriod = "minute"
	PerHour   QuotaPeriod = "hour"
	PerDay    QuotaPeriod = "day"
)

// Quota is a quota the provider says the request exceeded: a violation of Gemini's
// google.rpc.QuotaFailure (QuotaFailure.Violation in googleapis google/rpc/error_details.proto).
type Quota struct {
	// ID is the provider's id of the quota ("GenerateRequestsPerDayPerProjectPerModel-FreeTier").
	ID string
	// Metric is what the quota counts
	// ("generativelanguage.googleapis.com/generate_content_free_tier_requests").
	Metric string
	// Limit is the quota's value (25 requests a day); 0 when the provider did not say.
	Limit int64
	// Period is how often the quota resets, read from its id ("PerDay", "PerMinute",
	// "free-models-per-day"); "" when the id does not say. Gemini's daily quotas reset at
	// midnight Pacific time (ai.google.dev/gemini-api/docs/rate-limits).
	Period QuotaPeriod
	// ResetsAt is when the quota resets, when the provider said (OpenRouter's
	// X-RateLimit-Reset); zero otherwise.
	ResetsAt time.Time
}

// resetNote says when a daily quota resets: at the time the provider gave, else at
// Gemini's documented reset.
func (q *Quota) resetNote(provider string) string {
	switch {
	case !q.ResetsAt.IsZero():
		return "it resets at " + q.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
	case provider == NameGemini:
		return "it resets at midnight Pacific time"
	}
	return "it resets once a day"
}

// quotaPeriodRE finds the period in a quota id: Gemini's
// "GenerateRequestsPerDayPerProjectPerModel-FreeTier", OpenRouter's "free-models-per-min".
var quotaPeriodRE = regexp.MustCompile(`(?i)per-?(day|hour|min)`)

// quotaPeriod is the period a quota id names, "" when it names none.
func quotaPeriod(id string) QuotaPeriod {
	if m := quotaPeriodRE.FindStringSubmatch(id); m != nil {
		return map[string]QuotaPeriod{"day": PerDay, "hour": PerHour, "min": PerMinute}[strings.ToLower(m[1])]
	}
	return ""
}

// periodRank orders periods by how long they take to reset.
var periodRank = map[QuotaPeriod]int{PerMinute: 1, PerHour: 2, PerDay: 3}

// parseQuota reads the google.rpc.QuotaFailure violations in Gemini error details and
// returns the one that resets last (a daily quota before a per-minute one), nil when there
// is none.
func parseQuota(details []map[string]any) *Quota {
	var best *Quota
	for _, d := range details {
		t, _ := d["@type"].(string)
		if !strings.HasSuffix(t, "google.rpc.QuotaFailure") {
			continue
		}
		violations, _ := d["violations"].([]any)
		for _, raw := range violations {
			v, _ := raw.(map[string]any)
			q := &Quota{}
			q.ID, _ = v["quotaId"].(string)
			q.Metric, _ = v["quotaMetric"].(string)
			if q.ID == "" && q.Metric == "" {
				continue
			}
			if f, ok := toFloat(v["quotaValue"]); ok && f > 0 && f < 1e15 {
				q.Limit = int64(f)
			}
			q.Period = quotaPeriod(q.ID)
			if best == nil || periodRank[q.Period] > periodRank[best.Period] {
				best = q
			}
		}
	}
	return best
}

// Overflow is what a context-length refusal says of the request, in the provider's own
// tokens. Fields the refusal did not state are 0.
type Overflow struct {
	// Window is the limit the provider applied: the model's context length, or the input
	// limit it names ("the configured limit of 272000 tokens").
	Window consult.Tokens
	// Prompt is the request's input as the provider counted it (messages, tools and other
	// input together).
	Prompt consult.Tokens
	// Completion is the room the request reserved for the output (its max_tokens), as the
	// provider counted it.
	Completion consult.Tokens
	// Requested is the total the provider says the request came to; Prompt + Completion
	// when it stated only those.
	Requested consult.Tokens
}

// ReservationTipped reports whether the prompt alone fits the window and the room reserved
// for the answer pushed the request over it: a smaller output limit, not a smaller prompt,
// would have let it through.
func (o *Overflow) ReservationTipped() bool {
	return o != nil && o.Window > 0 && o.Prompt > 0 && o.Completion > 0 &&
		o.Prompt <= o.Window && o.Prompt+o.Completion > o.Window
}

// The figures of context-length refusals, as the providers word them (see TestParseOverflow
// for a message of each). A number may have thousands separators.
var (
	overflowWindowRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)maximum context length (?:is|of) ([0-9][0-9,]*) tokens`),
		regexp.MustCompile(`(?i)configured limit of ([0-9][0-9,]*) tokens`),
		regexp.MustCompile(`(?i)maximum number of tokens allowed \(([0-9][0-9,]*)\)`),
		regexp.MustCompile(`(?i)context limit: [0-9][0-9,]* \+ [0-9][0-9,]* > ([0-9][0-9,]*)`),
		regexp.MustCompile(`(?i)prompt is too long: [0-9][0-9,]* tokens > ([0-9][0-9,]*) maximum`),
	}
	overflowPromptRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)([0-9][0-9,]*) in (?:the messages|the functions|the tools|your prompt)\b`),
		regexp.MustCompile(`(?i)([0-9][0-9,]*) of [a-z]+ input\b`),
		regexp.MustCompile(`(?i)messages resulted in ([0-9][0-9,]*) tokens`),
		regexp.MustCompile(`(?i)input token count \(([0-9][0-9,]*)\)`),
		regexp.MustCompile(`(?i)([0-9][0-9,]*) tokens from the input`),
		regexp.MustCompile(`(?i)context limit: ([0-9][0-9,]*) \+`),
		regexp.MustCompile(`(?i)prompt is too long: ([0-9][0-9,]*) tokens`),
	}
	overflowCompletionRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)([0-9][0-9,]*) (?:in the (?:completion|output)|(?:tokens )?for the completion)\b`),
		regexp.MustCompile(`(?i)context limit: [0-9][0-9,]* \+ ([0-9][0-9,]*) >`),
	}
	overflowRequestedRE = regexp.MustCompile(`(?i)requested (?:about |a total of )?([0-9][0-9,]*) tokens`)
)

// parseOverflow reads the figures of a context-length refusal from the provider's message;
// nil when it states none.
func parseOverflow(message string) *Overflow {
	num := func(s string) consult.Tokens {
		n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return consult.Tokens(n)
	}
	first := func(res []*regexp.Regexp) consult.Tokens {
		for _, re := range res {
			if m := re.FindStringSubmatch(message); m != nil {
				return num(m[1])
			}
		}
		return 0
	}
	o := &Overflow{Window: first(overflowWindowRE), Completion: first(overflowCompletionRE)}
	// The input may come in parts ("3703 in the messages, 120 in the functions"; "358454
	// of text input, 56529 of tool input"): they add up. The first pattern that matches
	// gives all of them.
	for _, re := range overflowPromptRE {
		if ms := re.FindAllStringSubmatch(message, -1); ms != nil {
			for _, m := range ms {
				o.Prompt += num(m[1])
			}
			break
		}
	}
	if m := overflowRequestedRE.FindStringSubmatch(message); m != nil {
		o.Requested = num(m[1])
	} else {
		o.Requested = o.Prompt + o.Completion
	}
	if *o == (Overflow{}) {
		return nil
	}
	return o
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
		s = runePrefix(s, maxMessage) + "…"
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

// codeString renders a JSON error code that may be a string, a number (as written) or
// null.
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil { // null leaves s empty
		return s
	}
	return string(raw)
}
