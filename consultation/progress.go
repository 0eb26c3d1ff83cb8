package consultation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/leaf/tokens"
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

// Reporter tells the client how a call is doing. The MCP side implements it; nil means
// nobody listens. Methods must not block for long: they run on the call's heartbeat.
type Reporter interface {
	// Progress reports liveness. progress strictly increases from one call to the next;
	// message is at most consult.MaxProgressMessage characters.
	Progress(progress float64, message string)
	// Log tells the client of a notable event: a warning, a retry.
	Log(level Level, message string)
}

// A Recorder is a Reporter that also takes the call's state with each progress report: a
// background worker writes it to its record, so whoever collects the consultation sees
// where it is.
type Recorder interface {
	Reporter
	// Record receives the call's state; it is called just before each Progress.
	Record(State)
}

// A Launcher is a Reporter that is also told when a call's first model request is about to
// go out, with the call's state then: a background worker passes it on, so that the call that
// started it can hand its client a task once the consultation will reach a model.
type Launcher interface {
	Launching(State)
}

// State is where a call is: its phase and figures so far.
type State struct {
	// Phase is what the call is doing; Message is the progress message.
	Phase   Phase
	Message string
	// Model is the model asked (as the call names it); Estimate is the call's two figures
	// in words once they are known ("expected $0.0040, at most $0.14 (prices: …)"; "price
	// unknown"; "" before).
	Model    string `json:",omitempty"`
	Estimate string `json:",omitempty"`
	// Elapsed is the time since the call started; Attempts counts model requests sent.
	Elapsed  time.Duration
	Attempts int
	// Files, Bytes and PromptTokens size the request, once counted (zero before).
	Files        int
	Bytes        consult.Bytes
	PromptTokens consult.Tokens
	// Reasoning and AnswerTokens are what the model has streamed; Partial is the answer so far.
	Reasoning    consult.Tokens
	AnswerTokens consult.Tokens
	Partial      string
}

// Level is the severity of a Log message.
type Level string

// Log levels, as MCP names them.
const (
	LevelInfo    Level = "info"
	LevelWarning Level = "warning"
	LevelError   Level = "error"
)

// ErrIdleTimeout is the cause of a call's context when its upstream stayed silent for the
// idle timeout.
var ErrIdleTimeout = errors.New("upstream idle timeout")

// liveness tracks upstream activity for one call: bytes seen at the HTTP transport and when.
// While paused (between attempts, when no request is in flight) silence does not count.
type liveness struct {
	last   atomic.Int64 // unix nanoseconds of the last upstream read
	bytes  atomic.Int64
	paused atomic.Bool
}

// pause stops silence from counting until resume.
func (l *liveness) pause() { l.paused.Store(true) }

// resume counts silence again, from now.
func (l *liveness) resume() {
	l.last.Store(time.Now().UnixNano())
	l.paused.Store(false)
}

func (l *liveness) touch(n int) {
	l.bytes.Add(int64(n))
	l.last.Store(time.Now().UnixNano())
}

// watch arranges for upstream reads under ctx to be noted, from now.
func (l *liveness) watch(ctx context.Context) context.Context {
	l.touch(0)
	return providers.WithActivity(ctx, l.touch)
}

func (l *liveness) silentFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, l.last.Load()))
}

// watchIdle cancels the call when its upstream has sent nothing for idle. It returns when
// ctx ends.
func watchIdle(ctx context.Context, l *liveness, idle time.Duration, cancel context.CancelCauseFunc) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			silent := l.silentFor(now)
			if l.paused.Load() {
				silent = 0
			}
			if silent >= idle {
				cancel(ErrIdleTimeout)
				return
			}
			t.Reset(idle - silent)
		}
	}
}

// heartbeat sends progress every interval until stop is closed; it does not send within
// quietBeforeEnd of the deadline.
type heartbeat struct {
	stop chan struct{}
	kick chan struct{} // poke: report now
	once sync.Once
	done sync.WaitGroup
}

// poke asks for a report now, in addition to the regular ones; it never blocks.
func (hb *heartbeat) poke() {
	if hb == nil {
		return
	}
	select {
	case hb.kick <- struct{}{}:
	default:
	}
}

