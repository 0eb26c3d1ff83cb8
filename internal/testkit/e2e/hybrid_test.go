package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult"
)

// The hybrid wait: a consultation with on_timeout "continue" returns "still running" with an
// id at its timeout and goes on in the background; consultation_result collects it, in the
// same session, after the client cut the call, or from another server process.

// answerText is what the model of these scenarios answers.
const answerText = "Alpha returns 42."

// idPattern is the form of a consultation id, like "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly".
var idPattern = regexp.MustCompile(`^\d{8}-\d{6}-[a-z2-7]{26}$`)

// continueArgs are the arguments of a consultation that returns "still running" after
// timeout seconds.
func continueArgs(t *testing.T, timeout int) map[string]any {
	return callArgs(t, map[string]any{"timeout": timeout, "on_timeout": "continue"})
}

// accepted asserts that a call succeeded with a result that is not an error and carries
// structuredContent. The call succeeding at all shows that the SDK accepted that content: it
// checks it against the output schema listTools returned and fails the call (McpError
// -32602) when it does not match.
func accepted(t *testing.T, call callOutcome, tool string) *toolResult {
	t.Helper()
	if !call.OK {
		t.Fatalf("%s failed after %dms: %v (the SDK also fails a call whose structuredContent does not match the tool's output schema)", tool, call.ElapsedMs, call.Error)
	}
	res := requireStep(t, call)
	if res.IsError {
		t.Fatalf("%s: isError after %dms, text:\n%s", tool, call.ElapsedMs, res.Text)
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structuredContent; text:\n%s", tool, res.Text)
	}
	return res
}

// checkRunning asserts that a consultation call returned "still running" at its timeout of
// timeout seconds, and returns its id.
func checkRunning(t *testing.T, call callOutcome, timeout int) string {
	t.Helper()
	res := accepted(t, call, "consultation")
	sc := res.StructuredContent
	if got := sc["kind"]; got != "running" {
		t.Errorf("structuredContent.kind = %v, want \"running\"", got)
	}
	id, _ := sc["id"].(string)
	if !idPattern.MatchString(id) {
		t.Fatalf("structuredContent.id = %#v, want an id like 20261123-104628-3odgtjfrmcwwmsykgjuuzsloly; structuredContent: %v", sc["id"], sc)
	}
	if want := fmt.Sprintf("Still running in the background (timeout %s reached): id %s.", consult.FormatDuration(time.Duration(timeout)*time.Second), id); !strings.HasPrefix(res.Text, want) {
		t.Errorf("text does not start with %q:\n%s", want, res.Text)
	}
	if phase, _ := sc["phase"].(string); phase == "" {
		t.Errorf("structuredContent.phase = %#v, want the phase", sc["phase"])
	}
	if secs, ok := sc["elapsed_seconds"].(float64); !ok || secs < float64(timeout)*0.9 {
		t.Errorf("structuredContent.elapsed_seconds = %#v, want about %d", sc["elapsed_seconds"], timeout)
	}
	// Under load the worker may still be gathering at the timeout: then no attempt yet.
	if got := sc["attempts"]; got != 1.0 && !(got == 0.0 && sc["phase"] != "waiting for the first token") {
		t.Errorf("structuredContent.attempts = %v in phase %v, want 1 (the model request is under way)", got, sc["phase"])
	}
	streamed, ok := sc["streamed"].(map[string]any)
	if !ok {
		t.Errorf("structuredContent.streamed = %#v, want {reasoning, answer}", sc["streamed"])
	} else if _, ok := streamed["reasoning"].(float64); !ok {
		t.Errorf("structuredContent.streamed.reasoning = %#v, want a token count", streamed["reasoning"])
	}
	// The kind "running" tells the call's timeout from the model's answer; here only that
	// it did not come before the timeout.
	if lo := int64(timeout)*1000 - 100; call.ElapsedMs < lo {
		t.Errorf("still running after %dms, before the call's timeout of %dms", call.ElapsedMs, timeout*1000)
	}
	return id
}

// checkAnswer asserts that a consultation_result call returned the answer of consultation id.
func checkAnswer(t *testing.T, call callOutcome, id string) {
	t.Helper()
	res := accepted(t, call, "consultation_result")
	if !strings.Contains(res.Text, answerText) {
		t.Errorf("consultation_result text does not hold the answer:\n%s", res.Text)
	}
	sc := res.StructuredContent
	if got := sc["kind"]; got != "answer" {
		t.Errorf("structuredContent.kind = %v, want \"answer\"; text:\n%s", got, res.Text)
	}
	if got := sc["id"]; got != id {
		t.Errorf("structuredContent.id = %v, want %s", got, id)
	}
	if got, _ := sc["answer"].(string); !strings.Contains(got, answerText) {
		t.Errorf("structuredContent.answer = %q, want it to hold %q", got, answerText)
	}
}

