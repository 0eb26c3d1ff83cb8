//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// heldAnswer is the upstream of the background tests. A query with "hang" gets a first part
// and then nothing; one with "quick" its answer at once; any other gets answer once the
// test calls release (at the latest when it ends), so that the test decides when the
// answer arrives: after the call that started it returned, after its server stopped.
func heldAnswer(t *testing.T, answer string) (srv *fake.Server, release func()) {
	srv = fake.New(t, fake.OpenRouter)
	held := make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before the fake closes: a held request would keep it open
	srv.SetFunc(func(r *fake.Request) fake.Script {
		switch body := string(r.Body); {
		case strings.Contains(body, "hang"):
			return fake.Script{Steps: []fake.Step{fake.Text("first part"), fake.Hang()}}
		case strings.Contains(body, "quick"):
			return fake.Answer("the quick answer")
		}
		<-held
		return fake.Script{Steps: []fake.Step{fake.Think("hmm"), fake.Text(answer)}}
	})
	return srv, release
}

// stopWorkers kills, when the test ends, any worker still running in resultsDir: workers
// outlive the servers that start them.
func stopWorkers(t *testing.T, resultsDir string) {
	t.Cleanup(func() {
		recs, _ := results.Open(resultsDir, 0, 0, 0).List(0)
		for _, r := range recs {
			if r.Status == results.Running && r.Worker && r.PID > 0 {
				syscall.Kill(r.PID, syscall.SIGKILL)
			}
		}
	})
}

// The TestAnswerSurvives tests: with each shutdown sequence real clients use on a server
// whose background consultation is still waiting for its answer, a new server process with
// a new client collects the full answer, which arrives only after the first server has
// gone, and the worker leaves only its record. (Three tests rather than subtests, so that
// each gets its turn among the parallel tests as early as any other.)

// TestAnswerSurvivesClaudeCodeQuit: Claude Code sends SIGINT, SIGTERM at 100 ms and SIGKILL
// at 1 s, to the process group.
func TestAnswerSurvivesClaudeCodeQuit(t *testing.T) {
	t.Parallel()
	answerSurvives(t, func(t *testing.T, s *rawServer) {
		group := func(sig syscall.Signal) { syscall.Kill(-s.cmd.Process.Pid, sig) }
		group(syscall.SIGINT)
		time.Sleep(100 * time.Millisecond)
		group(syscall.SIGTERM)
		time.Sleep(900 * time.Millisecond)
		group(syscall.SIGKILL)
	})
}

// TestAnswerSurvivesTypeScriptSDKQuit: the TypeScript SDK closes stdin and sends SIGTERM
// if the server still runs 2 s later. (That the server ends on its own when its stdin
// closes is TestSignalEndsCalls's; here either way the answer must survive.)
func TestAnswerSurvivesTypeScriptSDKQuit(t *testing.T) {
	t.Parallel()
	answerSurvives(t, func(t *testing.T, s *rawServer) {
		s.stdin.Close()
		select {
		case <-s.exited: // the server ends when its stdin closes: the SDK sends nothing more
		case <-time.After(2 * time.Second):
			t.Log("the server was still running 2 s after its stdin closed: SIGTERM, as the SDK sends")
			s.cmd.Process.Signal(syscall.SIGTERM)
		}
	})
}

// TestAnswerSurvivesSIGKILL: the server is killed outright.
func TestAnswerSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	answerSurvives(t, func(t *testing.T, s *rawServer) { s.cmd.Process.Kill() })
}

func answerSurvives(t *testing.T, quit func(t *testing.T, s *rawServer)) {
	srv, release := heldAnswer(t, "the full answer")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	args := []string{"openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms"}
	first := startRaw(t, args...)
	id := startBackground(t, first, 2, fixture(t), "a slow question")
	quit(t, first)
	select {
	case <-first.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit\n%s", first.stderr.String())
	}
	release()

	next := startRaw(t, args...)
	text, sc := next.call(t, 2, "consultation_result", map[string]any{"id": id, "wait": 10})
	if sc["kind"] != "answer" || !strings.HasPrefix(text, "the full answer") {
		t.Fatalf("collected after the shutdown: %v\n%s\nfirst server:\n%s", sc, text, first.stderr.String())
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d completion requests, want 1", n)
	}
	onlyRecord(t, resultsDir, id)
}

