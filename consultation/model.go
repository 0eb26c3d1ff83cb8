package consultation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/catalog"
	"github.com/consultmcp/consult/providers"
)

// Model is what a consultation needs of a provider: stream one answer.
// providers.Provider satisfies it.
type Model interface {
	// Stream sends req once and blocks until the answer is complete, ctx ends or the
	// upstream fails; the returned response is never nil and holds what arrived.
	Stream(ctx context.Context, req providers.Request, obs providers.Observer) (*providers.Response, error)
}

var _ Model = providers.Provider(nil)

// systemPrompt frames every consultation.
const systemPrompt = "You are a senior software engineer answering a question about the files below, which are the only context you have. Answer from them, cite file paths when you refer to code, and say so when the files do not contain the answer."

// stream is the live state of one model call. The provider's stream goroutine writes it;
// progress reporting reads it.
type stream struct {
	mu        sync.Mutex
	answer    strings.Builder
	reasoning consult.Tokens
	firstAt   time.Time
	onFirst   func() // called once, when the first answer text arrives
}

func (s *stream) Reasoning(n consult.Tokens, _ string) {
	s.mu.Lock()
	s.reasoning = n
	s.mu.Unlock()
}

func (s *stream) Answer(delta string) {
	s.mu.Lock()
	if s.firstAt.IsZero() && delta != "" {
		s.firstAt = time.Now()
		if s.onFirst != nil {
			s.onFirst()
		}
	}
	s.answer.WriteString(delta)
	s.mu.Unlock()
}

// Refusal notes refusal text as it streams: the model's reply has arrived, though it is not
// an answer, so the call is receiving it.
func (s *stream) Refusal(delta string) {
	s.mu.Lock()
	if s.firstAt.IsZero() && delta != "" {
		s.firstAt = time.Now()
		if s.onFirst != nil {
			s.onFirst()
		}
	}
	s.mu.Unlock()
}

var _ providers.RefusalObserver = (*stream)(nil)

// snapshot returns the answer so far, the reasoning tokens and whether the answer started.
func (s *stream) snapshot() (text string, reasoning consult.Tokens, started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answer.String(), s.reasoning, !s.firstAt.IsZero()
}

// Catalog knows what models cost and how large they are (internal/catalog).
type Catalog interface {
	// Lookup finds model, bounded by ctx; a model no source knows is a
	// *catalog.UnknownModelError.
	Lookup(ctx context.Context, model string) (catalog.Model, error)
	// Peek is Lookup from what the catalog holds already: it never waits.
	Peek(model string) (catalog.Model, error)
}

// lookupModel finds the call's model in the catalog, once, within a bounded part of the
// call's time: its window, prices, largest output and expiry. A model no source knows is
// an error, before anything is sent.
func (c *call) lookupModel(ctx context.Context) error {
	id := c.req.Model.ID
	if c.svc.Catalog == nil || id == "" {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, budgetOf(ctx).lookup())
	defer cancel()
	m, err := c.svc.Catalog.Lookup(lctx, id)
	if err != nil {
		return err
	}
	c.model = m
	if m.Unchecked != "" {
		c.warn(fmt.Sprintf("nothing is known of model %s: %s; its window and price are unknown, so no cap can be checked", consult.Printable(id), m.Unchecked))
	}
	if !m.Expires.IsZero() {
		when := "is listed to be removed after"
		if time.Now().After(m.Expires.AddDate(0, 0, 1)) {
			when = "was listed to be removed after"
		}
		advice := "choose a current model before then"
		if d := c.svc.DefaultModel; d != "" && d != id {
			advice += " (the server's default is " + consult.Printable(d) + ")"
		}
		c.warn(fmt.Sprintf("model %s %s %s (%s): %s", consult.Printable(id), when, m.Expires.Format(time.DateOnly), m.Source, advice))
	}
	return nil
}

