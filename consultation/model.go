package consultation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/models"
	"github.com/consultmcp/consult/providers"
)

// Model is what a consultation needs of a provider: stream one answer, and size a model.
// providers.Provider satisfies it.
type Model interface {
	// Stream sends req once and blocks until the answer is complete, ctx ends or the
	// upstream fails; the returned response is never nil and holds what arrived.
	Stream(ctx context.Context, req providers.Request, obs providers.Observer) (*providers.Response, error)
	// ContextWindow reports the model's context size when known, bounded by ctx.
	ContextWindow(ctx context.Context, model string) (consult.Tokens, bool, error)
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

// lookupWindow finds the model's context window: the provider's own figure when it answers in
// time, else the built-in table. A model the provider says does not exist is an error.
func (c *call) lookupWindow(ctx context.Context) (consult.Tokens, bool, error) {
	id := c.req.Model.ID
	if c.svc.Model != nil && id != "" {
		lctx, cancel := context.WithTimeout(ctx, budgetOf(ctx).lookup())
		w, ok, err := c.svc.Model.ContextWindow(lctx, id)
		cancel()
		switch {
		case err == nil && ok:
			return w, true, nil
		case errors.Is(err, providers.NotFound):
			return 0, false, err
		case err != nil:
			c.svc.logger().Debug("context window look-up failed", "model", id, "error", err)
		}
	}
	w, ok := models.KnownWindow(id)
	return w, ok, nil
}

// consult sends the gathered files and the query to the model and turns the outcome into
// a result.
func (c *call) consult(ctx context.Context, rep *Report) Result {
	if c.svc.Model == nil {
		msg := c.svc.NoModel
		if msg == "" {
			msg = "no model provider is configured"
		}
		return c.errorResult(ErrorInfo{Class: ClassUnauthenticated}, msg+"\nDry runs (dry_run: true) work without one.\n"+rep.Text(), rep)
	}
	if c.req.Model.ID == "" {
		return c.errorResult(ErrorInfo{Class: ClassInvalidArgument}, "No model named: pass model, or start the server with --model.", rep)
	}
	if rep.Fits != nil && !*rep.Fits {
		return c.errorResult(ErrorInfo{Class: ClassTooLarge}, fmt.Sprintf("Not sent: the request is too large for %s.\n%s", c.req.Model.ID, rep.Text()), rep)
	}
	if res, refused := c.overBudget(rep); refused {
		return res
	}
	c.announceEstimate()
	preq, err := c.request()
	if err != nil {
		return c.upstreamFailure(err, nil, rep, "")
	}
	ctx = c.withActivity(ctx)
	if c.idle > 0 {
		go watchIdle(ctx, &c.alive, c.idle, c.cancel)
	}
	resp, failed, gaveUp, err := c.streamWithRetries(ctx, preq)
	c.failed = failed
	c.recordSpend(resp)
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
		Model:    c.req.Model.ID,
		Thinking: providers.Thinking{On: c.req.Model.Thinking, Budget: c.req.Model.Budget},
		System:   systemPrompt,
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
	body, err := enc.Encode(preq)
	preq.Text, preq.Question, preq.Body = nil, "", body
	return preq, err
}

// upstreamFailure explains a failed model call, keeping any answer that had arrived.
func (c *call) upstreamFailure(err error, resp *providers.Response, rep *Report, gaveUp string) Result {
	var b strings.Builder
	var pe *providers.Error
	switch {
	case gaveUp != "":
		fmt.Fprintf(&b, "The model call failed while %s: %s, %s in all. Attempts:%s",
			c.phaseNow(), gaveUp, consult.FormatDuration(time.Since(c.start)), describeAttempts(c.failed))
	case errors.Is(err, providers.ContextLength):
		rep.Refused = true
		window, count := "window unknown", rep.PromptTokens.String()+" tokens by consult's count"
		var of *providers.Overflow
		if errors.As(err, &pe) && pe.Overflow != nil {
			of = pe.Overflow
		}
		switch {
		case of != nil && of.Window > 0:
			window = "the provider's window " + of.Window.String()
		case rep.ContextWindow > 0:
			window = "window " + rep.ContextWindow.String()
		}
		if of != nil && of.Prompt > 0 {
			count = of.Prompt.String() + " tokens by the provider's count"
		}
		fmt.Fprintf(&b, "Too large for %s (%s, %s): the provider refused it (%v). More time will not help.\n%s",
			consult.Printable(c.req.Model.ID), count, window, err, rep.Text())
		if of.ReservationTipped() {
			fmt.Fprintf(&b, "The prompt alone fits; the %s tokens reserved for the answer pushed it over: use a model with a larger window, or a smaller thinking budget (model %q).\n", of.Completion, c.req.Model.ID+"|thinking=4000")
		} else {
			fmt.Fprintf(&b, "Make it smaller: %s; or use a model with a larger context window.\n", sizeTips(rep))
		}
	case errors.Is(err, providers.OutputLimit):
		fmt.Fprintf(&b, "The model reached its output limit before it finished (%v).\n", err)
		fmt.Fprintf(&b, "With a thinking model, give it a smaller reasoning budget (model %q) or ask a narrower question.", c.req.Model.ID+"|thinking=8000")
	case errors.Is(err, providers.ContentFiltered):
		fmt.Fprintf(&b, "The provider's content filter stopped the request (%v).\nLeave out the files that may set it off (exclude_pattern), rephrase the question, or try another model.", err)
	case errors.As(err, &pe) && pe.Quota != nil && pe.Quota.Period == providers.PerDay:
		fmt.Fprintf(&b, "The model call failed: %v\nRetrying today will not help: use another model, or a key on a paid tier.", err)
	case errors.As(err, &pe) && pe.Kind == providers.Auth:
		// The provider's own words, without the error's generic advice: the advice is given
		// once, here, naming where this server's key comes from.
		fmt.Fprintf(&b, "The provider rejected the API key (%s, HTTP %d): %s\nCheck the key the server was started with (%s).",
			pe.Provider, pe.Status, consult.Printable(pe.Message), c.svc.KeyHint)
	default:
		fmt.Fprintf(&b, "The model call failed while %s: %v", c.phaseNow(), err)
		if len(c.failed) > 0 {
			fmt.Fprintf(&b, "\nEarlier attempts:%s", describeAttempts(c.failed))
		}
	}
	if resp != nil && resp.Text != "" {
		why := "cut off by the failure"
		if errors.Is(err, providers.OutputLimit) {
			why = "cut off by the output limit"
		}
		fmt.Fprintf(&b, "\n\nPartial answer (%s):\n%s", why, resp.Text)
	}
	res := c.errorResult(errorInfo(err), b.String(), rep)
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
	switch {
	case ru.CostKnown:
		cost := ru.CostUSD
		u.CostUSD = &cost
	case c.price != nil:
		cost := c.price.Cost(ru)
		u.CostUSD, u.CostFromPrices = &cost, true
	}
	if c.price != nil && (ru.Cached > 0 || ru.CacheWrite > 0) {
		saved := c.price.Saved(ru)
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
	reason := consult.Printable(resp.StopReason)
	var b strings.Builder
	info := ErrorInfo{ProviderCode: resp.StopReason}
	cut := ""
	switch {
	case resp.Refusal != "" && strings.TrimSpace(resp.Text) == "":
		info.Class = ClassContentFiltered
		fmt.Fprintf(&b, "The model refused to answer: %q\n", consult.Printable(resp.Refusal))
		b.WriteString("Rephrase the question, or try another model.")
	case resp.Finish == "content_filter":
		info.Class, cut = ClassContentFiltered, "cut by the content filter"
		fmt.Fprintf(&b, "The provider's content filter stopped the answer (stop reason %s", reason)
		if resp.StopDetail != "" {
			fmt.Fprintf(&b, "; %s", consult.Printable(resp.StopDetail))
		}
		b.WriteString(").\nRephrase the question, leave out the files that may set the filter off (exclude_pattern), or try another model.")
	case resp.Finish == "length" && strings.TrimSpace(resp.Text) == "":
		info.Class = ClassOutputLimit
		fmt.Fprintf(&b, "The model reached its output limit before it wrote any answer (stop reason %s; %s, %s).\n",
			reason, tokensWord(resp.Usage.Reasoning, "reasoning token"), tokensWord(resp.Usage.Output, "answer token"))
		fmt.Fprintf(&b, "With a thinking model, give it a smaller reasoning budget (model %q) or ask a narrower question.", c.req.Model.ID+"|thinking=8000")
	default:
		return Result{}, false
	}
	if cut != "" && resp.Text != "" {
		fmt.Fprintf(&b, "\n\nPartial answer (%s):\n%s", cut, resp.Text)
	}
	res = c.errorResult(info, b.String(), rep)
	sum := res.Summary
	sum.Answer, sum.Usage, sum.StopReason = resp.Text, c.usageOf(resp), resp.StopReason
	sum.Model = cmp.Or(resp.Model, c.req.Model.ID)
	c.setAnswer(resp.Text)
	return res, true
}

// answer builds the successful result: the answer (or where it was written) and a footer;
// or, when the model stopped without a usable answer, the error that says why.
func (c *call) answer(resp *providers.Response, rep *Report) Result {
	if res, failed := c.stopFailure(resp, rep); failed {
		return res
	}
	sum := c.summary(KindAnswer, rep)
	sum.Model = cmp.Or(resp.Model, c.req.Model.ID)
	sum.Usage = c.usageOf(resp)
	sum.StopReason = resp.StopReason
	sum.Truncated = resp.Truncated
	sum.Withheld, sum.Redacted = rep.Withheld, rep.Redacted
	if resp.Truncated {
		sum.TruncatedBy = TruncatedByOutputLimit
		if resp.Finish == providers.FinishAnswerCap {
			sum.TruncatedBy = TruncatedByAnswerCap
		}
	}
	c.setAnswer(resp.Text)
	var b strings.Builder
	if c.req.OutputFile != "" {
		written, err := writeNew(c.req.OutputFile, c.req.output, resp.Text)
		if err != nil {
			class := ClassInternal
			if errors.Is(err, fs.ErrPermission) {
				class = ClassPermissionDenied
			}
			res := c.errorResult(ErrorInfo{Class: class}, fmt.Sprintf("The answer arrived but could not be written to output_file: %v\n\nAnswer:\n%s", err, resp.Text), rep)
			res.Summary.Answer = resp.Text
			return res
		}
		sum.OutputFile = written
		fmt.Fprintf(&b, "Answer written to %s (%s).", consult.Printable(written), consult.Bytes(len(resp.Text)))
		if written != c.req.OutputFile {
			fmt.Fprintf(&b, " %s already existed, so a new name was chosen.", consult.Printable(c.req.OutputFile))
		}
	} else {
		sum.Answer = resp.Text
		b.WriteString(resp.Text)
	}
	switch sum.TruncatedBy {
	case TruncatedByAnswerCap:
		fmt.Fprintf(&b, "\n\n[The answer was cut at %d MiB, the most consult keeps of one answer; the rest was not read.]",
			providers.MaxAnswerBytes>>20)
	case TruncatedByOutputLimit:
		b.WriteString("\n\n[The answer was cut off by the model's output limit.]")
	}
	if !knownStops[resp.Finish] {
		fmt.Fprintf(&b, "\n\n[The model stopped for a reason consult does not know: %s. The answer may be incomplete.]", consult.Printable(cmp.Or(resp.StopReason, "none given")))
	}
	b.WriteString("\n\n")
	b.WriteString(footer(sum))
	return Result{Text: b.String(), Summary: sum}
}

// FormatUSD writes a price in dollars: cents for a dollar or more, and two significant
// digits below ("$0.0000058"), never "$0.0000" for a cost that is not zero.
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	digits := int(-math.Floor(math.Log10(v))) + 1 // two significant digits
	return "$" + strconv.FormatFloat(v, 'f', min(digits, 12), 64)
}

// tokensWord is "1 reasoning token", "1,200 reasoning tokens".
func tokensWord(n consult.Tokens, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return n.String() + " " + one + "s"
}

// footer renders a summary's figures in one short block.
func footer(s *Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nmodel %s · %s %s, %s", consult.Printable(s.Model), consult.Thousands(int64(s.Files)), plural(s.Files, "file", "files"), s.Bytes)
	if u := s.Usage; u != nil {
		fmt.Fprintf(&b, " · tokens %s in", u.Input)
		switch {
		case u.Cached > 0 && u.CacheSavedUSD != nil && *u.CacheSavedUSD > 0:
			fmt.Fprintf(&b, " (%s cached, saving %s)", u.Cached, FormatUSD(*u.CacheSavedUSD))
		case u.Cached > 0:
			fmt.Fprintf(&b, " (%s cached)", u.Cached)
		}
		if u.CacheWrite > 0 {
			fmt.Fprintf(&b, " (%s written to the cache)", u.CacheWrite)
		}
		fmt.Fprintf(&b, ", %s out", u.Output)
		if u.Reasoning > 0 {
			fmt.Fprintf(&b, ", %s reasoning", u.Reasoning)
		}
		if u.CostUSD != nil {
			b.WriteString(" · " + costWords(u))
		}
	}
	if e := s.Estimate; e.Known() {
		b.WriteString(" (estimated " + FormatUSD(*e.USD) + ")")
	}
	fmt.Fprintf(&b, " · %.1f s · %d %s", s.ElapsedSeconds, s.Attempts, plural(s.Attempts, "attempt", "attempts"))
	if len(s.Withheld) > 0 || len(s.Redacted) > 0 {
		b.WriteByte('\n')
		writeSecrets(&b, s.Withheld, s.Redacted)
	}
	return strings.TrimRight(b.String(), "\n")
}