// onlyRecord checks that a finished worker left its record (and the marker saying it was
// collected) and nothing else, once it has had up to 20 s (a hang guard) to remove the rest.
func onlyRecord(t *testing.T, resultsDir, id string) {
	t.Helper()
	var names []string
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
		entries, err := os.ReadDir(resultsDir)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, e := range entries {
			// The worker slots' locks, the spend ledger, the model list cache and the marker of a
			// result collected stay.
			if n := e.Name(); !strings.HasPrefix(n, ".slot-") && n != "spend.json" && n != ".spend.lock" && n != "models.json" && n != "."+id+".collected" {
				names = append(names, e.Name())
			}
		}
		if len(names) == 1 && names[0] == id+".json" {
			return
		}
	}
	t.Errorf("the results directory holds %q, want only %s.json", names, id)
}

// TestWorkerLimitAndCancel: with --background-workers 1 a second continue-mode call is
// refused while the first runs, naming the flag; consultation_cancel stops the worker at
// once (its upstream request closes) and keeps what it had; then a new one may start.
func TestWorkerLimitAndCancel(t *testing.T) {
	t.Parallel()
	srv, _ := heldAnswer(t, "")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	s := startRaw(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms", "--background-workers", "1")
	dir := fixture(t)
	id := startHanging(t, s, 2, dir)
	text, _ := s.call(t, 3, "consultation", map[string]any{"path": dir, "pattern": "**/*.go", "query": "another",
		"model": "google/gemini-2.5-pro", "timeout": 1, "on_timeout": "continue"})
	if !strings.Contains(text, "--background-workers") || !strings.Contains(text, "running: 1, the most") {
		t.Errorf("a second worker over the limit: %s", text)
	}
	// On a busy machine the worker may still be starting: wait for its model request.
	var upstream *fake.Request
	for deadline := time.Now().Add(10 * time.Second); upstream == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, r := range srv.Requests() {
			if strings.Contains(r.Path, "chat/completions") {
				upstream = r
			}
		}
	}
	if upstream == nil {
		t.Fatal("no upstream request")
	}
	select {
	case <-upstream.Ended():
		t.Fatal("the upstream request ended before the cancel")
	default:
	}
	sent := time.Now()
	text, _ = s.call(t, 4, "consultation_cancel", map[string]any{"id": id})
	if !strings.Contains(text, "Consultation "+id+" is stopped") || !strings.Contains(text, "first part") {
		t.Errorf("cancel: %s", text)
	}
	// At once, not at the background limit (30 minutes): the request, which the fake holds
	// open for ever, ends with the worker gone. The 30 s wait is a hang guard.
	select {
	case <-upstream.Ended():
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream request is still open 30 s after the cancel")
	}
	if !upstream.ClientGone() {
		t.Error("the upstream request ended without the worker going away")
	}
	t.Logf("the upstream request closed %s after the cancel was sent", upstream.EndedAt().Sub(sent))
	onlyRecord(t, resultsDir, id)
	// Every continue-mode call runs in a worker, so one answered in-band took the free slot.
	// (It is answered at once; its 60 s give a busy machine time to start the worker.)
	text, sc := s.call(t, 5, "consultation", map[string]any{"path": dir, "pattern": "**/*.go", "query": "quick",
		"model": "google/gemini-2.5-pro", "timeout": 60, "on_timeout": "continue"})
	if sc["kind"] != "answer" || !strings.HasPrefix(text, "the quick answer") {
		t.Errorf("a worker after the cancel: %v\n%s", sc, text)
	}
}

// TestResultsCommand: a person lists the background consultations, stops one and reads
// what it had, without an agent.
func TestResultsCommand(t *testing.T) {
	t.Parallel()
	srv, _ := heldAnswer(t, "")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	s := startRaw(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms")
	id := startHanging(t, s, 2, fixture(t))
	consult := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"results", "--results-dir", resultsDir}, args...)...)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := consult(); err != nil || !strings.Contains(out, id+"  running") || !strings.Contains(out, "hang forever") {
		t.Errorf("consult results: %v\n%s", err, out)
	}
	if out, err := consult("--cancel", id); err != nil || !strings.Contains(out, "Consultation "+id+" is stopped") {
		t.Errorf("consult results --cancel: %v\n%s", err, out)
	}
	if out, _ := consult(id); !strings.Contains(out, "Cancelled with consultation_cancel") || !strings.Contains(out, "first part") {
		t.Errorf("consult results ID:\n%s", out)
	}
	out, _ := consult("--json", id)
	var rec results.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.ID != id || rec.Status != results.Done || rec.Answer != "first part" {
		t.Errorf("consult results --json ID: %v %v\n%s", err, rec, out)
	}
}

