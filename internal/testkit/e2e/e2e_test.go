package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// model is the model every call names: the fake lists it with a 1M-token window.
const model = "google/gemini-2.5-pro"

// sdkDir is where `npm ci --prefix internal/testkit/e2e` puts the TypeScript SDK.
const sdkDir = "node_modules/@modelcontextprotocol/sdk"

// nodeTests are the tests that drive the binary with the TypeScript SDK (client.mjs,
// httpauth.mjs). Where Node or the SDK is missing, TestMain leaves them out and says so in one
// line, so that `go test ./...` needs only Go; TestGoSDK needs only Go and always runs.
// `make test` sets CONSULT_E2E_REQUIRED=1: there a missing client fails them.
var nodeTests = []string{
	"TestProgressKeepsClientWaiting", "TestClientTimeoutCancelsUpstream", "TestIdleTimeout",
	"TestSIGTERMCancelsCalls", "TestHybridWait", "TestRestartKeepsAnswer",
	"TestClientCutKeepsAnswer", "TestHTTPMissingTokenNamed",
}

// runWith is how to run the tests nodeTests names, for the line that says they were skipped.
const runWith = "`make test` installs and runs them (or npm ci --prefix internal/testkit/e2e --no-audit --no-fund, then go test ./internal/testkit/e2e/)"

var (
	// binary is the consult binary TestMain built.
	binary string
	// missing says why the node client cannot run ("" when it can).
	missing string
	// required (CONSULT_E2E_REQUIRED=1) makes a missing node client fail the tests that need
	// it instead of leaving them out.
	required = os.Getenv("CONSULT_E2E_REQUIRED") == "1"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testrun.SetParallel()

	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH (Node.js 20 or later)"
	} else if _, err := os.Stat(filepath.Join(sdkDir, "package.json")); err != nil {
		missing = "the TypeScript MCP SDK is not installed in internal/testkit/e2e/node_modules"
	}
	if missing != "" && !required {
		skip := "^(" + strings.Join(nodeTests, "|") + ")$"
		if s := flag.Lookup("test.skip").Value.String(); s != "" {
			skip = s + "|" + skip
		}
		flag.Set("test.skip", skip)
		fmt.Printf("e2e: skipping the tests that use the TypeScript SDK: %s; %s\n", missing, runWith)
	}

	bin, cleanup, err := testrun.BuildConsult("../../../cmd/consult", os.Getenv("CONSULT_E2E_RACE") == "1")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building consult:", err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// requireClient fails a test that needs the node client where it cannot run: TestMain left
// those out unless CONSULT_E2E_REQUIRED=1, so that is the only way here, or a test missing
// from nodeTests.
func requireClient(t *testing.T) {
	t.Helper()
	if missing == "" {
		return
	}
	if !required {
		t.Fatalf("%s, and %s is not in nodeTests (which TestMain leaves out then)", missing, t.Name())
	}
	t.Fatalf("%s (CONSULT_E2E_REQUIRED=1); %s", missing, runWith)
}