// checkIDInProgress asserts that a progress notification the client got named the id: a
// client whose call is cut off has seen the id to collect the answer by.
func checkIDInProgress(t *testing.T, notes []progressNote, id string) {
	t.Helper()
	for _, p := range notes {
		if strings.Contains(p.Message, "id "+id) {
			return
		}
	}
	var msgs []string
	for _, p := range notes {
		msgs = append(msgs, fmt.Sprintf("%dms %q", p.At, p.Message))
	}
	t.Errorf("no progress message names id %s: %s", id, strings.Join(msgs, "; "))
}

// Scenario (e): in one session, a consultation with timeout 1 and on_timeout "continue"
// returns "still running" with an id at about 1 s; consultation_result with that id waits,
// with progress, and returns the answer when the model gives it, which it does once the
// waiting call has had two heartbeats. The model is asked once.
func TestHybridWait(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		release := e.heldAnswer()
		out := e.call(scenario{Steps: []step{
			{Arguments: continueArgs(t, 1), Timeout: 20_000, Progress: true},
			{
				Tool: "consultation_result", Arguments: map[string]any{"wait": 60}, IDFrom: fromStep(0),
				Timeout: 90_000, Progress: true,
			},
		}, OnEvent: func(ev clientEvent) {
			if ev.Event == "progress" && ev.Step == 1 && ev.Count >= 2 {
				release()
			}
		}})
		running, collected := out.Steps[0], out.Steps[1]
		id := checkRunning(t, running, 1)
		checkIDInProgress(t, running.Progress, id)

		req := e.chatRequest() // exactly one: collecting does not ask the model again
		end := ended(t, req, 30*time.Second).UnixMilli()
		if req.ClientGone() {
			t.Errorf("consult closed the upstream request instead of letting it answer")
		}
		// The answer waited for the collecting call's heartbeats: it came after the "still
		// running" result and after consultation_result was sent.
		if end < running.FinishedAt || end < collected.StartedAt {
			t.Errorf("upstream answered at %d, before the still-running result (%d) or the collecting call (%d)", end, running.FinishedAt, collected.StartedAt)
		}
		checkAnswer(t, collected, id)
		if collected.FinishedAt < end-100 {
			t.Errorf("consultation_result returned %dms before the upstream request ended", end-collected.FinishedAt)
		}
		t.Logf("upstream answered %dms after the result call was sent; the answer came %dms after that",
			end-collected.StartedAt, collected.FinishedAt-end)
		checkNotes(t, sentOrder(transport, collected.Progress), 2, "the answer waited for two")
	})
}

