// Package consultation is the use case behind the `consultation` tool: validate the
// arguments, gather the files, count their tokens, check the budget, and (unless it is a dry
// run) ask the model — all under one deadline per call. It knows nothing of MCP: the server
// adapts to it, so it is tested without one.
package consultation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/leaf/models"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/providers"
)

// Service runs consultations. The zero value is not usable: set Counter.
type Service struct {
	// Counter counts tokens; one per process so its cache is shared by all calls.
	Counter *tokens.Counter
	// DefaultTimeout is the deadline of a call that sets none (consult.DefaultTimeout if 0).
	DefaultTimeout time.Duration
	// DefaultModel is used when a call names no model.
	DefaultModel string
	// Logger receives one line per call; nil discards.
	Logger *slog.Logger
	// Limits bound gathering; zero fields take the defaults in constants.go.
	Limits Limits
	// Model answers consultations; nil refuses every call but dry runs, with NoModel.
	Model Model
	// NoModel explains why Model is nil (e.g. "no API key: set OPENROUTER_API_KEY").
	NoModel string
	// KeyHint names where the API key comes from, for authentication failures.
	KeyHint string
	// Heartbeat is the interval between progress reports (consult.DefaultHeartbeat if 0);
	// it is clamped to at most half the idle timeout.
	Heartbeat time.Duration
	// IdleTimeout cancels a call whose upstream sent nothing for this long; 0 is off. It is
	// clamped to the call's timeout.
	IdleTimeout time.Duration
	// AllowRoots, when set (see ResolveRoots), confines path and output_file to these
	// directories.
	AllowRoots []string
	// Inflight bounds the bytes the calls in flight hold, server-wide; nil is no bound.
	Inflight *Inflight
	// DailyBudgetUSD caps what the consultations of every server sharing Ledger spend per
	// UTC day, in US dollars; 0 is no cap. It needs Ledger.
	DailyBudgetUSD float64
	// LongCache keeps the provider's prompt cache longer where it can be asked to
	// (providers.Request.LongCache): OpenAI's 24 hours, an hour for Anthropic's models
	// through OpenRouter, whose cache writes are priced accordingly.
	LongCache bool
	// Ledger records what each consultation cost, per UTC day; nil records nothing.
	Ledger Ledger
	// Catalog knows models' prices, windows, largest outputs and expiry dates; nil knows
	// none (every model's price and window are unknown).
	Catalog Catalog

	// sent remembers the prompt prefixes sent lately, for estimates that expect a cache hit.
	sent sentPrefixes
	// answers remembers how long the recent answers were, for the expected price.
	answers recentAnswers

	// gather is files.Gather; tests replace it to observe or slow the gathering phase.
	gather func(context.Context, files.Options) (*files.Gathered, error)
	// jitter draws a backoff in [0, d); tests make it deterministic.
	jitter func(d time.Duration) time.Duration
}

// prefetchQueue is how many kept files may wait to be counted while gathering goes on (a
// slice header each); a file past it is counted after gathering, with the rest.
const prefetchQueue = 4096

// Limits bound what one call may gather.
type Limits struct {
	MaxFileBytes  consult.Bytes
	MaxTotalBytes consult.Bytes
	MaxFiles      int
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Service) defaultTimeout() time.Duration { return DefaultTimeout(s.DefaultTimeout) }

// DefaultTimeout is the timeout of a call that sets none on a server configured with d:
// d, or consult.DefaultTimeout when d is zero. The one place the default is resolved: the
// service's calls and the tool declarations (tooldefs) read it here.
func DefaultTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return consult.DefaultTimeout
}

// TimeoutRule is the rule for a consultation's timeout on this service.
func (s *Service) TimeoutRule() SecondsRule { return TimeoutRule(s.defaultTimeout()) }

// ArgRules are the rules of Request's number arguments on this service, for decoding a call.
func (s *Service) ArgRules() []NumberRule { return []NumberRule{s.TimeoutRule().Number(), MaxCost} }

