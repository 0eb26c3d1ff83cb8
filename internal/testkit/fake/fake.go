// Package fake runs httptest servers that speak the real wire formats of OpenAI's chat
// completions, OpenRouter and the Gemini API, driven by small scripts, so that tests can
// exercise consult's provider clients (and the whole consult server, via --base-url)
// without the internet.
//
// A script says what one request gets: an HTTP error with the provider's error body and
// headers (Retry-After, retry-after-ms, Gemini retryDelay), or a stream of steps — answer
// text, reasoning deltas, pauses with or without keep-alive comments, an in-band error
// event, a connection reset. The server records every request (headers, body) and when
// each request's context ended, so a test can prove that a client closed its upstream
// connection on time.
//
//	srv := fake.New(t, fake.OpenRouter)
//	srv.Push(fake.Script{Steps: append(
//		[]fake.Step{fake.Think("Let me see."), fake.Sleep(50 * time.Millisecond)},
//		fake.Chunks("The answer is 42.", 5)...)})
//	p, _ := providers.NewOpenRouter(providers.Config{APIKey: "k", BaseURL: srv.BaseURL()})
package fake

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Flavor selects the wire format a server speaks.
type Flavor int

const (
	// OpenAI speaks OpenAI's chat completions (POST /v1/chat/completions, SSE) and GET
	// /v1/models. Reasoning steps send nothing, as OpenAI streams nothing while it thinks.
	OpenAI Flavor = iota
	// OpenRouter speaks OpenRouter's variant (POST /api/v1/chat/completions): ":
	// OPENROUTER PROCESSING" keep-alive comments, "reasoning" deltas, usage with "cost",
	// numeric error codes, and GET /api/v1/models with context_length.
	OpenRouter
	// Gemini speaks the Gemini API: POST /v1beta/models/{model}:streamGenerateContent?alt=sse
	// (CRLF-delimited SSE).
	Gemini
)

// flavorNames are the names of the providers whose wire formats the flavors speak.
var flavorNames = []string{OpenAI: "openai", OpenRouter: "openrouter", Gemini: "gemini"}

// String names the flavor as the provider does.
func (f Flavor) String() string {
	if f >= 0 && int(f) < len(flavorNames) {
		return flavorNames[f]
	}
	return fmt.Sprintf("Flavor(%d)", int(f))
}

// ForProvider returns the flavor that speaks the named provider's wire format ("openai",
// "openrouter", "gemini"); ok is false when the fake has none.
func ForProvider(name string) (f Flavor, ok bool) {
	i := slices.Index(flavorNames, name)
	if i < 0 {
		return 0, false
	}
	return Flavor(i), true
}

type stepKind int

const (
	stepText stepKind = iota
	stepThink
	stepSleep
	stepComment
	stepFail
	stepReset
	stepRaw
	stepStop
	stepRefuse
)

// Step is one event of a scripted stream. Build steps with [Text], [Chunks], [Think],
// [Sleep], [Comment], [Fail], [Reset], [Raw], [Stop] and [Refuse].
type Step struct {
	kind  stepKind
	text  string
	d     time.Duration
	code  int
	until <-chan struct{} // a pause also ends when this is closed
}

// Text sends one chunk of answer text.
func Text(s string) Step { return Step{kind: stepText, text: s} }

// Chunks splits s into answer chunks of at most size runes (size <= 0 sends one chunk).
func Chunks(s string, size int) []Step {
	r := []rune(s)
	if size <= 0 || len(r) <= size {
		return []Step{Text(s)}
	}
	steps := make([]Step, 0, len(r)/size+1)
	for c := range slices.Chunk(r, size) {
		steps = append(steps, Text(string(c)))
	}
	return steps
}

// Think sends one reasoning delta: OpenRouter delta.reasoning, a Gemini thought part.
// The OpenAI flavor sends nothing (OpenAI does not stream reasoning) but still counts the
// reasoning tokens in the final usage.
func Think(s string) Step { return Step{kind: stepThink, text: s} }

// Sleep pauses the stream for d. When the script has a KeepAlive interval, comments are
// sent during the pause.
func Sleep(d time.Duration) Step { return Step{kind: stepSleep, d: d} }

// Hang pauses until the client goes away or the server closes.
func Hang() Step { return Sleep(24 * time.Hour) }

// Wait pauses the stream until until is closed (or the client goes away, or the server
// closes), with keep-alive comments as Sleep: an upstream that goes on when the test has seen
// what must come first, rather than after a time a busy machine may pass. A test that waits
// must close until before the server closes (a t.Cleanup registered after the server's).
func Wait(until <-chan struct{}) Step { return Step{kind: stepSleep, d: 24 * time.Hour, until: until} }