// TestUserCancelStopsWorker: a client's notifications/cancelled for a continue-mode call
// whose user pressed stop stops its worker: the upstream request closes and the record
// keeps what it had.
func TestUserCancelStopsWorker(t *testing.T) {
	t.Parallel()
	srv, _ := heldAnswer(t, "")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	s := startRaw(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms")
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "consultation",
		"_meta":     map[string]any{"progressToken": "p"},
		"arguments": map[string]any{"path": fixture(t), "pattern": "**/*.go", "query": "hang forever", "model": "google/gemini-2.5-pro", "timeout": 20, "on_timeout": "continue"}}})
	s.send(t, string(b))
	upstream, err := srv.Await(1, 10*time.Second)
	for err == nil && !strings.Contains(upstream.Path, "chat/completions") {
		upstream, err = srv.Await(upstream.Seq+1, 10*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Cancel once the worker has the first part of the answer: its heartbeat says so.
	s.awaitProgress(t, string(consultation.PhaseReceiving))
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"The user pressed stop"}}`)
	select { // a hang guard, before the call's own 20 s timeout
	case <-upstream.Ended():
	case <-time.After(15 * time.Second):
		t.Fatal("the upstream request is still open 15 s after the user cancelled")
	}
	recs, _ := results.Open(resultsDir, 0, 0, 0).List(0)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	id := recs[0].ID
	onlyRecord(t, resultsDir, id)
	rec, err := results.Open(resultsDir, 0, 0, 0).Load(id)
	if err != nil || rec.Status != results.Done || rec.Answer != "first part" || !strings.Contains(string(rec.Facts), "Cancelled by the user") {
		t.Errorf("record after the user cancelled: %+v %v", rec, err)
	}
}

// TestReadyNotice: when a background consultation finishes while its session is
// connected, the server sends notifications/message naming the id (and no
// notifications/resources/updated: it offers no resources/subscribe), and resources/list
// then lists consult://results/{id}, which resources/read returns with the answer. Reading
// a malformed, unknown, expired or another owner's id answers -32002 (this session's
// protocol, 2025-11-25) with data.uri.
func TestReadyNotice(t *testing.T) {
	t.Parallel()
	srv, release := heldAnswer(t, "the slow answer")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	s := startRaw(t, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms")
	id := startBackground(t, s, 2, fixture(t), "slow question")
	release() // the answer arrives after the call returned "still running"
	uri := "consult://results/" + id
	timeout := time.After(30 * time.Second) // a hang guard
	for notice := false; !notice; {
		select {
		case m := <-s.lines:
			params, _ := m["params"].(map[string]any)
			data, _ := params["data"].(string)
			notice = m["method"] == "notifications/message" && strings.Contains(data, id) && strings.Contains(data, "is ready")
			if m["method"] == "notifications/resources/updated" {
				t.Errorf("an unsolicited %v", m)
			}
		case <-timeout:
			t.Fatalf("no notice that %s is ready", id)
		}
	}
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)
	if list, _ := json.Marshal(s.await(t, 3)); !strings.Contains(string(list), uri) {
		t.Errorf("resources/list lacks %s: %s", uri, list)
	}
	s.send(t, `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
	if read, _ := json.Marshal(s.await(t, 4)); !strings.Contains(string(read), "the slow answer") {
		t.Errorf("resources/read: %s", read)
	}
	expired, theirs := results.NewID(time.Now()), results.NewID(time.Now())
	if err := results.Open(resultsDir, 0, 0, 0).Save(results.Record{ID: theirs, Owner: "another token", Status: results.Done, Created: time.Now(), Answer: "theirs"}); err != nil {
		t.Fatal(err)
	}
	if err := results.Open(resultsDir, time.Nanosecond, 0, 0).Save(results.Record{ID: expired, Status: results.Done, Created: time.Now(), Answer: "old"}); err != nil {
		t.Fatal(err)
	}
	for n, tc := range []struct{ id, words string }{
		{results.NewID(time.Now()), "Unknown id"},
		{"../../etc/passwd", "not a consultation id"},
		{expired, "expired"},
		{theirs, "Unknown id"},
	} {
		u := "consult://results/" + tc.id
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 10 + n, "method": "resources/read", "params": map[string]any{"uri": u}})
		s.send(t, string(b))
		m := s.await(t, 10+n)
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		msg, _ := e["message"].(string)
		if code, _ := e["code"].(float64); code != -32002 || data["uri"] != u || !strings.Contains(msg, tc.words) {
			t.Errorf("resources/read of %s: %v, want -32002 with data.uri and %q", tc.id, m, tc.words)
		}
	}
}