// arrivalKey is the context key of the moment a call's request arrived.
type arrivalKey struct{}

// WithArrival returns ctx carrying the moment the call's request arrived at the server, which
// may be well before Consult runs (the transport's queue): the call's deadline runs from it.
func WithArrival(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, arrivalKey{}, t)
}

// Arrival is the moment WithArrival put in ctx, or now.
func Arrival(ctx context.Context) time.Time {
	if t, ok := ctx.Value(arrivalKey{}).(time.Time); ok && !t.IsZero() {
		return t
	}
	return time.Now()
}

// Validate checks in against every rule, as Consult does before it reads anything, and
// returns the warnings a call with it would carry (e.g. a long timeout). It opens nothing
// that outlives it. A background engine validates a request with it before it starts a
// worker, and the worker runs it with Run under the same configuration.
func (s *Service) Validate(in Request) ([]string, error) {
	req, err := s.check(in)
	req.close()
	return req.Warnings, err
}

// check validates in and applies the server's confinement and default model.
func (s *Service) check(in Request) (request, error) {
	req, err := in.validate(s.defaultTimeout())
	if err == nil {
		err = checkAllowed(&req, s.AllowRoots)
	}
	if err != nil {
		return req, err
	}
	if req.Model.ID == "" && s.DefaultModel != "" {
		if req.Model, err = models.ParseSpec(s.DefaultModel); err != nil {
			req.close()
			return req, &configError{"the server's default model is invalid: " + err.Error()}
		}
	}
	return req, nil
}

// configError is a failure of the server's own configuration, not of the call.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// Consult runs one call. The deadline runs from the moment the request arrived (WithArrival;
// else now) and covers everything, the time the call waited included; when it passes, work
// stops at once and the result says what was collected. A request that breaks a rule is
// refused (a *consult.ArgError, class invalid_argument) before any file is read. r
// receives progress and notable events while the call runs (nil: nobody listens); nothing
// is sent to it after Consult returns. on_timeout is not acted on here: a consultation that
// is to go on past its call is the background engine's, which runs it with Run.
func (s *Service) Consult(ctx context.Context, in Request, r Reporter) Result {
	start := Arrival(ctx)
	req, err := s.check(in)
	if err != nil {
		return s.refused(err)
	}
	ctx, cancel := withCallDeadline(ctx, start, req.Timeout)
	defer cancel()
	return s.run(ctx, req, start, req.Timeout, r)
}

// Run runs one consultation under ctx's deadline alone (a background worker's limit), with
// no timeout of its own: the same rules as Consult otherwise. The call started at start (the
// background limit runs from it; zero is now).
func (s *Service) Run(ctx context.Context, in Request, start time.Time, r Reporter) Result {
	if start.IsZero() {
		start = time.Now()
	}
	req, err := s.check(in)
	if err != nil {
		return s.refused(err)
	}
	req.Warnings = nil // the call that started it carried them
	return s.run(ctx, req, start, budgetOf(ctx).left(), r)
}

func (s *Service) refused(err error) Result {
	s.logger().Info("consultation refused", "reason", err.Error())
	var ce *configError
	if errors.As(err, &ce) {
		return Failure(ClassInternal, ce.msg)
	}
	return FailureOf(err)
}

