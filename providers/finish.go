package providers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/consultmcp/consult"
)

// streamRun is what a stream loop keeps as it reads, and the finishing code the OpenAI-style
// and Gemini loops share: the answer cap, truncation, usage, the partial answer, and the
// error when the stream did not finish.
type streamRun struct {
	provider string
	model    string // as asked for, for the log
	redact   redactor
	log      *slog.Logger
	start    time.Time

	meter    reasoningMeter
	text     answerText
	finished bool // the stream said why the model stopped
	capped   bool // the answer reached the cap; the rest was dropped
}

// startRun logs the request about to be sent and starts its clock.
func startRun(provider string, body *Body, redact redactor, log *slog.Logger) *streamRun {
	req := body.req
	log.Debug("sending request", "provider", provider, "model", req.Model,
		"thinking", req.Thinking.On, "budget", int64(req.Thinking.Budget), "prompt_bytes", body.prompt,
		"body_bytes", body.size())
	return &streamRun{provider: provider, model: req.Model, redact: redact, log: log, start: time.Now()}
}

// settle fills resp from what the stream gave: the answer (a capped one finishes with
// [FinishAnswerCap]), truncation, and usage, nil when the provider reported none (then
// resp.Usage is not Reported and holds only the reasoning estimate); a reported reasoning
// count of zero gives way to the estimate from the streamed text.
func (r *streamRun) settle(resp *Response, usage *Usage) {
	if r.capped {
		resp.Finish, r.finished = FinishAnswerCap, true
	}
	resp.Text = r.text.String()
	resp.Truncated = truncated(resp.Finish)
	resp.Usage.Reasoning = r.meter.tokens()
	if usage != nil {
		resp.Usage = *usage
		if resp.Usage.Reasoning == 0 {
			resp.Usage.Reasoning = r.meter.tokens() // reasoning streamed but not counted: keep the estimate
		}
	}
}

// answer keeps what fits of an answer delta under the cap and passes it to obs. cut says
// a string of the delta's event was cut: if it was answer text, the answer is at the cap.
func (r *streamRun) answer(obs Observer, delta string, cut bool) {
	kept, full := r.text.add(delta)
	if kept != "" {
		obs.Answer(kept)
	}
	r.capped = full || cut
}

// end returns the call's outcome. err is the stream's own error, nil when it ended
// cleanly. A stream that did not finish fails: with ctx's error when ctx ended, else with
// what unfinished (may be nil) says, else as a [Transport] error. An error that is not an
// [*Error] already becomes a [Canceled] one when ctx has ended, else a [Transport] one.
func (r *streamRun) end(ctx context.Context, resp *Response, err error, unfinished func() error) (*Response, error) {
	partial := r.text.Len() > 0
	if err == nil && !r.finished && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && !r.finished && unfinished != nil {
		err = unfinished()
	}
	if err == nil && !r.finished {
		err = &Error{Provider: r.provider, Kind: Transport, Partial: partial,
			Message: "the stream ended before the model finished"}
	}
	if err != nil {
		e, ok := errors.AsType[*Error](err)
		switch {
		case ok:
		case ctx.Err() != nil:
			e = canceledError(r.provider, ctx, partial)
		default:
			e = &Error{Provider: r.provider, Kind: Transport, Message: r.redact.clean(err.Error()), Partial: partial, Err: err}
		}
		if e.InBand && resp.Finish == "length" && e.Kind != Canceled {
			// The stream had said the output limit stopped the model; the error event after
			// it (OpenRouter's "Token limit reached", code 400) is the same end, whatever
			// code it carries. Sending it again would spend the same tokens on the same end.
			e.Kind = OutputLimit
		}
		r.log.Debug("request failed", "provider", r.provider, "model", r.model,
			"elapsed", time.Since(r.start), "error", e.Error())
		return resp, e
	}
	r.log.Debug("request done", "provider", r.provider, "model", resp.Model, "elapsed", time.Since(r.start),
		"input", int64(resp.Usage.Input), "output", int64(resp.Usage.Output),
		"reasoning", int64(resp.Usage.Reasoning), "finish", resp.Finish)
	return resp, nil
}

// reasoningSoFar reports a provider's running reasoning count to obs when it passes the
// estimate.
func (r *streamRun) reasoningSoFar(obs Observer, n consult.Tokens) {
	if n > r.meter.tokens() {
		r.meter.reported = n
		obs.Reasoning(n, "")
	}
}