// startHeartbeat reports the call's progress to its reporter at once and then every
// interval until halted or ctx ends, quiet in the last moments before ctx's deadline. A
// Recorder gets the call's state with each report.
func (t *tracker) startHeartbeat(ctx context.Context, interval time.Duration) *heartbeat {
	rec, _ := t.reporter.(Recorder)
	msg := func(now time.Time) string {
		m := t.progressMessage(now)
		if rec != nil {
			st := t.state(now)
			st.Message = m
			rec.Record(st)
		}
		return m
	}
	hb := beat(ctx, t.reporter, interval, msg)
	t.hb.Store(hb)
	return hb
}

func beat(ctx context.Context, r Reporter, interval time.Duration, msg func(time.Time) string) *heartbeat {
	hb := &heartbeat{stop: make(chan struct{}), kick: make(chan struct{}, 1)}
	if r == nil || interval <= 0 {
		return hb
	}
	b := budgetOf(ctx)
	n := 0
	if ctx.Err() == nil { // a call already past its deadline hears nothing before its result
		n++ // sent before the call goes on, so that it is the first report whatever follows
		r.Progress(float64(n), msg(time.Now()))
	}
	hb.done.Add(1)
	go func() {
		defer hb.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		// send reports now, unless within the quiet time before the deadline (judged at the
		// time of sending: on a busy machine a tick can be delivered late); false when ctx
		// has ended (a tick and the end raced: the end wins).
		send := func() bool {
			if ctx.Err() != nil {
				return false
			}
			now := time.Now()
			if b.quiet(now) {
				return true
			}
			n++
			r.Progress(float64(n), msg(now))
			return true
		}
		for {
			select {
			case <-hb.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if !send() {
					return
				}
			case <-hb.kick: // something changed that the client should hear of now
				if !send() {
					return
				}
			}
		}
	}()
	return hb
}

// halt stops the heartbeat and waits for it, so no progress follows the result. It may be
// called more than once.
func (hb *heartbeat) halt() {
	hb.once.Do(func() { close(hb.stop) })
	hb.done.Wait()
}

// tracker is what the client hears of one call while it runs, and what its heartbeat reads:
// the phase, how far the model got, the notes for the next report. The call's goroutine
// writes it; the heartbeat reads it.
type tracker struct {
	start    time.Time
	model    string          // the model asked, for State
	logger   *slog.Logger    // the server's log
	counter  *tokens.Counter // counts a partial answer's tokens, for State
	inflight *Inflight       // the bound a queued call waits under; nil: none
	reporter Reporter        // nil: nobody listens
	phaseV   atomic.Value    // Phase
	notice   atomic.Pointer[string]
	costNote atomic.Pointer[string] // the estimate, for the next progress report
	attempts atomic.Int32           // model requests sent
	sized    atomic.Pointer[Report] // the size report once counted
	queued   atomic.Bool            // waiting for room under the bound on bytes in flight
	alive    liveness
	hb       atomic.Pointer[heartbeat] // poked when there is news; nil before it starts
	live     atomic.Pointer[stream]    // the model call in flight, nil before it starts
}

// log sends a notable event to the client (while one listens) and the server log.
// A warning also becomes the call's notice: the progress report sent at once after it
// carries it, so a client that shows only progress, or gives up before the result, still
// hears of it.
func (t *tracker) log(level Level, msg string) {
	t.logger.Info("notice to client", "level", string(level), "message", msg)
	if level == LevelWarning || level == LevelError {
		t.notice.Store(&msg)
	}
	if t.reporter != nil {
		t.reporter.Log(level, msg)
	}
	t.hb.Load().poke()
}

// setPhase records the phase; the heartbeat reads it.
func (t *tracker) setPhase(p Phase) { t.phaseV.Store(p) }

func (t *tracker) currentPhase() Phase {
	if p, ok := t.phaseV.Load().(Phase); ok {
		return p
	}
	return PhaseValidating
}

// phaseNow says exactly what the call is doing, for failure messages and results: the
// recorded phase, refined by what the model has streamed ("model thinking (1,200 reasoning
// tokens so far)", "receiving the answer (3,400 characters so far)").
func (t *tracker) phaseNow() string {
	if live := t.live.Load(); live != nil {
		answer, reasoning, started := live.snapshot()
		switch {
		case started:
			return fmt.Sprintf("receiving the answer (%s characters so far)", consult.Thousands(int64(len(answer))))
		case reasoning > 0:
			return fmt.Sprintf("model thinking (%s so far)", tokensWord(reasoning, "reasoning token"))
		}
	}
	return string(t.currentPhase())
}