// scenario is what client.mjs is told to do; see the comment at its top.
type scenario struct {
	Transport string   `json:"transport"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	URL       string   `json:"url,omitempty"`
	Token     string   `json:"token,omitempty"` // http: the bearer token the server requires
	// step is the single call of a one-call scenario.
	step
	// LingerOnCue keeps the session open after a failed last call until the test cues
	// "close" (60 s at most).
	LingerOnCue bool   `json:"lingerOnCue,omitempty"`
	LogLevel    string `json:"logLevel,omitempty"`
	// Steps, when set, replace the single call above (Tool ... AbortAfterMs) with calls made
	// one after the other in one session.
	Steps []step `json:"steps,omitempty"`
	// ExitWaitMs (stdio): after the calls, close the server's stdin and wait this long for it
	// to exit by itself; outcome.ServerExit says how it did.
	ExitWaitMs int `json:"exitWaitMs,omitempty"`

	// OnEvent, when set, is called with each event client.mjs reports as it happens.
	OnEvent func(clientEvent) `json:"-"`
	// Cues, when set, are written to client.mjs's stdin as they come ("timeout <step>",
	// "close"): the test says when, from what it sees, rather than a timer.
	Cues chan string `json:"-"`
}

// clientEvent is a line client.mjs prints as something happens, before its outcome.
type clientEvent struct {
	Event string `json:"event"` // "sent" or "progress"
	Step  int    `json:"step"`
	Count int    `json:"count"` // progress: how many the step has had
	At    int64  `json:"at"`    // progress: ms since the step's call was sent
}

// step is one call of a multi-call scenario.
type step struct {
	Tool                   string         `json:"tool"`
	Arguments              map[string]any `json:"arguments"`
	Timeout                int            `json:"timeout,omitempty"` // ms
	ResetTimeoutOnProgress bool           `json:"resetTimeoutOnProgress,omitempty"`
	Progress               bool           `json:"progress,omitempty"`
	AbortAfterMs           int            `json:"abortAfterMs,omitempty"`
	// TimeoutOnCue: the call gives up as its timeout does (the SDK's own cancellation and
	// error, -32001 "Request timed out") when the test cues "timeout <step>", not at Timeout.
	TimeoutOnCue bool `json:"timeoutOnCue,omitempty"`
	// IDFrom, when set, makes arguments.id the value at IDPath ("id" when empty) in the
	// structuredContent of the result of step *IDFrom.
	IDFrom *int   `json:"idFrom,omitempty"`
	IDPath string `json:"idPath,omitempty"`
}

// fromStep is a step's IDFrom.
func fromStep(i int) *int { return &i }

// outcome is the JSON line client.mjs prints. Its call fields are those of the first (or
// only) call; Steps has every call.
type outcome struct {
	callOutcome
	Steps      []callOutcome `json:"steps"`
	ServerPid  int           `json:"serverPid"`  // stdio: the server process node spawned
	ServerExit *serverExit   `json:"serverExit"` // stdio with ExitWaitMs: how the server ended
	Logs       []struct {
		Level string `json:"level"`
		Data  any    `json:"data"`
		At    int64  `json:"at"` // ms since the first call was sent
	} `json:"logs"`
	// SDKErrors are what the SDK reported to client.onerror: not failures of a call, but
	// e.g. a response or a progress notification for a request it had already given up on.
	SDKErrors []struct {
		Message string `json:"message"`
		At      int64  `json:"at"` // Date.now()
	} `json:"sdkErrors"`
	Fatal string `json:"fatal"`
}

// callOutcome is what one call did.
type callOutcome struct {
	OK         bool           `json:"ok"`
	Result     *toolResult    `json:"result"`
	Error      *callError     `json:"error"`
	StartedAt  int64          `json:"startedAt"`  // Date.now() when the call was sent
	FinishedAt int64          `json:"finishedAt"` // Date.now() when it resolved or failed
	AbortedAt  int64          `json:"abortedAt"`  // Date.now() when the AbortController was aborted
	ElapsedMs  int64          `json:"elapsedMs"`
	Progress   []progressNote `json:"progress"`
}

// progressNote is one notifications/progress the call's onprogress handler received.
type progressNote struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
	At       int64    `json:"at"` // ms since the call was sent
}

// serverExit is how a stdio server process ended: Code and Signal as node's "exit" event
// gave them (both nil when it had not exited within ExitWaitMs), At its Date.now().
type serverExit struct {
	Code   *int    `json:"code"`
	Signal *string `json:"signal"`
	At     int64   `json:"at"`
}

// toolResult is the part of a CallToolResult the tests look at.
type toolResult struct {
	IsError           bool           `json:"isError"`
	Text              string         `json:"text"` // the text contents, joined by newlines
	StructuredContent map[string]any `json:"structuredContent"`
}

// callError is the error a call failed with, as the SDK raised it.
type callError struct {
	Name    string `json:"name"`
	Code    *int   `json:"code"` // the JSON-RPC / SDK error code, when there is one
	Message string `json:"message"`
}

func (e *callError) String() string {
	if e == nil {
		return "<no error>"
	}
	code := "none"
	if e.Code != nil {
		code = fmt.Sprint(*e.Code)
	}
	return fmt.Sprintf("%s (code %s): %s", e.Name, code, e.Message)
}

// sdkRequestTimeout is the SDK's ErrorCode.RequestTimeout.
const sdkRequestTimeout = -32001

// env is one consult server under test with its fake upstream.
type env struct {
	t         *testing.T
	transport string
	fake      *fake.Server
	args      []string    // consult arguments (stdio: node spawns it)
	results   string      // the --results-dir every server of this env gets (a t.TempDir)
	http      *httpServer // http: the consult subprocess
}

// newEnv starts a fake OpenRouter and, for http, a consult server on a free port; for stdio
// the node client spawns consult itself. flags are extra server flags. Every server gets a
// --results-dir of its own, never the user's state directory.
func newEnv(t *testing.T, transport string, flags ...string) *env {
	t.Helper()
	srv := fake.New(t, fake.OpenRouter)
	results := t.TempDir()
	args := append([]string{"openrouter", "test-key", "--base-url", srv.BaseURL(), "--heartbeat", heartbeat.String(),
		"--results-dir", results}, flags...)
	e := &env{t: t, transport: transport, fake: srv, args: args, results: results}
	if transport == "http" {
		e.http = startHTTP(t, args, rand.Text())
	}
	return e
}

// httpServer is a consult --http subprocess.
type httpServer struct {
	url    string
	token  string // the bearer token it requires (CONSULT_HTTP_TOKEN)
	cmd    *exec.Cmd
	exited chan error // cmd.Wait's result, sent once
	logs   *syncBuffer

	once     sync.Once
	stopErr  error
	stopTook time.Duration
}

// startHTTP runs consult with --http on a free port, requiring token, and waits until it
// accepts connections. The token is the client's identity: a server restarted with the same
// token serves the same owner's consultations. At the end of the test it stops the server and
// checks that it exited cleanly within a few seconds of SIGTERM.
func startHTTP(t *testing.T, args []string, token string) *httpServer {
	t.Helper()
	addr := freeAddr(t)
	h := &httpServer{url: "http://" + addr + "/mcp", token: token, exited: make(chan error, 1), logs: &syncBuffer{}}
	h.cmd = exec.Command(binary, append(args, "--http", addr)...)
	h.cmd.Env = append(os.Environ(), "CONSULT_HTTP_TOKEN="+h.token)
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("starting consult --http: %v", err)
	}
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		took, err := h.stop()
		if err != nil {
			t.Error(err)
		} else {
			t.Logf("consult --http exited %s after SIGTERM", took.Round(time.Millisecond))
		}
		if t.Failed() {
			t.Logf("consult --http log:\n%s", h.logs.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return h
		}
		select {
		case err := <-h.exited:
			h.exited <- err
			t.Fatalf("consult --http exited before listening (%v):\n%s", err, h.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("consult --http is not listening on %s after 10s:\n%s", addr, h.logs.String())
		}
	}
}

// stop sends SIGTERM (the first time it is called) and waits up to 30 s for the server to
// exit, killing it after that. It returns how long the exit took and an error unless the
// server exited with status 0 in time.
func (h *httpServer) stop() (time.Duration, error) {
	h.once.Do(func() {
		start := time.Now()
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			h.stopErr = fmt.Errorf("SIGTERM: %w", err)
		}
		select {
		case err := <-h.exited:
			h.stopTook = time.Since(start)
			if err != nil {
				h.stopErr = fmt.Errorf("consult --http after SIGTERM: %v, want exit status 0", err)
			}
		case <-time.After(30 * time.Second): // a hang guard
			_ = h.cmd.Process.Kill()
			<-h.exited
			h.stopTook = time.Since(start)
			h.stopErr = fmt.Errorf("consult --http did not exit within 30s of SIGTERM; killed")
		}
	})
	return h.stopTook, h.stopErr
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// call runs client.mjs with sc (transport, command and URL filled in from e) and returns
// what it printed; it fails the test when the client itself broke.
func (e *env) call(sc scenario) outcome {
	e.t.Helper()
	out, err := e.tryCall(sc)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// tryCall is call for goroutines other than the test's: it returns an error instead of
// failing the test.
func (e *env) tryCall(sc scenario) (outcome, error) {
	t := e.t
	sc.Transport = e.transport
	if e.transport == "http" {
		sc.URL, sc.Token = e.http.url, e.http.token
	} else {
		sc.Command, sc.Args = binary, e.args
	}
	if sc.Tool == "" && len(sc.Steps) == 0 {
		sc.Tool = "consultation"
	}
	for i := range sc.Steps {
		if sc.Steps[i].Tool == "" {
			sc.Steps[i].Tool = "consultation"
		}
	}
	var out outcome
	js, err := json.Marshal(sc)
	if err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a hang guard
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", "client.mjs", string(js))
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return out, err
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		return out, err
	}
	if err := cmd.Start(); err != nil {
		return out, err
	}
	cuesDone := make(chan struct{})
	go func() { // the cues, until the client ends
		for {
			select {
			case cue := <-sc.Cues: // a nil channel: never
				fmt.Fprintln(stdin, cue)
			case <-cuesDone:
				return
			}
		}
	}()
	var stdout bytes.Buffer
	var last string
	lines := bufio.NewScanner(stdoutPipe)
	lines.Buffer(make([]byte, 1<<16), 64<<20)
	for lines.Scan() {
		line := lines.Text()
		stdout.WriteString(line + "\n")
		var ev clientEvent
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event != "" {
			if sc.OnEvent != nil {
				sc.OnEvent(ev)
			}
			continue
		}
		last = line
	}
	runErr := cmd.Wait()
	close(cuesDone)
	stdin.Close()
	t.Cleanup(func() {
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("node client stderr (with the server log on stdio):\n%s", stderr.String())
		}
	})
	if err := json.Unmarshal([]byte(last), &out); err != nil {
		return out, fmt.Errorf("node client: %w; stdout %q; stderr:\n%s", errors.Join(runErr, lines.Err(), err), stdout.String(), stderr.String())
	}
	if out.Fatal != "" {
		return out, fmt.Errorf("node client failed before or around the call: %s", out.Fatal)
	}
	if len(sc.Steps) == 0 {
		t.Logf("%s: ok=%v elapsed=%dms progress=%d", e.transport, out.OK, out.ElapsedMs, len(out.Progress))
	}
	for i, st := range out.Steps {
		if len(sc.Steps) > 0 {
			t.Logf("%s: step %d %s: ok=%v elapsed=%dms progress=%d", e.transport, i, sc.Steps[i].Tool, st.OK, st.ElapsedMs, len(st.Progress))
		}
	}
	for _, se := range out.SDKErrors {
		t.Logf("%s: SDK onerror at %d: %s", e.transport, se.At, se.Message)
	}
	if len(sc.Steps) > 0 && len(out.Steps) != len(sc.Steps) {
		return out, fmt.Errorf("node client ran %d of %d steps", len(out.Steps), len(sc.Steps))
	}
	return out, nil
}

// chatRequest returns the (single) generation request the fake received.
func (e *env) chatRequest() *fake.Request {
	e.t.Helper()
	var found []*fake.Request
	for _, r := range e.fake.Requests() {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("fake upstream got %d chat completion requests, want 1", len(found))
	}
	return found[0]
}

// ended waits for r to end and returns when it did.
func ended(t *testing.T, r *fake.Request, within time.Duration) time.Time {
	t.Helper()
	select {
	case <-r.Ended():
		return r.EndedAt()
	case <-time.After(within):
		t.Fatalf("upstream request still open %s after the client finished", within)
		return time.Time{}
	}
}

// codebase makes a small directory for the tool to read.
func codebase(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"alpha.go":     "package alpha\n\n// Alpha answers.\nfunc Alpha() int { return 42 }\n",
		"beta/beta.go": "package beta\n\n// Beta asks.\nfunc Beta() string { return \"why\" }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// callArgs are the consultation arguments used by every scenario, plus extra.
func callArgs(t *testing.T, extra map[string]any) map[string]any {
	args := map[string]any{
		"path":    codebase(t),
		"pattern": "**/*.go",
		"query":   "What does Alpha return?",
		"model":   model,
	}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

// eachTransport runs f, which drives the node client, as a parallel subtest over stdio and
// over streamable HTTP.
func eachTransport(t *testing.T, f func(t *testing.T, transport string)) {
	t.Parallel()
	requireClient(t)
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			f(t, tr)
		})
	}
}

// heartbeat is the server's --heartbeat in every scenario unless it gives its own: several
// notifications inside the client timeouts below that progress resets, even on a busy
// machine.
const heartbeat = 250 * time.Millisecond

// heldAnswer queues a model that thinks, then (with OpenRouter's keep-alive comments every
// 500 ms, as the real one sends them, only more often) waits until release is called, then
// streams the answer: it answers when the test has seen what must come first, not after a
// time a busy machine may pass. release runs at the latest when the test ends, before the
// fake closes.
func (e *env) heldAnswer() (release func()) {
	held := make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	e.t.Cleanup(release)
	steps := []fake.Step{fake.Think("Let me look."), fake.Wait(held)}
	e.fake.Push(fake.Script{KeepAlive: 500 * time.Millisecond, Steps: append(steps, fake.Chunks(answerText, 8)...)})
	return release
}

// chatArrived returns a channel that gets the first generation request once the fake has it,
// or nil after 30 s (a hang guard; the test's own checks then fail). For goroutines other
// than the test's.
func (e *env) chatArrived() <-chan *fake.Request {
	ch := make(chan *fake.Request, 1)
	go func() {
		for seq := 1; ; seq++ {
			req, err := e.fake.Await(seq, 30*time.Second)
			if err != nil {
				ch <- nil
				return
			}
			if strings.HasSuffix(req.Path, "/chat/completions") {
				ch <- req
				return
			}
		}
	}()
	return ch
}

// Smoke test and scenario (a), in one session: a dry run (no model request), then a call
// with a client timeout of 1.5 s and resetTimeoutOnProgress, whose model answers only once
// the client has had six heartbeats and has waited longer than its timeout: the heartbeats
// kept the client waiting, and the answer arrives. The upstream request carries the model,
// the files, the query and the key.
//
// A client starved of CPU for longer than its timeout less one heartbeat may run its
// expired timer before it reads the heartbeats waiting on its socket, and time out though
// they were sent: 1.5 s and 250 ms leave 1.25 s of starvation.
func TestProgressKeepsClientWaiting(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		release := e.heldAnswer()
		const clientTimeout = 1500
		out := e.call(scenario{Steps: []step{
			{Arguments: callArgs(t, map[string]any{"dry_run": true}), Timeout: 20_000},
			{Arguments: callArgs(t, map[string]any{"timeout": 20}), Timeout: clientTimeout, ResetTimeoutOnProgress: true, Progress: true},
		}, OnEvent: func(ev clientEvent) {
			if ev.Event == "progress" && ev.Step == 1 && ev.Count >= 6 && ev.At > clientTimeout {
				release()
			}
		}})
		dry, call := out.Steps[0], out.Steps[1]

		res := requireStep(t, dry)
		if res.IsError {
			t.Fatalf("dry run: isError, text:\n%s", res.Text)
		}
		if got, want := res.StructuredContent["kind"], "dry_run"; got != want {
			t.Errorf("dry run: structuredContent.kind = %v, want %q", got, want)
		}
		if got, want := res.StructuredContent["files"], 2.0; got != want {
			t.Errorf("dry run: structuredContent.files = %v, want %v", got, want)
		}
		if !strings.Contains(res.Text, "alpha.go") {
			t.Errorf("dry-run text does not name alpha.go:\n%s", res.Text)
		}

		checkNotes(t, sentOrder(transport, call.Progress), 6, "the answer waited for six")
		res = requireStep(t, call)
		if res.IsError {
			t.Fatalf("isError after %dms, text:\n%s", call.ElapsedMs, res.Text)
		}
		if !strings.Contains(res.Text, answerText) {
			t.Errorf("result text does not hold the answer:\n%s", res.Text)
		}
		if got, want := res.StructuredContent["kind"], "answer"; got != want {
			t.Errorf("structuredContent.kind = %v, want %q", got, want)
		}
		if call.ElapsedMs <= clientTimeout {
			t.Errorf("answered after %dms, within the client's timeout of %dms: the heartbeats were not needed", call.ElapsedMs, clientTimeout)
		}
		// The only generation request is the answered call's: the dry run sent none.
		req := e.chatRequest()
		if req.Model != model {
			t.Errorf("upstream model = %q, want %q", req.Model, model)
		}
		for _, s := range []string{"func Alpha() int", "func Beta() string", "What does Alpha return?"} {
			if !bytes.Contains(req.Body, []byte(s)) {
				t.Errorf("upstream request body lacks %q", s)
			}
		}
		if got := req.Header.Get("Authorization"); got != "Bearer test-key" {
			t.Errorf("upstream Authorization = %q, want %q", got, "Bearer test-key")
		}
	})
}

// sentOrder returns notes in the order the server sent them. Over stdio that is the order
// they arrived in. Over streamable HTTP, mcp-go hands a session's notifications to whichever
// of its open streams (the call's POST response, another call's, the standalone GET stream)
// takes them first, so two sent close together can arrive out of order on a busy machine:
// there they are sorted by progress, and checkNotes still finds a repeated value.
func sentOrder(transport string, notes []progressNote) []progressNote {
	if transport != "http" {
		return notes
	}
	notes = slices.Clone(notes)
	slices.SortStableFunc(notes, func(a, b progressNote) int { return cmp.Compare(a.Progress, b.Progress) })
	return notes
}

// checkNotes asserts that there are at least atLeast progress notifications (why says why
// that many), with progress strictly increasing and each with a message of at most 200
// characters.
func checkNotes(t *testing.T, notes []progressNote, atLeast int, why string) {
	t.Helper()
	var at []string
	for i, p := range notes {
		at = append(at, fmt.Sprintf("%dms %v %q", p.At, p.Progress, p.Message))
		if i > 0 && p.Progress <= notes[i-1].Progress {
			t.Errorf("progress #%d = %v, not above the previous %v", i+1, p.Progress, notes[i-1].Progress)
		}
		if p.Message == "" {
			t.Errorf("progress #%d has no message", i+1)
		}
		if n := len([]rune(p.Message)); n > 200 {
			t.Errorf("progress #%d message is %d characters, want at most 200: %q", i+1, n, p.Message)
		}
	}
	if len(notes) < atLeast {
		t.Errorf("got %d progress notifications, want at least %d (%s)", len(notes), atLeast, why)
	}
	t.Logf("progress: %s", strings.Join(at, "; "))
}

// shutdownGrace is how long consult --http waits for calls in flight when it is told to stop
// (cmd/consult's serve): a server that exits sooner with a call running cancelled the call
// rather than waiting for it.
const shutdownGrace = 5 * time.Second

// Scenario (b): after a dry run, a call without resetTimeoutOnProgress whose client gives up
// as its timeout does (the SDK's cancellation, RequestTimeout) once the upstream has the
// request: consult closes the upstream request, while the session is still open (the client
// keeps it until the test has seen the request end), so only the cancellation can have
// ended it; the model never answers and the call's timeout is 30 s. The client was warned
// of that long timeout, in the progress notification sent at once and in a warning-level
// notifications/message that reaches it though it never chose a log level.
func TestClientTimeoutCancelsUpstream(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		e.fake.Push(fake.Script{KeepAlive: 500 * time.Millisecond, Steps: []fake.Step{fake.Think("Let me look."), fake.Hang()}})
		cues := make(chan string, 2)
		cut, closing := make(chan time.Time, 1), make(chan time.Time, 1)
		arrived := e.chatArrived()
		go func() {
			defer close(cut)
			defer close(closing)
			req := <-arrived
			if req == nil {
				return
			}
			cut <- time.Now()
			cues <- "timeout 1"
			select {
			case <-req.Ended():
			case <-time.After(30 * time.Second): // a hang guard: the checks below fail
			}
			closing <- time.Now()
			cues <- "close"
		}()
		all := e.call(scenario{
			Steps: []step{
				{Arguments: callArgs(t, map[string]any{"dry_run": true}), Timeout: 20_000},
				{Arguments: callArgs(t, map[string]any{"timeout": 30}), Timeout: 60_000, TimeoutOnCue: true, Progress: true},
			},
			LingerOnCue: true,
			Cues:        cues,
		})
		requireStep(t, all.Steps[0])
		out := all.Steps[1]
		if out.OK {
			t.Fatalf("call succeeded after %dms, want the SDK's request timeout", out.ElapsedMs)
		}
		if out.Error.Code == nil || *out.Error.Code != sdkRequestTimeout {
			t.Errorf("error = %v, want code %d (RequestTimeout)", out.Error, sdkRequestTimeout)
		}
		req := e.chatRequest()
		end := ended(t, req, 30*time.Second)
		cutAt, closedAt := <-cut, <-closing
		t.Logf("upstream request ended %s after the client gave up (ClientGone=%v)", end.Sub(cutAt).Round(time.Millisecond), req.ClientGone())
		if end.Before(cutAt) {
			t.Errorf("upstream request ended %s before the client gave up", cutAt.Sub(end))
		}
		if !end.Before(closedAt) {
			t.Errorf("upstream request ended when the session closed: the cancellation did not end it")
		}
		if !req.ClientGone() {
			t.Errorf("upstream request completed instead of being closed by consult")
		}
		checkNothingAfterCancel(t, all)

		const warning = "timeout 30 seconds accepted"
		if len(out.Progress) == 0 || !strings.Contains(out.Progress[0].Message, warning) {
			t.Errorf("progress = %+v, want the warning in the first notification", out.Progress)
		}
		logged := false
		for _, l := range all.Logs {
			if s, ok := l.Data.(string); ok && l.Level == "warning" && strings.Contains(s, warning) {
				logged = true
			}
		}
		if !logged {
			t.Errorf("logs = %+v, want the warning at level warning", all.Logs)
		}
	})
}

// checkNothingAfterCancel asserts that the server sent no response to a call the client
// cancelled (the specification: SHOULD NOT), which the SDK reports through onerror as a
// response for an unknown message ID. (A heartbeat may still cross the cancellation on
// the wire; consult drops those it has not sent yet.)
func checkNothingAfterCancel(t *testing.T, out outcome) {
	t.Helper()
	for _, se := range out.SDKErrors {
		if strings.Contains(se.Message, "unknown message ID") {
			t.Errorf("the server wrote to a cancelled call: SDK onerror %q", se.Message)
		}
	}
}

// Scenario (d): with --idle-timeout 1s, an upstream that sends nothing (not even response
// headers), or stalls after one reasoning delta with no keep-alives, is cut at about 1 s. The
// transport plays no part in it, so each case runs over one of them.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, transport string
		script          fake.Script
	}{
		{"silent", "stdio", fake.Script{HeaderDelay: time.Hour}},
		{"stalled", "http", fake.Script{Steps: []fake.Step{fake.Think("Hmm."), fake.Hang()}}},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+tc.transport, func(t *testing.T) {
			t.Parallel()
			requireClient(t)
			e := newEnv(t, tc.transport, "--idle-timeout", "1s")
			e.fake.Push(tc.script)
			out := e.call(scenario{step: step{
				Arguments: callArgs(t, map[string]any{"timeout": 20}),
				Timeout:   10_000, ResetTimeoutOnProgress: true, Progress: true,
			}})
			res := requireResult(t, out)
			if !res.IsError {
				t.Errorf("result is not an error after %dms:\n%s", out.ElapsedMs, res.Text)
			}
			if want := "No progress for 1 second (idle timeout)"; !strings.Contains(res.Text, want) {
				t.Errorf("result text lacks %q:\n%s", want, res.Text)
			}
			// The text names the idle timeout, not the call's 20 s or the client's 10 s: what
			// cut the call; here only that it did not cut it early.
			req := e.chatRequest()
			end := ended(t, req, 30*time.Second)
			idle := end.Sub(req.Arrived)
			t.Logf("upstream request cut %s after it arrived; result %dms after the upstream ended",
				idle.Round(time.Millisecond), out.FinishedAt-end.UnixMilli())
			if idle < 900*time.Millisecond {
				t.Errorf("upstream request cut %s after it arrived, before the idle timeout of 1s", idle.Round(time.Millisecond))
			}
			if !req.ClientGone() {
				t.Error("upstream request completed instead of being cut by consult")
			}
		})
	}
}

// SIGTERM to consult --http during a call ends the upstream request at once and the server
// exits within a few seconds. (Over stdio the SDK owns the server process; closing stdin is
// what a stdio client does, and the scenarios above end that way; cmd/consult's
// TestSignalEndsCalls sends the signals to the stdio binary.)
func TestSIGTERMCancelsCalls(t *testing.T) {
	t.Parallel()
	requireClient(t)
	e := newEnv(t, "http")
	e.fake.Push(fake.Script{Steps: []fake.Step{fake.Think("Hmm."), fake.Hang()}})
	args := callArgs(t, map[string]any{"timeout": 20})
	type result struct {
		out outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := e.tryCall(scenario{step: step{
			Arguments: args,
			Timeout:   1500, ResetTimeoutOnProgress: true, Progress: true,
		}})
		done <- result{out, err}
	}()
	req := e.awaitChat(1)
	time.Sleep(200 * time.Millisecond) // the call is under way upstream
	sent := time.Now()
	took, _ := e.http.stop() // the cleanup reports a failed stop
	end := ended(t, req, 30*time.Second)
	lag := end.Sub(sent)
	t.Logf("after SIGTERM: upstream request ended in %s, consult exited in %s", lag.Round(time.Millisecond), took.Round(time.Millisecond))
	if !req.ClientGone() {
		t.Error("upstream request completed instead of being closed by consult")
	}
	// The model never answers and the call's timeout is 20 s: exiting before the shutdown's
	// grace ran out means the call was cancelled, not waited for.
	if took >= shutdownGrace {
		t.Errorf("consult --http took %s to exit after SIGTERM with a call running: it waited out the shutdown grace of %s", took.Round(time.Millisecond), shutdownGrace)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	out := r.out
	switch {
	case out.OK:
		t.Logf("client got a result after SIGTERM (isError=%v): %.200s", out.Result.IsError, out.Result.Text)
	default:
		t.Logf("client got an error after SIGTERM: %v", out.Error)
	}
}

// awaitChat waits for the n-th (1-based) generation request at the fake and returns it.
func (e *env) awaitChat(n int) *fake.Request {
	e.t.Helper()
	seen := 0
	for seq := 1; ; seq++ {
		req, err := e.fake.Await(seq, 10*time.Second)
		if err != nil {
			e.t.Fatal(err)
		}
		if strings.HasSuffix(req.Path, "/chat/completions") {
			if seen++; seen == n {
				return req
			}
		}
	}
}

// requireResult fails unless the call returned a tool result.
func requireResult(t *testing.T, out outcome) *toolResult {
	t.Helper()
	return requireStep(t, out.callOutcome)
}

// requireStep fails unless the call returned a tool result.
func requireStep(t *testing.T, out callOutcome) *toolResult {
	t.Helper()
	if !out.OK || out.Result == nil {
		t.Fatalf("call failed after %dms: %v", out.ElapsedMs, out.Error)
	}
	return out.Result
}

// syncBuffer is a bytes.Buffer safe for a writing process and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