// Comment sends an SSE comment line (": text").
func Comment(s string) Step { return Step{kind: stepComment, text: s} }

// Fail sends an in-band error event with the given code (an HTTP-like status: 429, 502,
// 503...) and message, in the flavor's format, and ends the stream.
func Fail(code int, message string) Step { return Step{kind: stepFail, code: code, text: message} }

// Reset aborts the connection (TCP reset) without ending the stream properly.
func Reset() Step { return Step{kind: stepReset} }

// Raw writes s to the stream as is (and flushes).
func Raw(s string) Step { return Step{kind: stepRaw, text: s} }

// Stop sends a chunk that carries a finish reason ("length", Gemini's "MAX_TOKENS") and no
// text, and lets the stream go on: OpenRouter sends `finish_reason: "length"` and then an
// in-band error event when a reasoning model spends its output limit (the shape pydantic-ai
// recorded in tests/models/cassettes/test_openrouter/test_openrouter_stream_error.yaml).
// Follow it with [Fail], and set the script's NoFinish when nothing else should come.
func Stop(reason string) Step { return Step{kind: stepStop, text: reason} }

// Refuse sends refusal text: a chat delta {"refusal": s}, which OpenAI streams instead of
// content when the model declines (platform.openai.com/docs/api-reference/chat-streaming,
// choices[].delta.refusal). The Gemini API has no such field; the Gemini flavor sends
// nothing for it.
func Refuse(s string) Step { return Step{kind: stepRefuse, text: s} }

// Usage is the usage a stream reports at its end.
type Usage struct {
	Input, Output, Reasoning, Cached int
	// Cost is OpenRouter's usage.cost in USD.
	Cost float64
}

// Script is what one request gets.
type Script struct {
	// Status is the HTTP status; 0 means 200 and a stream of Steps. With a status of 400
	// or more the server sends the flavor's error body instead.
	Status int
	// Header holds extra response headers, e.g. {"Retry-After": "2"} or
	// {"retry-after-ms": "1500"}.
	Header map[string]string
	// ErrorCode is the error code in the error body: OpenAI's "code"
	// ("context_length_exceeded"), Gemini's "status" ("RESOURCE_EXHAUSTED"). Empty picks
	// the usual one for Status. OpenRouter always sends the numeric status.
	ErrorCode string
	// ErrorMessage is the message in the error body; empty picks a typical one.
	ErrorMessage string
	// RetryDelay adds a google.rpc.RetryInfo detail with this retryDelay to a Gemini error
	// body.
	RetryDelay time.Duration
	// QuotaID adds to a Gemini error body a google.rpc.QuotaFailure detail whose one
	// violation has this quotaId ("GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
	// with QuotaValue as its quotaValue; the fields are those of QuotaFailure.Violation in
	// github.com/googleapis/googleapis google/rpc/error_details.proto, as the Gemini API
	// sends them with a 429 (ai.google.dev/gemini-api/docs/rate-limits).
	QuotaID string
	// QuotaValue is the limit of the QuotaID violation ("25"); empty sends none.
	QuotaValue string
	// Body, when set, is sent verbatim instead of the generated error or stream.
	Body string
	// ContentType overrides the response Content-Type.
	ContentType string
	// HeaderDelay stalls before any byte is sent, headers included.
	HeaderDelay time.Duration
	// KeepAlive sends an SSE comment every KeepAlive during Sleep steps.
	KeepAlive time.Duration
	// Steps make up the stream.
	Steps []Step
	// Finish is the finish reason sent at the end; empty sends "stop" ("STOP" for Gemini).
	Finish string
	// NoFinish ends the stream cleanly but without a finish reason, usage or [DONE].
	NoFinish bool
	// NoUsage ends the stream with its finish reason (and [DONE]) but no usage: what
	// OpenAI sends when the request did not ask for stream_options.include_usage, and what
	// some compatible servers send whatever it asked.
	NoUsage bool
	// Usage is reported at the end; nil computes one (about four characters a token).
	Usage *Usage
	// Model is the model id the stream reports; empty echoes the requested one.
	Model string
}

// Answer is a script that streams text in small chunks and finishes normally.
func Answer(text string) Script { return Script{Steps: Chunks(text, 8)} }

// Model describes a model for the model-list endpoint.
type Model struct {
	ID string
	// Context is the input context window in tokens.
	Context int
	// MaxOutput is the output limit in tokens.
	MaxOutput int
	// Pricing is an OpenRouter model's pricing object (US dollars per token as decimal
	// strings: "prompt", "completion", "input_cache_read", ...); nil lists $1 and $2 per
	// million prompt and completion tokens.
	Pricing map[string]string
	// Expires is OpenRouter's expiration_date ("2027-01-14"); empty lists null.
	Expires string
}