// answeredPrice is the price of the model that answered resp: the provider may report
// another model than the one asked for (a snapshot, a fallback), and the cost is that
// model's. It is the call's own price when the reported model is the same, unknown to the
// catalog, or unpriced; the first time it differs, the result says so.
func (c *call) answeredPrice(resp *providers.Response) *providers.Price {
	if resp == nil || resp.Model == "" || c.svc.Catalog == nil || c.req.Model.ID == "" {
		return c.price
	}
	m, err := c.svc.Catalog.Peek(resp.Model)
	if err != nil || m.Price == nil || m.ID == c.model.ID {
		return c.price
	}
	if !c.repriced {
		c.repriced = true
		c.req.Warnings = append(c.req.Warnings, fmt.Sprintf("model %s answered, not %s: its cost is at %s's prices (%s)",
			consult.Printable(resp.Model), consult.Printable(c.req.Model.ID), consult.Printable(m.ID), m.Price.Source))
	}
	return m.Price
}

// warn tells the client of a warning now and puts it in the result's warnings.
func (c *call) warn(msg string) {
	c.req.Warnings = append(c.req.Warnings, msg)
	c.log(LevelWarning, msg)
}

// consult sends the gathered files and the query to the model and turns the outcome into
// a result.
func (c *call) consult(ctx context.Context, rep *Report) Result {
	c.setPhase(PhaseChecking)
	if c.svc.Model == nil {
		return c.fail(ErrorInfo{Class: ClassUnauthenticated}, noProvider{Detail: c.svc.NoModel}, rep)
	}
	if c.req.Model.ID == "" {
		return c.fail(ErrorInfo{Class: ClassInvalidArgument}, noModel{}, rep)
	}
	if rep.Fits != nil && !*rep.Fits {
		return c.fail(ErrorInfo{Class: ClassTooLarge}, tooLarge{}, rep)
	}
	if res, refused := c.overBudget(ctx, rep); refused {
		return res
	}
	defer c.settle(ctx, 0) // a hold the call did not settle (nothing was sent) is released
	c.announceEstimate()
	preq, err := c.request()
	if err != nil {
		return c.upstreamFailure(err, nil, rep, nil)
	}
	ctx = c.withActivity(ctx)
	if c.idle > 0 {
		go watchIdle(ctx, &c.alive, c.idle, c.cancel)
	}
	resp, failed, gaveUp, err := c.streamWithRetries(ctx, preq)
	c.failed = failed
	c.recordSpend(ctx, resp)
	if ctx.Err() != nil {
		return c.stopped(ctx)
	}
	if err != nil {
		return c.upstreamFailure(err, resp, rep, gaveUp)
	}
	return c.answer(resp, rep)
}

// request builds the model request once, for every attempt to send. A provider that encodes
// its own bodies ([providers.Encoder]) gets the files laid out straight into the one body it
// sends, so the prompt exists once, in the body; any other model gets the laid-out prompt.
// Either way the files' contents are dropped here: the request holds them now, and reports
// need only paths and sizes.
func (c *call) request() (providers.Request, error) {
	preq := providers.Request{
		Model:       c.req.Model.ID,
		Thinking:    providers.Thinking{On: c.req.Model.Thinking, Budget: c.req.Model.Budget},
		System:      systemPrompt,
		OutputLimit: c.limit,
	}
	defer func() {
		for i := range c.gathered.Files {
			c.gathered.Files[i].Content = nil
		}
	}()
	enc, ok := c.svc.Model.(providers.Encoder)
	if !ok {
		preq.Prompt = files.Layout(c.gathered.Files, c.req.Query)
		return preq, nil
	}
	// The files first and the question last, apart: the same files give the same prefix,
	// which the provider's prompt cache can hold, and the key that names them.
	prompt := files.NewPrompt(c.gathered.Files, c.req.Query)
	preq.Text, preq.Question, preq.CacheKey = prompt.Prefix, prompt.Question(), c.fileSet
	preq.CacheBreakpoint, preq.LongCache = c.breakpoint, c.svc.LongCache
	body, err := enc.Encode(preq)
	preq.Text, preq.Question, preq.Body = nil, "", body
	return preq, err
}