// progressMessage says what the call is doing, e.g.
// "model thinking, 40s, 1,200 reasoning tokens" or "queued for room under --max-inflight (2.0 GiB), 3s" — at most consult.MaxProgressMessage chars.
func (t *tracker) progressMessage(now time.Time) string {
	elapsed := consult.FormatDuration(now.Sub(t.start).Truncate(time.Second))
	phase := t.currentPhase()
	var b strings.Builder
	live := t.live.Load()
	switch {
	case live == nil && phase == PhaseQueued:
		if t.queued.Load() {
			fmt.Fprintf(&b, "queued for room under --max-inflight (%s), %s", t.inflight.Limit(), elapsed)
		} else {
			fmt.Fprintf(&b, "%s, %s", phase, elapsed)
		}
	case live == nil:
		fmt.Fprintf(&b, "%s, %s", phase, elapsed)
	default:
		answer, reasoning, started := live.snapshot()
		switch {
		case started:
			fmt.Fprintf(&b, "receiving the answer, %s, %s characters", elapsed, consult.Thousands(int64(len(answer))))
		case reasoning > 0:
			fmt.Fprintf(&b, "model thinking, %s, %s", elapsed, tokensWord(reasoning, "reasoning token"))
		default:
			fmt.Fprintf(&b, "waiting for the first token, %s", elapsed)
		}
		if kb := t.alive.bytes.Load(); kb > 0 {
			fmt.Fprintf(&b, ", upstream alive (%s received)", consult.Bytes(kb))
		}
	}
	if n := t.attempts.Load(); n > 1 {
		fmt.Fprintf(&b, ", attempt %d", n)
	}
	if e := t.costNote.Swap(nil); e != nil {
		fmt.Fprintf(&b, ", %s", *e) // once, in the report sent when it is known
	}
	if w := t.notice.Swap(nil); w != nil {
		fmt.Fprintf(&b, "; warning: %s", *w) // once, in the report that follows it; cut below
	}
	msg := b.String()
	if len(msg) > consult.MaxProgressMessage {
		msg = msg[:consult.MaxProgressMessage]
	}
	return msg
}

// state is the call's state at now.
func (t *tracker) state(now time.Time) State {
	st := State{Phase: t.currentPhase(), Elapsed: now.Sub(t.start), Attempts: int(t.attempts.Load()), Model: t.model}
	if rep := t.sized.Load(); rep != nil {
		st.Files, st.Bytes, st.PromptTokens = rep.Files, rep.Bytes, rep.PromptTokens
		if rep.Cost.Known() {
			st.Estimate = rep.Cost.String()
		} else if rep.Cost != nil {
			st.Estimate = PriceUnknown
		}
	}
	if live := t.live.Load(); live != nil {
		st.Partial, st.Reasoning, _ = live.snapshot()
		st.AnswerTokens = t.counter.CountString(st.Partial)
	}
	return st
}

// launching tells a Launcher reporter that the call's first model request is about to go out.
func (t *tracker) launching() {
	if l, ok := t.reporter.(Launcher); ok {
		now := time.Now()
		st := t.state(now)
		st.Message = string(st.Phase) + ", " + consult.FormatDuration(now.Sub(t.start).Truncate(time.Second))
		l.Launching(st)
	}
}

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
	s.arrived(delta)
	s.answer.WriteString(delta)
	s.mu.Unlock()
}

// Refusal notes refusal text as it streams: the model's reply has arrived, though it is not
// an answer, so the call is receiving it.
func (s *stream) Refusal(delta string) {
	s.mu.Lock()
	s.arrived(delta)
	s.mu.Unlock()
}

// arrived notes the first text of the model's reply (s.mu held).
func (s *stream) arrived(delta string) {
	if s.firstAt.IsZero() && delta != "" {
		s.firstAt = time.Now()
		if s.onFirst != nil {
			s.onFirst()
		}
	}
}

var _ providers.RefusalObserver = (*stream)(nil)

// snapshot returns the answer so far, the reasoning tokens and whether the answer started.
func (s *stream) snapshot() (text string, reasoning consult.Tokens, started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answer.String(), s.reasoning, !s.firstAt.IsZero()
}