// defaultModels are listed when a test sets none.
var defaultModels = map[Flavor][]Model{
	OpenAI: {
		{ID: "gpt-4.1", Context: 1_047_576, MaxOutput: 32_768},
		{ID: "o3", Context: 200_000, MaxOutput: 100_000},
	},
	OpenRouter: {
		{ID: "openai/gpt-4o", Context: 128_000, MaxOutput: 16_384},
		{ID: "anthropic/claude-sonnet-4", Context: 200_000, MaxOutput: 64_000},
		{ID: "google/gemini-2.5-pro", Context: 1_048_576, MaxOutput: 65_536},
		{ID: "fake/small", Context: 1_000, MaxOutput: 500},
	},
}

// Request is one request the server received.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq int
	// Method, Path and Query are the request line.
	Method, Path, Query string
	// Header is the request's headers.
	Header http.Header
	// ContentLength is the length the request declared, -1 for a chunked body.
	ContentLength int64
	// Body is the request body; nil when the server discards bodies ([Server.DiscardBodies]).
	Body []byte
	// Model is the model asked for (from the body, or Gemini's path).
	Model string
	// Arrived is when the handler started.
	Arrived time.Time

	ended      chan struct{}
	served     chan struct{} // closed when the handler has returned
	mu         sync.Mutex
	endedAt    time.Time
	clientGone bool
	complete   bool // the whole scripted stream was written
}

// Ended is closed once the request's context has ended (the client went away, or the
// response was complete) and the handler has returned.
func (r *Request) Ended() <-chan struct{} { return r.ended }

// EndedAt is when the request's context ended (zero while it is still open).
func (r *Request) EndedAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endedAt
}

// setComplete records whether the whole scripted stream was written.
func (r *Request) setComplete(ok bool) {
	r.mu.Lock()
	r.complete = ok
	r.mu.Unlock()
}

// ClientGone reports whether the request ended because the client closed the connection
// (or cancelled the request) before the server had finished.
func (r *Request) ClientGone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clientGone
}

// JSON decodes the body into a generic map (nil if it is not a JSON object).
func (r *Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// Server is a fake upstream. Create it with [New] or [NewServer].
type Server struct {
	// Flavor is the wire format the server speaks.
	Flavor Flavor
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL string

	srv  *httptest.Server
	quit chan struct{}
	once sync.Once

	mu       sync.Mutex
	queue    []Script
	models   []Model
	modelsQ  []Script
	def      Script
	fn       func(*Request) Script
	reqs     []*Request
	changed  chan struct{}
	sequence int
	discard  bool
}

// New starts a server of the given flavor and closes it when the test ends.
func New(t testing.TB, f Flavor) *Server {
	t.Helper()
	s := NewServer(f)
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a server of the given flavor; call Close when done.
func NewServer(f Flavor) *Server {
	s := newServer(f)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

func newServer(f Flavor) *Server {
	return &Server{
		Flavor:  f,
		quit:    make(chan struct{}),
		models:  append([]Model(nil), defaultModels[f]...),
		def:     Answer("ok"),
		changed: make(chan struct{}),
	}
}

// BaseURL is the value to give a provider as its base URL (--base-url):
// URL+"/v1" for OpenAI, URL+"/api/v1" for OpenRouter, URL+"/" for Gemini (the client
// adds the API version).
func (s *Server) BaseURL() string {
	switch s.Flavor {
	case OpenRouter:
		return s.URL + "/api/v1"
	case Gemini:
		return s.URL + "/"
	}
	return s.URL + "/v1"
}

// Close ends every open stream and stops the server.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.quit)
		if s.srv != nil {
			s.srv.CloseClientConnections()
			s.srv.Close()
		}
	})
}

// Push queues scripts for the next generation requests, one script per request, in order.
// When the queue is empty the default script answers.
func (s *Server) Push(scripts ...Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, scripts...)
}

// SetDefault sets the script used when the queue is empty (initially [Answer]("ok")).
func (s *Server) SetDefault(sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = sc
}

// SetFunc makes fn choose the script for every generation request the queue does not
// cover; fn runs on the server's goroutine and may inspect the request.
func (s *Server) SetFunc(fn func(*Request) Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fn = fn
}

// SetModels replaces the models the model-list endpoint knows.
func (s *Server) SetModels(models ...Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]Model(nil), models...)
}

// PushModels queues scripts for the next model-list requests; only their
// Status, Header, error fields, Body and HeaderDelay apply. An empty queue lists the models.
func (s *Server) PushModels(scripts ...Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsQ = append(s.modelsQ, scripts...)
}