// upstreamFailure is a failed model call's result, keeping any answer that had arrived.
func (c *call) upstreamFailure(err error, resp *providers.Response, rep *Report, gaveUp *GaveUp) Result {
	detail, partialWhy := err.Error(), "cut off by the failure"
	var cause Cause
	var pe *providers.Error
	switch {
	case gaveUp != nil:
		cause = noMoreAttempts{Phase: c.phaseNow(), Elapsed: time.Since(c.start), GaveUp: gaveUp, Failed: c.failed}
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
		cause = upstreamFailed{Phase: c.phaseNow(), Detail: detail, Failed: c.failed}
	}
	res := c.fail(errorInfo(err), cause, rep)
	res.Facts.PartialWhy = partialWhy
	res.Summary.Answer = partialText(resp)
	if resp != nil && resp.Usage.Reported {
		res.Summary.Usage = c.usageOf(resp) // tokens spent are billed, failure or not
	}
	c.setAnswer(partialText(resp))
	return res
}

func partialText(resp *providers.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Text
}

// usageOf is the provider's accounting in a summary's form; nil when it reported none (a
// refusal stream may send none): never zeros that were not counted.
func (c *call) usageOf(resp *providers.Response) *UsageSummary {
	if !resp.Usage.Reported {
		return nil
	}
	ru := resp.Usage
	u := &UsageSummary{
		Input: ru.Input, Output: ru.Output, Reasoning: ru.Reasoning, Cached: ru.Cached, CacheWrite: ru.CacheWrite,
	}
	price := c.answeredPrice(resp)
	switch {
	case ru.CostKnown:
		cost := ru.CostUSD
		u.CostUSD = &cost
	case price != nil:
		cost := price.Cost(ru)
		u.CostUSD, u.CostFromPrices = &cost, true
	}
	if price != nil && (ru.Cached > 0 || ru.CacheWrite > 0) {
		saved := price.Saved(ru)
		u.CacheSavedUSD = &saved
	}
	return u
}

// knownStops are the normalised stop reasons consult understands; any other is named in
// the result.
var knownStops = map[string]bool{"stop": true, "length": true, "content_filter": true, providers.FinishAnswerCap: true}

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
	sum.Answer, sum.Usage, sum.StopReason = resp.Text, c.usageOf(resp), resp.StopReason
	sum.Model = cmp.Or(resp.Model, c.req.Model.ID)
	c.setAnswer(resp.Text)
	return res, true
}

// answer builds the successful result: the answer (or where it was written); or, when the
// model stopped without a usable answer, the error that says why.
func (c *call) answer(resp *providers.Response, rep *Report) Result {
	if res, failed := c.stopFailure(resp, rep); failed {
		return res
	}
	sum := c.summary(KindAnswer, rep)
	sum.Model = cmp.Or(resp.Model, c.req.Model.ID)
	sum.Usage = c.usageOf(resp)
	if u := resp.Usage; u.Reported && !resp.Truncated {
		c.svc.answers.note(c.answerKey(), u.Output+u.Reasoning) // for the next call's expected price
	}
	sum.StopReason = resp.StopReason
	sum.Truncated = resp.Truncated
	sum.Withheld, sum.Redacted = rep.Withheld, rep.Redacted
	if resp.Truncated {
		switch {
		case resp.Finish == providers.FinishAnswerCap:
			sum.TruncatedBy = TruncatedByAnswerCap
		case c.estimate.capped():
			sum.TruncatedBy = TruncatedByCostCap
		default:
			sum.TruncatedBy = TruncatedByOutputLimit
		}
	}
	c.setAnswer(resp.Text)
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