// run is a validated call that may take up to d (its timeout, or what is left of a
// background limit) under ctx's deadline.
func (s *Service) run(ctx context.Context, req request, start time.Time, d time.Duration, r Reporter) Result {
	l := liveRulesOf(s.IdleTimeout, s.Heartbeat, d)
	if l.clamped && !req.Continue {
		req.Warnings = append(req.Warnings, fmt.Sprintf("the server's idle timeout (%s) is longer than this call's timeout; it is clamped to %s", consult.FormatDuration(s.IdleTimeout), consult.FormatDuration(d)))
		s.logger().Warn("idle timeout longer than the call's timeout: clamped", "idle_timeout", s.IdleTimeout, "timeout", d)
	}
	c := &call{svc: s, req: req, start: start, progress: &tracker{start: start, model: req.Model.ID,
		logger: s.logger(), counter: s.Counter, inflight: s.Inflight, reporter: r},
		cost:  pricing{spec: req.Model, answers: &s.answers, catalog: s.Catalog},
		spend: spend{ledger: s.Ledger, logger: s.logger()}}
	note := func(w string) { c.req.Warnings = append(c.req.Warnings, w) } // in the result, not told now
	c.cost.note, c.spend.note = note, note
	ctx, c.cancel = context.WithCancelCause(ctx)
	defer c.cancel(nil)
	c.progress.setPhase(PhaseQueued)
	c.idle = l.idle
	for _, w := range c.req.Warnings {
		c.progress.log(LevelWarning, w)
	}
	hb := c.progress.startHeartbeat(ctx, l.interval) // the first report, warnings and all, at once
	res := c.run(ctx)
	hb.halt()
	res.Answer = c.answerText
	res.Digests = c.digests
	if res.Summary != nil {
		res.Summary.Warnings = append(res.Summary.Warnings, c.req.Warnings...)
	}
	s.logger().Info("consultation done", "path", req.Path, "pattern", req.Pattern, "dry_run", req.DryRun,
		"error", res.IsError, "elapsed", time.Since(start).Round(time.Millisecond))
	return res
}

// call is the state of one consultation.
type call struct {
	svc      *Service
	req      request
	start    time.Time
	progress *tracker                // what the client hears while the call runs
	cancel   context.CancelCauseFunc // the idle watch and consultation_cancel use it
	idle     time.Duration           // the idle timeout; 0 is off

	gathered   *files.Gathered
	digests    map[string]string // the gathered files' SHA-256, by path
	counts     []consult.Tokens
	overhead   consult.Tokens
	failed     []Attempt
	fileSet    string  // FileSetKey of the gathered files
	cost       pricing // what the request costs, once the model is looked up
	spend      spend   // the call's account with the daily budget's ledger
	answerText string  // the full (or partial) answer once the call ends, for the results directory
}

