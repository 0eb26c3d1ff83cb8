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
	"github.com/consultmcp/consult/internal/fake"
)

// The hybrid wait: a consultation with on_timeout "continue" returns "still running" with an
// id at its timeout and goes on in the background; consultation_result collects it, in the
// same session, after the client cut the call, or from another server process.

// answerText is what the model of these scenarios answers.
const answerText = "Alpha returns 42."

// idPattern is the form of a consultation id, like "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly".
var idPattern = regexp.MustCompile(`^\d{8}-\d{6}-[a-z2-7]{26}$`)

// answerAfter is a model that thinks, then (with OpenRouter's keep-alive comments every
// 500 ms) sends nothing more until d after the request arrived, then streams the answer.
func answerAfter(d time.Duration) fake.Script {
	steps := []fake.Step{fake.Think("Let me look."), fake.Sleep(d)}
	return fake.Script{KeepAlive: 500 * time.Millisecond, Steps: append(steps, fake.Chunks(answerText, 8)...)}
}

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
// with progress, and returns the answer when the model gives it at about 3 s. The model is
// asked once.
func TestHybridWait(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		e.fake.Push(answerAfter(3 * time.Second))
		out := e.call(scenario{Steps: []step{
			{Arguments: continueArgs(t, 1), Timeout: 20_000, Progress: true},
			{
				Tool: "consultation_result", Arguments: map[string]any{"wait": 60}, IDFrom: fromStep(0),
				Timeout: 90_000, Progress: true,
			},
		}})
		running, collected := out.Steps[0], out.Steps[1]
		id := checkRunning(t, running, 1)
		checkIDInProgress(t, running.Progress, id)

		req := e.chatRequest() // exactly one: collecting does not ask the model again
		end := ended(t, req, 30*time.Second).UnixMilli()
		if req.ClientGone() {
			t.Errorf("consult closed the upstream request instead of letting it answer")
		}
		if early := end - running.FinishedAt; early < 500 {
			t.Errorf("still-running result came %dms before the upstream answered, want well before (about 2s)", early)
		}

		checkAnswer(t, collected, id)
		if collected.StartedAt > end-400 {
			t.Errorf("consultation_result was sent %dms before the upstream answered, want it waiting well before", end-collected.StartedAt)
		}
		if collected.FinishedAt < end-100 {
			t.Errorf("consultation_result returned %dms before the upstream request ended", end-collected.FinishedAt)
		}
		if collected.ElapsedMs >= 60_000 {
			t.Errorf("consultation_result took %dms, want it to return with the answer (about 2s), not at the end of its wait of 60s", collected.ElapsedMs)
		}
		t.Logf("upstream answered %dms after the result call was sent; the answer came %dms after that",
			end-collected.StartedAt, collected.FinishedAt-end)
		checkNotes(t, sentOrder(transport, collected.Progress), 2, "heartbeat 250ms, a wait of about 2s")
	})
}