// TestHTTPSessionsListOwnFirst: two HTTP sessions (the same token) each see their own
// background consultation first when listing, and the other's marked "started by another
// session".
func TestHTTPSessionsListOwnFirst(t *testing.T) {
	t.Parallel()
	srv, _ := heldAnswer(t, "")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	cmd := exec.Command(binary, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--http", "127.0.0.1:0", "--results-dir", resultsDir)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "CONSULT_HTTP_TOKEN=" + testToken}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP over HTTP at (\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not say where it listens")
	}
	dir := fixture(t)
	call := func(c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	start := func(c *client.Client, query string) (string, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "consultation"
		req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": query, "model": "google/gemini-2.5-pro", "timeout": 1, "on_timeout": "continue"}
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			return "", err
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if id, _ := sc["id"].(string); id != "" {
			return id, nil
		}
		return "", fmt.Errorf("no id: %s", resultText(res))
	}
	a, b := sessionClient(t, endpoint), sessionClient(t, endpoint)
	var idA, idB string
	var errA, errB error
	var wg sync.WaitGroup // both at once: each waits out its 1 s timeout
	wg.Go(func() { idA, errA = start(a, "hang in session a") })
	wg.Go(func() { idB, errB = start(b, "hang in session b") })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("starting: %v, %v", errA, errB)
	}
	for _, tc := range []struct {
		c           *client.Client
		own, others string
	}{{a, idA, idB}, {b, idB, idA}} {
		text := resultText(call(tc.c, "consultation_result", map[string]any{}))
		lines := strings.Split(text, "\n")
		if len(lines) != 3 || !strings.Contains(lines[1], tc.own+" · running · started") || !strings.Contains(lines[2], tc.others+" · running · started by another session") {
			t.Errorf("listing:\n%s", text)
		}
	}
}

// sessionClient is an HTTP client speaking protocol 2025-06-18, whose sessions carry an
// Mcp-Session-Id (later protocol versions have no sessions).
func sessionClient(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	initClient(t, c, "2025-06-18")
	return c
}

// TestQuitWithinTimeoutKeepsAnswer: a continue-mode call still inside its timeout (60 s)
// whose client quits with Claude Code's sequence (SIGINT, SIGTERM 100 ms later) and no
// notifications/cancelled: the request already sent upstream goes on, and a new server
// lists the consultation and collects its answer, never written as failed.
func TestQuitWithinTimeoutKeepsAnswer(t *testing.T) {
	t.Parallel()
	srv, release := heldAnswer(t, "answered after the quit")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	args := []string{"openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms"}
	first := startRaw(t, args...)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "consultation",
		"arguments": map[string]any{"path": fixture(t), "pattern": "**/*.go", "query": "a slow question", "model": "google/gemini-2.5-pro", "timeout": 60, "on_timeout": "continue"}}})
	first.send(t, string(b))
	upstream, err := srv.Await(1, 10*time.Second)
	for err == nil && !strings.Contains(upstream.Path, "chat/completions") {
		upstream, err = srv.Await(upstream.Seq+1, 10*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	group := func(sig syscall.Signal) { syscall.Kill(-first.cmd.Process.Pid, sig) }
	group(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond)
	group(syscall.SIGTERM)
	select {
	case <-first.exited:
	case <-time.After(30 * time.Second): // a hang guard, below the call's 60 s
		t.Fatalf("the server did not exit\n%s", first.stderr.String())
	}
	if upstream.ClientGone() {
		t.Fatal("the upstream request was closed when the client quit")
	}
	release()
	next := startRaw(t, args...)
	_, list := next.call(t, 2, "consultation_result", map[string]any{})
	entries, _ := list["consultations"].([]any)
	if len(entries) != 1 {
		t.Fatalf("listing after the quit: %v", list)
	}
	id, _ := entries[0].(map[string]any)["id"].(string)
	text, sc := next.call(t, 3, "consultation_result", map[string]any{"id": id, "wait": 10})
	if sc["kind"] != "answer" || !strings.HasPrefix(text, "answered after the quit") {
		t.Fatalf("collected: %v\n%s", sc, text)
	}
	if n := srv.Count("/chat/completions"); n != 1 {
		t.Errorf("%d completion requests, want 1", n)
	}
}