// run takes the call through the stages of a consultation, in order: queued (admit),
// gathering, counting, looking up the model and pricing; a dry run ends there, and consult
// checks what was priced, sends it and makes the result.
func (c *call) run(ctx context.Context) Result {
	defer c.req.close()
	if err := ctx.Err(); err != nil { // cancelled or out of time while queued: do nothing at all
		return c.stopped(ctx)
	}
	held, err := c.admit(ctx)
	if err != nil { // admission waits for room or ctx's end, never longer: it asks at most the whole bound
		return c.stopped(ctx)
	}
	defer held.release()
	c.progress.setPhase(PhaseGathering)
	gather := c.svc.gather
	if gather == nil {
		gather = files.Gather
	}
	// The files kept are counted while the rest are gathered: the count below finds them
	// in the counter's cache.
	prefetch, stopPrefetch := c.svc.Counter.Prefetch(prefetchQueue)
	// A dry run sends nothing and keeps no record: it needs digests only to predict a
	// cache hit, when something was sent within cacheTTL.
	digests := !c.req.DryRun || !c.svc.sent.empty()
	g, err := gather(ctx, files.Options{
		Root: c.req.Path, Opened: c.req.tree, Pattern: c.req.Pattern, Exclude: c.req.Exclude,
		MaxFileBytes: c.svc.Limits.MaxFileBytes, MaxTotalBytes: c.svc.Limits.MaxTotalBytes, MaxFiles: c.svc.Limits.MaxFiles,
		Kept: prefetch, Digests: digests,
	})
	stopPrefetch()
	c.gathered = g
	if g != nil && digests {
		c.digests = Digests(g.Files)
		c.fileSet = fileSetKey(c.digests)
	}
	if ctx.Err() != nil {
		return c.stopped(ctx)
	}
	if err != nil {
		return c.fail(ErrorInfo{Class: gatherClass(err)}, gatherFailed{Path: c.req.Path, Detail: err.Error()}, nil)
	}
	if need := memoryPerByte * int64(g.Bytes); held != nil && need > int64(c.svc.Inflight.Limit()) {
		return c.fail(ErrorInfo{Class: ClassTooLarge, Message: ErrOverInflight.Error()},
			overInflight{Need: consult.Bytes(need), Limit: c.svc.Inflight.Limit()}, c.report())
	}
	held.shrink(memoryPerByte * int64(g.Bytes))
	c.progress.setPhase(PhaseCounting)
	contents := make([][]byte, len(g.Files))
	for i, f := range g.Files {
		contents[i] = f.Content
	}
	c.counts, err = c.svc.Counter.CountAll(ctx, contents)
	if ctx.Err() != nil {
		return c.stopped(ctx)
	}
	if err != nil {
		return c.fail(ErrorInfo{Class: ClassInternal}, countFailed{Detail: err.Error()}, nil)
	}
	c.overhead = c.svc.Counter.CountString(files.Layout(headersOnly(g.Files), c.req.Query))
	if len(g.Files) == 0 {
		rep := c.report()
		if over, _ := overCapCount(rep); over > 0 {
			return c.fail(ErrorInfo{Class: ClassTooLarge}, overCap{}, rep)
		}
		return c.fail(ErrorInfo{Class: ClassNotFound}, noMatch{}, rep)
	}
	c.progress.setPhase(PhaseLookup)
	m, warnings, err := lookupModel(ctx, c.svc.Catalog, c.req.Model.ID, c.svc.DefaultModel)
	if err != nil {
		if ctx.Err() != nil {
			return c.stopped(ctx)
		}
		return c.fail(ErrorInfo{Class: ClassInvalidArgument}, modelUnavailable{Detail: err.Error()}, c.report())
	}
	c.cost.model = m
	for _, w := range warnings { // told now, and in the result
		c.req.Warnings = append(c.req.Warnings, w)
		c.progress.log(LevelWarning, w)
	}
	if ctx.Err() != nil {
		return c.stopped(ctx)
	}
	rep := c.report()
	c.cost.estimateCost(rep, c.svc.LongCache, func() bool { return c.cacheHitExpected(rep) })
	c.progress.sized.Store(rep)
	if c.req.DryRun {
		sum := c.summary(KindDryRun, rep)
		sum.Report = rep
		return Result{Summary: sum}
	}
	return c.consult(ctx, rep)
}

// admit reserves the call's bytes in flight before it gathers (see inflight.go),
// waiting in line if they do not fit; nil, nil without a bound. An error is ctx's end.
func (c *call) admit(ctx context.Context) (*reservation, error) {
	f := c.svc.Inflight
	if f == nil {
		return nil, nil
	}
	limit := cmp.Or(max(c.svc.Limits.MaxTotalBytes, 0), consult.MaxTotalBytes)
	need := min(memoryPerByte*int64(limit), f.limit)
	r, err := f.reserve(ctx, need, func() {
		c.progress.queued.Store(true)
		c.svc.logger().Info("call queued for room under the bound on bytes in flight", "need", consult.Bytes(need), "bound", f.Limit())
		c.progress.hb.Load().poke() // the client hears at once that it waits
	})
	c.progress.queued.Store(false)
	return r, err
}

// gatherClass classifies a gathering failure: a bad pattern or a root that may not be
// gathered is the caller's; a missing or forbidden root says so; too many ignore patterns
// is a tree too large to apply.
func gatherClass(err error) ErrorClass {
	switch {
	case errors.Is(err, files.ErrBadPattern), errors.Is(err, files.ErrVCSDir):
		return ClassInvalidArgument
	case errors.Is(err, files.ErrIgnoreFiles):
		return ClassTooLarge
	case errors.Is(err, fs.ErrNotExist):
		return ClassNotFound
	case errors.Is(err, fs.ErrPermission):
		return ClassPermissionDenied
	}
	return ClassInternal
}

