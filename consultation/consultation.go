// Package consultation is the use case behind the `consultation` tool: validate the
// arguments, gather the files, count their tokens, check the budget, and (unless it is a dry
// run) ask the model — all under one deadline per call. It knows nothing of MCP: the server
// adapts to it, so it is tested without one.
package consultation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/catalog"
	"github.com/consultmcp/consult/internal/models"
	"github.com/consultmcp/consult/internal/tokens"
	"github.com/consultmcp/consult/providers"
)

// Phase names what a call is doing; timeouts and progress messages report it.
type Phase string

// The phases of a call, in order.
const (
	PhaseValidating Phase = "validating arguments"
	// PhaseQueued: waiting for a worker of the server, or for room under its bound on bytes
	// in flight (Inflight).
	PhaseQueued    Phase = "queued"
	PhaseGathering Phase = "gathering files"
	PhaseCounting  Phase = "counting tokens"
	PhaseLookup    Phase = "looking up the model"
	// PhaseChecking: checking that the request fits the model and its cost the caps, before
	// anything is sent.
	PhaseChecking  Phase = "checking size and cost"
	PhaseWaiting   Phase = "waiting for the first token"
	PhaseReceiving Phase = "receiving the answer"
)

// ErrCallTimeout is the cause of a call's context when its own deadline passes.
var ErrCallTimeout = errors.New("consultation deadline passed")

// Result is what a call returns to the caller, as data: the figures for programs, what its
// words need beyond them, and whether it is a failure. Render words it at the edge.
type Result struct {
	// IsError marks a failed call: bad arguments, timeout, too large, upstream failure.
	IsError bool
	// Summary is the outcome in machine-readable form: kind, id, answer, usage, report,
	// error details. Nil for a plain acknowledgement.
	Summary *Summary
	// Facts are what the outcome's words need beyond the Summary: why it failed, and the
	// figures of that failure.
	Facts *Facts `json:",omitempty"`
	// Answer is the model's answer as received, whole or partial, even when it was written
	// to output_file: what a background consultation keeps in its record.
	Answer string `json:"-"`
	// Digests are the SHA-256 digests (hex) of the gathered files as sent, by path: a
	// follow-up compares them to name the files that changed.
	Digests map[string]string `json:"-"`
}

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

// arrivalKey is the context key of the moment a call's request arrived.
type arrivalKey struct{}

// WithArrival returns ctx carrying the moment the call's request arrived at the server, which
// may be well before Consult runs (the transport's queue): the call's deadline runs from it.
func WithArrival(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, arrivalKey{}, t)
}

// Arrival is the moment WithArrival put in ctx, or now.
func Arrival(ctx context.Context) time.Time { return arrival(ctx) }

func arrival(ctx context.Context) time.Time {
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
	start := arrival(ctx)
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
	l := s.liveRules(d)
	if l.clamped && !req.Continue {
		req.Warnings = append(req.Warnings, fmt.Sprintf("the server's idle timeout (%s) is longer than this call's timeout; it is clamped to %s", consult.FormatDuration(s.IdleTimeout), consult.FormatDuration(d)))
		s.logger().Warn("idle timeout longer than the call's timeout: clamped", "idle_timeout", s.IdleTimeout, "timeout", d)
	}
	c := &call{svc: s, req: req, start: start, reporter: r}
	ctx = c.cancellable(ctx)
	defer c.cancel(nil)
	c.setPhase(PhaseQueued)
	c.idle, c.interval = l.rules()
	for _, w := range c.req.Warnings {
		c.log(LevelWarning, w)
	}
	hb := startHeartbeatNow(ctx, r, c.interval, c) // the first report, warnings and all, at once
	c.setHeartbeat(hb)
	res := c.run(ctx)
	hb.halt()
	res.Answer = c.fullAnswer()
	res.Digests = c.digests
	if res.Summary != nil {
		res.Summary.Warnings = append(res.Summary.Warnings, c.req.Warnings...)
	}
	s.logger().Info("consultation done", "path", req.Path, "pattern", req.Pattern, "dry_run", req.DryRun,
		"error", res.IsError, "elapsed", time.Since(start).Round(time.Millisecond))
	return res
}