// Scenario (f): the "still running" consultation outlives its server. The first session gets
// the id and ends; the server, its stdin closed (stdio) or SIGTERMed (http), exits at once
// with status 0, while the consultation's worker (a process of its own) keeps the upstream
// request open. A new server with the same --results-dir and a new client session ask for the
// answer; only then does the model give it, and the worker saves it to --results-dir, from
// where the new server collects it.
func TestRestartKeepsAnswer(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		release := e.heldAnswer()
		first := scenario{Steps: []step{{Arguments: continueArgs(t, 1), Timeout: 20_000, Progress: true}}}
		if transport == "stdio" {
			first.ExitWaitMs = 30_000 // a hang guard; then the SDK's close() sends SIGTERM, then SIGKILL
		}
		out := e.call(first)
		id := checkRunning(t, out.Steps[0], 1)

		// The first server exits by itself at once: it has nothing to wait for.
		var exitAt int64
		switch transport {
		case "stdio":
			ex := out.ServerExit
			if ex == nil || (ex.Code == nil && ex.Signal == nil) {
				t.Fatalf("the first server (pid %d) had not exited %dms after its stdin closed", out.ServerPid, first.ExitWaitMs)
			}
			if ex.Signal != nil || *ex.Code != 0 {
				t.Fatalf("the first server exited with code %v, signal %v; want code 0", ptrString(ex.Code), ptrString(ex.Signal))
			}
			exitAt = ex.At
		case "http":
			sent := time.Now()
			took, err := e.http.stop()
			if err != nil {
				t.Fatal(err)
			}
			exitAt = sent.Add(took).UnixMilli()
			t.Logf("the first server exited %s after SIGTERM", took.Round(time.Millisecond))
		}
		// A new server (stdio: node spawns another; http: started here, with the same token:
		// a consultation belongs to the token that started it) and a new session:
		// consultation_result waits for the first server's worker to save the answer, which
		// the model gives once that call was sent.
		if transport == "http" {
			e.http = startHTTP(t, e.args, e.http.token) // the same client: the same token
		}
		again := e.call(scenario{step: step{
			Tool: "consultation_result", Arguments: map[string]any{"id": id, "wait": 60},
			Timeout: 90_000, Progress: true,
		}, OnEvent: func(ev clientEvent) {
			if ev.Event == "sent" {
				release()
			}
		}})
		if transport == "stdio" && again.ServerPid == out.ServerPid {
			t.Fatalf("the second session ran in the same server process (pid %d)", out.ServerPid)
		}
		checkAnswer(t, again.callOutcome, id)

		req := e.chatRequest() // exactly one: collecting does not ask the model again
		end := ended(t, req, 30*time.Second).UnixMilli()
		if req.ClientGone() {
			t.Errorf("the upstream request was closed when the server exited; the worker should have let it answer")
		}
		t.Logf("the first server exited %dms before the upstream answered; the new session asked %dms before it and got the answer %dms after it",
			end-exitAt, end-again.StartedAt, again.FinishedAt-end)
		if again.FinishedAt < end-100 {
			t.Errorf("consultation_result returned %dms before the upstream answered", end-again.FinishedAt)
		}
		if _, err := os.Stat(filepath.Join(e.results, id+".json")); err != nil {
			t.Errorf("no saved result in --results-dir: %v", err)
		}
	})
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// Scenario (g): the client gives up as its own timeout does (the SDK's cancellation,
// RequestTimeout), once the upstream has the request, well inside the call's timeout of
// 60 s with "continue". The model had been asked, so the consultation goes on. In the same
// session, consultation_result without id lists it, and with its id returns the answer,
// which the model gives once that last call was sent: an answer being paid for survives the
// client cutting the call.
func TestClientCutKeepsAnswer(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		release := e.heldAnswer()
		cues := make(chan string, 1)
		arrived := e.chatArrived()
		go func() {
			if req := <-arrived; req != nil {
				cues <- "timeout 0"
			}
		}()
		out := e.call(scenario{Steps: []step{
			{Arguments: continueArgs(t, 60), Timeout: 60_000, TimeoutOnCue: true, Progress: true},
			{Tool: "consultation_result", Arguments: map[string]any{}, Timeout: 20_000},
			{
				Tool: "consultation_result", Arguments: map[string]any{"wait": 60},
				IDFrom: fromStep(1), IDPath: "consultations.0.id", Timeout: 90_000, Progress: true,
			},
		}, Cues: cues, OnEvent: func(ev clientEvent) {
			if ev.Event == "sent" && ev.Step == 2 {
				release()
			}
		}})
		cut, list, collected := out.Steps[0], out.Steps[1], out.Steps[2]

		if cut.OK {
			t.Fatalf("consultation returned after %dms (isError=%v), want the SDK's request timeout:\n%s",
				cut.ElapsedMs, cut.Result.IsError, cut.Result.Text)
		}
		if cut.Error.Code == nil || *cut.Error.Code != sdkRequestTimeout {
			t.Errorf("error = %v, want code %d (RequestTimeout)", cut.Error, sdkRequestTimeout)
		}

		res := requireStep(t, list)
		if res.IsError {
			t.Fatalf("listing: isError, text:\n%s", res.Text)
		}
		if got := res.StructuredContent["kind"]; got != "list" {
			t.Errorf("listing: structuredContent.kind = %v, want \"list\"", got)
		}
		entries, _ := res.StructuredContent["consultations"].([]any)
		if len(entries) != 1 {
			t.Fatalf("listing has %d consultations, want the 1 the client cut: %v\n%s", len(entries), res.StructuredContent["consultations"], res.Text)
		}
		entry, _ := entries[0].(map[string]any)
		id, _ := entry["id"].(string)
		if !idPattern.MatchString(id) {
			t.Fatalf("listed id = %#v, want an id like 20261123-104628-3odgtjfrmcwwmsykgjuuzsloly", entry["id"])
		}
		if st := entry["status"]; st != "running" && st != "finished" {
			t.Errorf("listed status = %v, want running or finished", st)
		}
		if q := entry["query"]; q != "What does Alpha return?" {
			t.Errorf("listed query = %v, want the consultation's", q)
		}
		if !strings.Contains(res.Text, id) {
			t.Errorf("listing text does not name %s:\n%s", id, res.Text)
		}
		checkIDInProgress(t, cut.Progress, id)

		checkAnswer(t, collected, id)
		req := e.chatRequest()
		t.Logf("the upstream request arrived %dms after the call was sent; the client gave up %dms after that", req.Arrived.UnixMilli()-cut.StartedAt, cut.FinishedAt-req.Arrived.UnixMilli())
		end := ended(t, req, 30*time.Second).UnixMilli()
		if req.ClientGone() {
			t.Errorf("consult closed the upstream request when the client cut the call")
		}
		if end < cut.FinishedAt {
			t.Errorf("upstream request ended %dms before the client cut the call, want it to go on to its answer after", cut.FinishedAt-end)
		}
		if collected.FinishedAt < end-100 {
			t.Errorf("consultation_result returned %dms before the upstream request ended", end-collected.FinishedAt)
		}
	})
}