// headersOnly returns the files without their contents, so the prompt layout of it is the
// per-file headers plus the query: the tokens a request adds to the files themselves.
func headersOnly(fs []files.File) []files.File {
	out := make([]files.File, len(fs))
	for i, f := range fs {
		out[i] = files.File{Path: f.Path, Size: f.Size}
	}
	return out
}

// report sizes what the call has gathered and counted so far.
func (c *call) report() *Report {
	rep := buildReport(c.req, c.gathered, c.counts, c.overhead)
	rep.Counting = tokens.Encoding
	rep.setWindow(c.cost.model.Window, c.gathered, c.counts)
	rep.Cost = c.cost.estimate
	return rep
}

// cacheHitExpected says whether the call's files were sent to its model within cacheTTL,
// and are large enough for the provider to cache.
func (c *call) cacheHitExpected(rep *Report) bool {
	if rep.Tokens < cacheMinimum(c.req.Model.ID) || c.svc.sent.empty() {
		return false
	}
	return c.fileSet != "" && c.svc.sent.seen(prefixKey(c.req.Model.ID, c.fileSet), time.Now())
}

// consult sends the gathered files and the query to the model and turns the outcome into
// a result.
func (c *call) consult(ctx context.Context, rep *Report) Result {
	c.progress.setPhase(PhaseChecking)
	if c.svc.Model == nil {
		return c.fail(ErrorInfo{Class: ClassUnauthenticated}, noProvider{Detail: c.svc.NoModel}, rep)
	}
	if c.req.Model.ID == "" {
		return c.fail(ErrorInfo{Class: ClassInvalidArgument}, noModel{}, rep)
	}
	if rep.Fits != nil && !*rep.Fits {
		return c.fail(ErrorInfo{Class: ClassTooLarge}, tooLarge{}, rep)
	}
	if info, cause := c.spend.reserve(ctx, &c.cost, c.req.MaxCostUSD, c.svc.DailyBudgetUSD); cause != nil {
		return c.fail(info, cause, rep)
	}
	defer c.spend.settle(ctx, 0, c.cost.estimate) // a hold the call did not settle (nothing was sent) is released
	if est := c.cost.estimate; est != nil {
		// For the next report: one sent now could reach an HTTP client before the first
		// (mcp-go), which must stay first (it carries the call's warnings).
		note := est.figures()
		c.progress.costNote.Store(&note)
	}
	preq, err := modelRequest(c.svc.Model, c.req, c.gathered.Files, c.cost.limit, c.fileSet, c.cost.breakpoint, c.svc.LongCache)
	if err != nil {
		return c.upstreamFailure(err, nil, rep, nil)
	}
	ctx = c.progress.alive.watch(ctx)
	if c.idle > 0 {
		go watchIdle(ctx, &c.progress.alive, c.idle, c.cancel)
	}
	resp, failed, gaveUp, err := streamWithRetries(ctx, c.svc.Model, preq, c.progress, c.svc.jitter)
	c.failed = failed
	if resp != nil && (resp.Usage.Reported || resp.Text != "") {
		c.svc.sent.note(prefixKey(c.req.Model.ID, c.fileSet), time.Now()) // for the next estimate's cache hit
	}
	c.spend.settle(ctx, c.cost.spendOf(resp), c.cost.estimate)
	if ctx.Err() != nil {
		return c.stopped(ctx)
	}
	if err != nil {
		return c.upstreamFailure(err, resp, rep, gaveUp)
	}
	return c.answer(resp, rep)
}