// DiscardBodies makes the server read request bodies without keeping them (Body stays nil),
// so that benchmarks and load tests measure the client and not the fake. The model of an OpenAI-style request is then unknown (its stream reports
// the script's Model).
func (s *Server) DiscardBodies() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discard = true
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Count returns how many requests for paths containing substr arrived ("" counts all).
func (s *Server) Count(substr string) int {
	n := 0
	for _, r := range s.Requests() {
		if strings.Contains(r.Path, substr) {
			n++
		}
	}
	return n
}

// Await waits until the n-th request (1-based) has arrived, at most timeout, and returns it.
func (s *Server) Await(n int, timeout time.Duration) (*Request, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.reqs) >= n {
			r := s.reqs[n-1]
			s.mu.Unlock()
			return r, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return nil, fmt.Errorf("fake %s: request %d did not arrive within %s", s.Flavor, n, timeout)
		}
	}
}

func (s *Server) record(r *http.Request, body []byte) *Request {
	req := &Request{
		Method:        r.Method,
		Path:          r.URL.Path,
		Query:         r.URL.RawQuery,
		Header:        r.Header.Clone(),
		ContentLength: r.ContentLength,
		Body:          body,
		Arrived:       time.Now(),
		ended:         make(chan struct{}),
		served:        make(chan struct{}),
	}
	if body != nil {
		if m, ok := req.JSON()["model"].(string); ok {
			req.Model = m
		}
	}
	if s.Flavor == Gemini {
		if _, rest, ok := strings.Cut(r.URL.Path, "/models/"); ok {
			req.Model, _, _ = strings.Cut(rest, ":")
		}
	}
	s.mu.Lock()
	s.sequence++
	req.Seq = s.sequence
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	ctx := r.Context()
	go func() {
		<-ctx.Done()
		req.mu.Lock()
		req.endedAt = time.Now()
		req.mu.Unlock()
		<-req.served
		close(req.ended)
	}()
	return req
}

func (s *Server) nextScript(req *Request) Script {
	s.mu.Lock()
	sc, ok := pop(&s.queue)
	fn, def := s.fn, s.def
	s.mu.Unlock()
	switch {
	case ok:
		return sc
	case fn != nil:
		return fn(req)
	}
	return def
}

func (s *Server) nextModelsScript() (Script, []Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, _ := pop(&s.modelsQ)
	return sc, append([]Model(nil), s.models...)
}

// pop takes the first script off q; ok is false (and sc zero) when q is empty.
func pop(q *[]Script) (sc Script, ok bool) {
	if len(*q) == 0 {
		return Script{}, false
	}
	sc, *q = (*q)[0], (*q)[1:]
	return sc, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	discard := s.discard
	s.mu.Unlock()
	var body []byte
	if discard {
		_, _ = io.Copy(io.Discard, r.Body)
	} else {
		body, _ = io.ReadAll(r.Body)
	}
	req := s.record(r, body)
	defer func() {
		// The context ends by itself only after the handler returns: ended earlier, the
		// client went away (or the server is closing).
		gone := r.Context().Err() != nil
		req.mu.Lock()
		// A client that read the whole stream may close the connection before the handler
		// has returned (a worker process that exits at once): that is not going away.
		req.clientGone = gone && !req.complete
		req.mu.Unlock()
		close(req.served)
	}()

	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && s.Flavor != Gemini && strings.HasSuffix(path, "/chat/completions"):
		s.generate(w, r, req)
	case r.Method == http.MethodPost && s.Flavor == Gemini && strings.HasSuffix(path, ":streamGenerateContent"):
		s.generate(w, r, req)
	case r.Method == http.MethodGet && s.Flavor != Gemini && strings.HasSuffix(path, "/models"):
		s.modelList(w, r)
	default:
		s.writeError(w, Script{Status: http.StatusNotFound, ErrorMessage: "no route for " + r.Method + " " + path})
	}
}

// Barrier holds the next n generation requests until all n have arrived, then answers each
// with sc: a test that sees them all answered knows they were in flight at once, with no
// bound on how long that took. A request held longer than within is answered with a 500
// naming the barrier (a guard against a hang, not a measure of speed).
func (s *Server) Barrier(n int, within time.Duration, sc Script) {
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var seen atomic.Int32
	s.SetFunc(func(*Request) Script {
		if seen.Add(1) <= int32(n) {
			arrived.Done()
		}
		select {
		case <-all:
			return sc
		case <-time.After(within):
			return Script{Status: 500, ErrorMessage: fmt.Sprintf("not all %d requests reached the upstream together", n)}
		}
	})
}