// Scenario (f): the "still running" consultation outlives its server. The first session gets
// the id and ends; the server, its stdin closed (stdio) or SIGTERMed (http), exits at once
// with status 0, while the consultation's worker (a process of its own) lets the answer
// arrive and saves it to --results-dir. A new server with the same --results-dir and a new
// client session, started at once, collect the answer when the worker saves it.
func TestRestartKeepsAnswer(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		// The answer comes 2 s after the "running" result: time for the server to exit
		// before it even on a busy machine (0.8 s to spare was seen with 1.5 s).
		e.fake.Push(answerAfter(3 * time.Second))
		first := scenario{Steps: []step{{Arguments: continueArgs(t, 1), Timeout: 20_000, Progress: true}}}
		if transport == "stdio" {
			first.ExitWaitMs = 10_000 // then the SDK's close() sends SIGTERM, then SIGKILL
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
		// a consultation belongs to the token that started it) and a new session, at once:
		// consultation_result waits for the first server's worker to save the answer.
		if transport == "http" {
			e.http = startHTTP(t, e.args, e.http.token) // the same client: the same token
		}
		again := e.call(scenario{step: step{
			Tool: "consultation_result", Arguments: map[string]any{"id": id, "wait": 10},
			Timeout: 20_000, Progress: true,
		}})
		if transport == "stdio" && again.ServerPid == out.ServerPid {
			t.Fatalf("the second session ran in the same server process (pid %d)", out.ServerPid)
		}
		checkAnswer(t, again.callOutcome, id)

		req := e.chatRequest() // exactly one: collecting does not ask the model again
		end := ended(t, req, 8*time.Second).UnixMilli()
		if req.ClientGone() {
			t.Errorf("the upstream request was closed when the server exited; the worker should have let it answer")
		}
		t.Logf("the first server exited %dms before the upstream answered; the new session asked %dms before it and got the answer %dms after it",
			end-exitAt, end-again.StartedAt, again.FinishedAt-end)
		if exitAt > end {
			t.Errorf("the first server exited %dms after the upstream answered, want before: it waits for nothing", exitAt-end)
		}
		if again.FinishedAt < end-100 {
			t.Errorf("consultation_result returned %dms before the upstream answered", end-again.FinishedAt)
		}
		if late := again.FinishedAt - max(end, again.StartedAt); late > 2000 {
			t.Errorf("consultation_result returned %dms after the upstream answered or it was sent, want it with the saved answer, not at its wait of 10s", late)
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

// Scenario (g): the client's own timeout (cutMs, 2 s, not reset by progress) is shorter
// than the call's (8 s). The SDK fails the call with RequestTimeout and sends notifications/cancelled;
// the model had been asked, so the consultation goes on. In the same session,
// consultation_result without id lists it, and with its id returns the answer: an answer
// being paid for survives the client cutting the call.
func TestClientCutKeepsAnswer(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		e := newEnv(t, transport)
		e.fake.Push(answerAfter(4 * time.Second))
		out := e.call(scenario{Steps: []step{
			{Arguments: continueArgs(t, 8), Timeout: cutMs, Progress: true},
			{Tool: "consultation_result", Arguments: map[string]any{}, Timeout: 20_000},
			{
				Tool: "consultation_result", Arguments: map[string]any{"wait": 10},
				IDFrom: fromStep(1), IDPath: "consultations.0.id", Timeout: 20_000, Progress: true,
			},
		}})
		cut, list, collected := out.Steps[0], out.Steps[1], out.Steps[2]

		if cut.OK {
			t.Fatalf("consultation returned after %dms (isError=%v), want the SDK's request timeout at 2s:\n%s",
				cut.ElapsedMs, cut.Result.IsError, cut.Result.Text)
		}
		if cut.Error.Code == nil || *cut.Error.Code != sdkRequestTimeout {
			t.Errorf("error = %v, want code %d (RequestTimeout)", cut.Error, sdkRequestTimeout)
		}
		// Node's timer and its millisecond clock may part by a millisecond or two: 1999 ms was
		// seen for a 2000 ms timeout.
		if cut.ElapsedMs < cutMs-clockSlackMs { // the error code tells the SDK's timer from anything else
			t.Errorf("client gave up after %dms, before its timeout of %dms", cut.ElapsedMs, cutMs)
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
		t.Logf("the upstream request arrived %dms after the call was sent", req.Arrived.UnixMilli()-cut.StartedAt)
		end := ended(t, req, 30*time.Second).UnixMilli()
		if req.ClientGone() {
			t.Errorf("consult closed the upstream request when the client cut the call")
		}
		if after := end - cut.FinishedAt; after < 500 {
			t.Errorf("upstream request ended %dms after the client cut the call, want it to go on to its answer (about 2s later)", after)
		}
		if collected.FinishedAt < end-100 {
			t.Errorf("consultation_result returned %dms before the upstream request ended", end-collected.FinishedAt)
		}
	})
}