// answer builds the successful result: the answer (or where it was written); or, when the
// model stopped without a usable answer, the error that says why.
func (c *call) answer(resp *providers.Response, rep *Report) Result {
	if res, failed := c.stopFailure(resp, rep); failed {
		return res
	}
	sum := c.summary(KindAnswer, rep)
	sum.Model = cmp.Or(resp.Model, c.req.Model.ID)
	sum.Usage = c.cost.usageOf(resp)
	if u := resp.Usage; u.Reported && !resp.Truncated {
		c.svc.answers.note(answerKey(c.req.Model), u.Output+u.Reasoning) // for the next call's expected price
	}
	sum.StopReason = resp.StopReason
	sum.Truncated = resp.Truncated
	sum.Withheld, sum.Redacted = rep.Withheld, rep.Redacted
	if resp.Truncated {
		switch {
		case resp.Finish == providers.FinishAnswerCap:
			sum.TruncatedBy = TruncatedByAnswerCap
		case c.cost.estimate.capped():
			sum.TruncatedBy = TruncatedByCostCap
		default:
			sum.TruncatedBy = TruncatedByOutputLimit
		}
	}
	c.answerText = resp.Text
	f := &Facts{UnknownStop: !knownStops[resp.Finish]}
	if c.req.OutputFile == "" {
		sum.Answer = resp.Text
		return Result{Summary: sum, Facts: f}
	}
	written, err := writeNew(c.req.OutputFile, c.req.output, resp.Text)
	if err != nil {
		class := ClassInternal
		if errors.Is(err, fs.ErrPermission) {
			class = ClassPermissionDenied
		}
		res := c.fail(ErrorInfo{Class: class}, writeFailed{Detail: err.Error()}, rep)
		res.Summary.Answer = resp.Text
		return res
	}
	sum.OutputFile = written
	f.Written = consult.Bytes(len(resp.Text))
	if written != c.req.OutputFile {
		f.Requested = c.req.OutputFile
	}
	return Result{Summary: sum, Facts: f}
}

// stopFailure turns a stream that ended normally but without a usable answer into an error:
// a safety or policy filter, a refusal, or the output limit reached before any answer. Any
// text that came is kept, marked as cut. ok is false for an answer to return as one.
func (c *call) stopFailure(resp *providers.Response, rep *Report) (res Result, ok bool) {
	info := ErrorInfo{ProviderCode: resp.StopReason}
	var cause Cause
	partialWhy := ""
	switch {
	case resp.Refusal != "" && strings.TrimSpace(resp.Text) == "":
		info.Class, cause = ClassContentFiltered, refusal{Refusal: resp.Refusal}
	case resp.Finish == "content_filter":
		info.Class, cause, partialWhy = ClassContentFiltered, answerFiltered{StopDetail: resp.StopDetail}, "cut by the content filter"
	case resp.Finish == "length" && strings.TrimSpace(resp.Text) == "":
		info.Class, cause = ClassOutputLimit, noAnswer{}
	default:
		return Result{}, false
	}
	res = c.fail(info, cause, rep)
	res.Facts.PartialWhy = partialWhy
	sum := res.Summary
	sum.Answer, sum.Usage, sum.StopReason = resp.Text, c.cost.usageOf(resp), resp.StopReason
	sum.Model = cmp.Or(resp.Model, c.req.Model.ID)
	c.answerText = resp.Text
	return res, true
}