// log sends a notable event to the client (while one listens) and the server log.
// A warning also becomes the call's notice: the progress report sent at once after it
// carries it, so a client that shows only progress, or gives up before the result, still
// hears of it.
func (c *call) log(level Level, msg string) {
	c.svc.logger().Info("notice to client", "level", string(level), "message", msg)
	if level == LevelWarning || level == LevelError {
		c.notice.Store(&msg)
	}
	c.mu.Lock()
	if c.reporter != nil {
		c.reporter.Log(level, msg)
	}
	c.hb.poke()
	c.mu.Unlock()
}

// setHeartbeat records the heartbeat that log pokes.
func (c *call) setHeartbeat(hb *heartbeat) {
	c.mu.Lock()
	c.hb = hb
	c.mu.Unlock()
}

// setAnswer keeps the answer text (whole or partial) for the results directory.
func (c *call) setAnswer(text string) {
	c.mu.Lock()
	c.answerTxt = text
	c.mu.Unlock()
}

// fullAnswer is the answer kept by setAnswer.
func (c *call) fullAnswer() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answerTxt
}

// call is the state of one consultation.
type call struct {
	svc    *Service
	req    request
	start  time.Time
	phaseV atomic.Value           // Phase; read by the heartbeat
	notice atomic.Pointer[string] // the latest warning, for the next progress report
	// mu guards hb, reporter, live and answerTxt: what the call's goroutine, its heartbeat
	// and a caller that collects or leaves share.
	mu       sync.Mutex
	hb       *heartbeat              // poked when there is news; nil before it starts
	reporter Reporter                // dropped (nil) when a background call's caller leaves
	cancel   context.CancelCauseFunc // set by cancellable only
	queued   atomic.Bool             // waiting for room under the bound on bytes in flight
	idle     time.Duration
	interval time.Duration
	alive    liveness

	gathered   *files.Gathered
	digests    map[string]string // the gathered files' SHA-256, by path
	counts     []consult.Tokens
	overhead   consult.Tokens
	ctxWindow  consult.Tokens // the model's context window, 0 if unknown
	live       *stream        // the model call in flight, nil before it starts
	attempts   atomic.Int32   // model requests sent; read by the heartbeat
	failed     []Attempt
	sized      atomic.Pointer[Report] // the size report once counted; read by "still running"
	fileSet    string                 // FileSetKey of the gathered files
	model      catalog.Model          // what the catalog knows of the call's model
	estimate   *CostEstimate          // the price before sending, once the model is looked up
	price      *providers.Price       // the model's prices, when known
	badPrice   error                  // the model's prices are bad data (providers.ErrBadPrice)
	limit      consult.Tokens         // the output limit the request carries
	hold       string                 // the call's hold in the daily budget's ledger, until settled
	repriced   bool                   // the cost is at the prices of another model than asked (answeredPrice)
	breakpoint bool                   // the request marks its files for the provider's cache (cacheBreakpoint)
	// cachedTokens and writtenTokens are the prompt tokens expected from, and written to,
	// the provider's cache.
	cachedTokens, writtenTokens consult.Tokens
	costNote                    atomic.Pointer[string] // the estimate, for the next progress report
	answerTxt                   string                 // the full (or partial) answer once the call ends, for the results directory
}

// cancellable derives the call's context from parent and keeps its cancel function, which
// the idle watch and consultation_cancel use: the one place it is set.
func (c *call) cancellable(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	c.cancel = cancel
	return ctx
}