// upstreamFailure is a failed model call's result, keeping any answer that had arrived.
func (c *call) upstreamFailure(err error, resp *providers.Response, rep *Report, gaveUp *GaveUp) Result {
	detail, partialWhy := err.Error(), "cut off by the failure"
	var cause Cause
	var pe *providers.Error
	switch {
	case gaveUp != nil:
		cause = noMoreAttempts{Phase: c.progress.phaseNow(), Elapsed: time.Since(c.start), GaveUp: gaveUp, Failed: c.failed}
	case errors.Is(err, providers.ContextLength):
		rep.Refused = true
		cl := contextLength{Detail: detail}
		if errors.As(err, &pe) {
			cl.Overflow = pe.Overflow
		}
		cause = cl
	case errors.Is(err, providers.OutputLimit):
		cause, partialWhy = outputLimit{Detail: detail}, "cut off by the output limit"
	case errors.Is(err, providers.ContentFiltered):
		cause = filtered{Detail: detail}
	case errors.As(err, &pe) && pe.Quota != nil && pe.Quota.Period == providers.PerDay:
		cause = dailyQuota{Detail: detail}
	case errors.As(err, &pe) && pe.Kind == providers.Auth:
		// The provider's own words, without the error's generic advice: the advice is given
		// once, naming where this server's key comes from.
		cause = authRejected{Provider: pe.Provider, Status: pe.Status, Detail: pe.Message, KeyHint: c.svc.KeyHint}
	default:
		cause = upstreamFailed{Phase: c.progress.phaseNow(), Detail: detail, Failed: c.failed}
	}
	res := c.fail(errorInfo(err), cause, rep)
	res.Facts.PartialWhy = partialWhy
	res.Summary.Answer = partialText(resp)
	if resp != nil && resp.Usage.Reported {
		res.Summary.Usage = c.cost.usageOf(resp) // tokens spent are billed, failure or not
	}
	c.answerText = partialText(resp)
	return res
}

// stopped is the result of a call whose context ended: its own deadline, its idle timeout,
// a cause its caller defines (Stop), or the client cancelling; with what it had collected.
func (c *call) stopped(ctx context.Context) Result {
	rep := c.report()
	cause := context.Cause(ctx)
	st := stopState{Phase: c.progress.phaseNow(), Elapsed: time.Since(c.start), NothingGathered: c.gathered == nil,
		Attempt: int(c.progress.attempts.Load()), Failed: c.failed}
	var stop Stop
	idle, timeout := errors.Is(cause, ErrIdleTimeout), errors.Is(cause, ErrCallTimeout)
	if !idle && !timeout && !errors.As(cause, &stop) {
		return c.fail(ErrorInfo{Class: ClassCancelled}, cancelled{Phase: st.Phase, Elapsed: st.Elapsed}, rep)
	}
	partial := ""
	if live := c.progress.live.Load(); live != nil {
		partial, st.Reasoning, _ = live.snapshot()
	}
	var why Cause
	partialWhy := "cut off at the deadline"
	switch {
	case idle:
		why = idleTimeout{stopState: st, Idle: c.idle}
	case timeout:
		why = timedOut{stopState: st, Timeout: c.req.Timeout}
	default:
		s := stoppedBy{stopState: st}
		s.Headline, partialWhy, s.Advice = stop.Words(st.Phase, consult.FormatDuration(st.Elapsed))
		why = s
	}
	c.answerText = partial
	info := errorInfo(cause)
	info.Message = "" // the words' first line: the timeout used, the phase
	res := c.fail(info, why, rep)
	res.Summary.Answer, res.Facts.PartialWhy = partial, partialWhy
	return res
}

// summary starts a Summary of this call with the gathering figures filled in.
func (c *call) summary(kind string, rep *Report) *Summary {
	s := &Summary{
		Kind: kind, Model: c.req.Model.ID, Attempts: int(c.progress.attempts.Load()),
		ElapsedSeconds: time.Since(c.start).Round(time.Millisecond).Seconds(),
	}
	if rep != nil {
		s.Files, s.Bytes, s.PromptTokens = rep.Files, rep.Bytes, rep.PromptTokens
	}
	s.Estimate = c.cost.estimate
	return s
}

// fail is a failed call's result: info's class, its cause, the report attached. Render
// words it; info's message is its first line when it has none.
func (c *call) fail(info ErrorInfo, cause Cause, rep *Report) Result {
	s := c.summary(KindError, rep)
	s.Phase = c.progress.phaseNow()
	s.Report = rep
	s.Error = &info
	return Result{IsError: true, Summary: s, Facts: &Facts{Cause: cause}}
}