func (c *call) run(ctx context.Context) Result {
	defer c.req.close()
	c.setPhase(PhaseQueued)
	if err := ctx.Err(); err != nil { // cancelled or out of time while queued: do nothing at all
		return c.stopped(ctx)
	}
	held, err := c.admit(ctx)
	if err != nil { // admission waits for room or ctx's end, never longer: it asks at most the whole bound
		return c.stopped(ctx)
	}
	defer held.release()
	c.setPhase(PhaseGathering)
	gather := c.svc.gather
	if gather == nil {
		gather = files.Gather
	}
	g, err := gather(ctx, files.Options{
		Root: c.req.Path, Opened: c.req.tree, Pattern: c.req.Pattern, Exclude: c.req.Exclude,
		MaxFileBytes: c.svc.Limits.MaxFileBytes, MaxTotalBytes: c.svc.Limits.MaxTotalBytes, MaxFiles: c.svc.Limits.MaxFiles,
	})
	c.gathered = g
	if g != nil && !c.req.DryRun { // a dry run sends nothing and keeps no record (see cacheHitExpected)
		c.digests = Digests(g.Files)
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
	c.setPhase(PhaseCounting)
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
	if !c.req.DryRun {
		c.fileSet = fileSetKey(c.digests)
	}
	if len(g.Files) == 0 {
		rep := c.report()
		if over, _ := overCapCount(rep); over > 0 {
			return c.fail(ErrorInfo{Class: ClassTooLarge}, overCap{}, rep)
		}
		return c.fail(ErrorInfo{Class: ClassNotFound}, noMatch{}, rep)
	}
	c.setPhase(PhaseLookup)
	if err := c.lookupModel(ctx); err != nil {
		if ctx.Err() != nil {
			return c.stopped(ctx)
		}
		return c.fail(ErrorInfo{Class: ClassInvalidArgument}, modelUnavailable{Detail: err.Error()}, c.report())
	}
	if ctx.Err() != nil {
		return c.stopped(ctx)
	}
	c.ctxWindow = c.model.Window
	rep := c.report()
	c.estimateCost(rep)
	c.sized.Store(rep)
	if c.req.DryRun {
		sum := c.summary(KindDryRun, rep)
		sum.Report = rep
		return Result{Summary: sum}
	}
	return c.consult(ctx, rep)
}

// report sizes what the call has gathered and counted so far.
func (c *call) report() *Report {
	rep := buildReport(c.req, c.gathered, c.counts, c.overhead)
	rep.Counting = tokens.Encoding
	rep.setWindow(c.ctxWindow, c.gathered, c.counts)
	rep.Cost = c.estimate
	return rep
}

// A Stop is a cause of a call's context that its caller defines (a background engine's limit
// or cancel): it says how the stop is classed and worded. Any other cause but the call's
// own deadline and idle timeout reads as the client cancelling.
type Stop interface {
	error
	// Class is the error class of a call stopped for this cause.
	Class() ErrorClass
	// Words are the first line of the failure, why a partial answer was cut, and advice
	// (ending in a newline, or empty), for a call stopped while in phase after elapsed.
	Words(phase, elapsed string) (headline, partialWhy, advice string)
}

// stopped is the result of a call whose context ended: its own deadline, its idle timeout,
// a cause its caller defines (Stop), or the client cancelling; with what it had collected.
func (c *call) stopped(ctx context.Context) Result {
	rep := c.report()
	cause := context.Cause(ctx)
	st := stopState{Phase: c.phaseNow(), Elapsed: time.Since(c.start), NothingGathered: c.gathered == nil,
		Attempt: int(c.attempts.Load()), Failed: c.failed}
	var stop Stop
	idle, timeout := errors.Is(cause, ErrIdleTimeout), errors.Is(cause, ErrCallTimeout)
	if !idle && !timeout && !errors.As(cause, &stop) {
		return c.fail(ErrorInfo{Class: ClassCancelled}, cancelled{Phase: st.Phase, Elapsed: st.Elapsed}, rep)
	}
	partial := ""
	if live := c.liveStream(); live != nil {
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
	c.setAnswer(partial)
	info := errorInfo(cause)
	info.Message = "" // the words' first line: the timeout used, the phase
	res := c.fail(info, why, rep)
	res.Summary.Answer, res.Facts.PartialWhy = partial, partialWhy
	return res
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

// Names map the tools' argument names to what the caller calls them, for the words that
// tell it what to change: a caller such as the command line names its flags; an argument
// it does not map keeps the tool's name.
type Names map[string]string

// ToolNames are the tools' own argument names.
var ToolNames Names

// of is what the caller calls argument arg.
func (n Names) of(arg string) string {
	if name, ok := n[arg]; ok {
		return name
	}
	return arg
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
