package fake_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// post sends a generation request for flavor f's wire format and returns the response.
func post(t *testing.T, s *fake.Server, body string) *http.Response {
	t.Helper()
	url := s.BaseURL() + "/chat/completions"
	if s.Flavor == fake.Gemini {
		url = s.URL + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func TestOpenRouterWire(t *testing.T) {
	s := fake.New(t, fake.OpenRouter)
	s.Push(fake.Script{
		Steps: []fake.Step{fake.Comment("OPENROUTER PROCESSING"), fake.Think("hmm"), fake.Text("Hi")},
		Usage: &fake.Usage{Input: 10, Output: 1, Reasoning: 2, Cost: 0.5},
	})
	resp := post(t, s, `{"model":"a/b","stream":true}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	got := readAll(t, resp.Body)
	events := strings.Split(strings.TrimSuffix(got, "\n\n"), "\n\n")
	if len(events) != 6 {
		t.Fatalf("got %d events, want 6:\n%s", len(events), got)
	}
	if events[0] != ": OPENROUTER PROCESSING" {
		t.Errorf("event 0 = %q, want the comment", events[0])
	}
	var chunk struct {
		Model   string `json:"model"`
		Choices []struct {
			Delta struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				Reasoning string `json:"reasoning"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int     `json:"prompt_tokens"`
			CompletionTokens int     `json:"completion_tokens"`
			Cost             float64 `json:"cost"`
			Details          struct {
				Reasoning int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	decode := func(i int) {
		t.Helper()
		chunk.Usage = nil
		if err := json.Unmarshal([]byte(strings.TrimPrefix(events[i], "data: ")), &chunk); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, events[i])
		}
	}
	decode(1)
	if d := chunk.Choices[0].Delta; d.Reasoning != "hmm" || d.Role != "assistant" || chunk.Model != "a/b" {
		t.Errorf("event 1 = %s, want a reasoning delta with the role", events[1])
	}
	decode(2)
	if d := chunk.Choices[0].Delta; d.Content != "Hi" {
		t.Errorf("event 2 = %s, want content Hi", events[2])
	}
	decode(3)
	if f := chunk.Choices[0].FinishReason; f == nil || *f != "stop" {
		t.Errorf("event 3 = %s, want finish_reason stop", events[3])
	}
	decode(4)
	if u := chunk.Usage; u == nil || u.PromptTokens != 10 || u.CompletionTokens != 3 || u.Cost != 0.5 || u.Details.Reasoning != 2 {
		t.Errorf("event 4 = %s, want the usage", events[4])
	}
	if events[5] != "data: [DONE]" {
		t.Errorf("event 5 = %q, want [DONE]", events[5])
	}
	r := s.Requests()[0]
	if r.Model != "a/b" || r.Method != http.MethodPost || r.Path != "/api/v1/chat/completions" {
		t.Errorf("recorded %s %s model %q", r.Method, r.Path, r.Model)
	}
}

func TestGeminiWire(t *testing.T) {
	s := fake.New(t, fake.Gemini)
	s.Push(fake.Script{Steps: []fake.Step{fake.Think("hmm"), fake.Text("Hi")}, Finish: "MAX_TOKENS"})
	got := readAll(t, post(t, s, `{"contents":[]}`).Body)
	events := strings.Split(strings.TrimSuffix(got, "\r\n\r\n"), "\r\n\r\n")
	if len(events) != 3 {
		t.Fatalf("got %d CRLF-delimited events, want 3:\n%q", len(events), got)
	}
	for i, want := range []string{`"thought":true`, `"text":"Hi"`, `"finishReason":"MAX_TOKENS"`} {
		if !strings.Contains(events[i], want) {
			t.Errorf("event %d = %s, want %s", i, events[i], want)
		}
	}
	if r := s.Requests()[0]; r.Model != "gemini-2.5-pro" || r.Query != "alt=sse" {
		t.Errorf("recorded model %q query %q", r.Model, r.Query)
	}
}

func TestErrorBodies(t *testing.T) {
	tests := []struct {
		flavor fake.Flavor
		script fake.Script
		want   []string
	}{
		{fake.OpenAI, fake.Script{Status: 429, Header: map[string]string{"Retry-After": "3"}},
			[]string{`"code":"rate_limit_exceeded"`, `"type":"requests"`}},
		{fake.OpenAI, fake.Script{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "too long"},
			[]string{`"code":"context_length_exceeded"`, `"message":"too long"`}},
		{fake.OpenRouter, fake.Script{Status: 402, ErrorMessage: "no credit"},
			[]string{`"code":402`, `"message":"no credit"`}},
		{fake.Gemini, fake.Script{Status: 429, RetryDelay: 2 * time.Second},
			[]string{`"status":"RESOURCE_EXHAUSTED"`, `"retryDelay":"2s"`, `google.rpc.RetryInfo`}},
	}
	for _, tt := range tests {
		t.Run(tt.flavor.String(), func(t *testing.T) {
			s := fake.New(t, tt.flavor)
			s.Push(tt.script)
			resp := post(t, s, `{"model":"m"}`)
			if resp.StatusCode != tt.script.Status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.script.Status)
			}
			for k, v := range tt.script.Header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			body := readAll(t, resp.Body)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %s lacks %s", body, w)
				}
			}
		})
	}
}

func TestScriptsInOrderThenFuncThenDefault(t *testing.T) {
	s := fake.New(t, fake.OpenAI)
	s.Push(fake.Answer("one"), fake.Answer("two"))
	texts := func() string {
		t.Helper()
		return readAll(t, post(t, s, `{"model":"m"}`).Body)
	}
	for _, want := range []string{`"content":"one"`, `"content":"two"`, `"content":"ok"`} {
		if got := texts(); !strings.Contains(got, want) {
			t.Errorf("response lacks %s:\n%s", want, got)
		}
	}
	s.SetFunc(func(r *fake.Request) fake.Script { return fake.Answer("for " + r.Model) })
	if got := readAll(t, post(t, s, `{"model":"zz"}`).Body); !strings.Contains(got, `"content":"for zz"`) {
		t.Errorf("SetFunc not used:\n%s", got)
	}
	if n := s.Count("/chat/completions"); n != 4 {
		t.Errorf("Count = %d, want 4", n)
	}
}

func TestModelEndpoints(t *testing.T) {
	or := fake.New(t, fake.OpenRouter)
	resp, err := http.Get(or.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp.Body); !strings.Contains(body, `"context_length":200000`) {
		t.Errorf("OpenRouter /models lacks context_length: %s", body)
	}
	resp.Body.Close()
}

func TestUnknownRoute(t *testing.T) {
	s := fake.New(t, fake.OpenAI)
	resp, err := http.Get(s.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status = %d, want 404", resp.StatusCode)
	}
}

func TestRequestEndObserved(t *testing.T) {
	s := fake.New(t, fake.OpenRouter)
	s.Push(fake.Script{KeepAlive: 10 * time.Millisecond, Steps: []fake.Step{fake.Text("a"), fake.Hang()}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"/chat/completions", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r, err := s.Await(1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Ended():
		t.Fatal("request ended before the client went away")
	case <-time.After(50 * time.Millisecond):
	}
	cancelled := time.Now()
	cancel()
	select { // the script hangs for a day: a hang guard (TestInMemory times EndedAt exactly)
	case <-r.Ended():
	case <-time.After(30 * time.Second):
		t.Fatal("the fake did not see the request end")
	}
	if d := r.EndedAt().Sub(cancelled); d < 0 {
		t.Errorf("EndedAt is %v before the cancel", -d)
	}
	t.Logf("request ended %v after the cancel", r.EndedAt().Sub(cancelled))
	if !r.ClientGone() {
		t.Error("ClientGone = false, want true")
	}
	if _, err := s.Await(2, 20*time.Millisecond); err == nil {
		t.Error("Await for a request that never comes returned no error")
	}
}

// TestWait: a stream paused by Wait sends what came before it, then the rest once its
// channel is closed, and the request completes.
func TestWait(t *testing.T) {
	s := fake.New(t, fake.OpenRouter)
	held := make(chan struct{})
	s.Push(fake.Script{Steps: []fake.Step{fake.Text("before"), fake.Wait(held), fake.Text("after")}})
	resp := post(t, s, `{}`)
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before its first part: %v", err)
		}
		if strings.Contains(line, "after") {
			t.Fatal("the part after the pause came before its channel was closed")
		}
		if strings.Contains(line, "before") {
			break
		}
	}
	close(held)
	if rest := readAll(t, r); !strings.Contains(rest, "after") {
		t.Errorf("after the pause: %q, want the part after it", rest)
	}
	req, err := s.Await(1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-req.Ended()
	if req.ClientGone() {
		t.Error("the request ended with the client gone, want it complete")
	}
}

func TestResetAndClose(t *testing.T) {
	s := fake.NewServer(fake.OpenAI)
	s.Push(fake.Script{Steps: []fake.Step{fake.Text("a"), fake.Reset()}}, fake.Script{Steps: []fake.Step{fake.Hang()}})
	resp := post(t, s, `{}`)
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("reading a reset stream gave no error")
	}
	resp = post(t, s, `{}`)
	done := make(chan struct{})
	go func() {
		_, _ = io.ReadAll(resp.Body)
		close(done)
	}()
	s.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard: the stream hangs for a day
		t.Error("Close did not end a hanging stream")
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		s    string
		size int
		want int
	}{
		{"abcdefg", 3, 3},
		{"abc", 3, 1},
		{"abc", 0, 1},
		{"héllo wörld", 2, 6},
	}
	for _, tt := range tests {
		if got := len(fake.Chunks(tt.s, tt.size)); got != tt.want {
			t.Errorf("len(Chunks(%q, %d)) = %d, want %d", tt.s, tt.size, got, tt.want)
		}
	}
}

// TestInMemory: a server made by NewInMemory serves its client without a socket, inside a
// synctest bubble: a stream arrives whole, an error keeps its status and headers, a client
// that cancels or closes the body is seen going away at that instant, and a reset fails the
// read.
func TestInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fake.NewInMemory(t, fake.OpenRouter)
		c := s.Client()
		do := func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"/chat/completions", strings.NewReader(`{"model":"m"}`))
			return c.Do(req)
		}
		s.Push(fake.Answer("hello"),
			fake.Script{Status: 429, Header: map[string]string{"Retry-After": "2"}},
			fake.Script{KeepAlive: 10 * time.Millisecond, Steps: []fake.Step{fake.Text("a"), fake.Hang()}},
			fake.Script{HeaderDelay: time.Hour},
			fake.Script{Steps: []fake.Step{fake.Text("a"), fake.Reset()}})

		resp, err := do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(body, `"content":"hel`) || !strings.Contains(body, "[DONE]") {
			t.Errorf("answer: status %d, body %q", resp.StatusCode, body)
		}
		resp.Body.Close()

		resp, err = do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
			t.Errorf("error: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		resp.Body.Close()

		resp, err = do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		closed := time.Now()
		resp.Body.Close()
		r := s.Requests()[2]
		<-r.Ended()
		if !r.EndedAt().Equal(closed) || !r.ClientGone() {
			t.Errorf("closing the body: request ended %v after, client gone %v", r.EndedAt().Sub(closed), r.ClientGone())
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := do(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiting for headers past the deadline: %v", err)
		}
		r = s.Requests()[3]
		<-r.Ended()
		if deadline, _ := ctx.Deadline(); !r.EndedAt().Equal(deadline) || !r.ClientGone() {
			t.Errorf("cancelling: request ended %v after, client gone %v", r.EndedAt().Sub(deadline), r.ClientGone())
		}

		resp, err = do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Error("reading a reset stream gave no error")
		}
		resp.Body.Close()
	})
}

// events splits an SSE body into its events' data payloads (comments dropped).
func events(body string) []string {
	var out []string
	for _, ev := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		if d, ok := strings.CutPrefix(ev, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestStopThenFail: a finish reason in the middle of a stream, then an in-band error, and
// nothing after it (NoFinish): OpenRouter's shape for a reasoning model that spent its
// output limit.
func TestStopThenFail(t *testing.T) {
	t.Parallel()
	for _, f := range []fake.Flavor{fake.OpenRouter, fake.OpenAI} {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			s := fake.New(t, f)
			s.Push(fake.Script{NoFinish: true,
				Steps: []fake.Step{fake.Think("hmm"), fake.Stop("length"), fake.Fail(400, "Token limit reached")}})
			got := events(readAll(t, post(t, s, `{"model":"a/b","stream":true}`).Body))
			if f == fake.OpenAI {
				got = append([]string{"(no reasoning event)"}, got...)
			}
			if len(got) != 3 {
				t.Fatalf("got %d data events, want 3: %q", len(got), got)
			}
			var stop struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Native       string `json:"native_finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(got[1]), &stop); err != nil || len(stop.Choices) != 1 || stop.Choices[0].FinishReason != "length" {
				t.Errorf("stop event = %s, want finish_reason length", got[1])
			}
			if f == fake.OpenRouter && stop.Choices[0].Native != "length" {
				t.Errorf("stop event = %s, want native_finish_reason length", got[1])
			}
			if !strings.Contains(got[2], `"error":{`) || !strings.Contains(got[2], "Token limit reached") {
				t.Errorf("last event = %s, want the error", got[2])
			}
		})
	}
	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		s := fake.New(t, fake.Gemini)
		s.Push(fake.Script{NoFinish: true, Steps: []fake.Step{fake.Stop("MAX_TOKENS")}})
		got := events(readAll(t, post(t, s, `{}`).Body))
		if len(got) != 1 || !strings.Contains(got[0], `"finishReason":"MAX_TOKENS"`) {
			t.Errorf("events = %q, want one with finishReason MAX_TOKENS", got)
		}
	})
}

// TestRefuseNoUsage: refusal deltas, then the finish and [DONE] without a usage chunk.
func TestRefuseNoUsage(t *testing.T) {
	t.Parallel()
	s := fake.New(t, fake.OpenAI)
	s.Push(fake.Script{NoUsage: true, Steps: []fake.Step{fake.Refuse("I can't"), fake.Refuse(" help.")}})
	got := events(readAll(t, post(t, s, `{"model":"gpt-4.1","stream":true}`).Body))
	if len(got) != 4 || got[3] != "[DONE]" {
		t.Fatalf("events = %q, want two refusals, the finish and [DONE]", got)
	}
	var first struct {
		Choices []struct {
			Delta map[string]any `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(got[0]), &first); err != nil || first.Choices[0].Delta["refusal"] != "I can't" ||
		first.Choices[0].Delta["role"] != "assistant" {
		t.Errorf("first event = %s, want a refusal delta with the role", got[0])
	}
	for _, ev := range got {
		if strings.Contains(ev, `"usage"`) {
			t.Errorf("event %s has usage, want none", ev)
		}
	}
	g := fake.New(t, fake.Gemini)
	g.Push(fake.Script{Steps: []fake.Step{fake.Refuse("no")}})
	if body := readAll(t, post(t, g, `{}`).Body); strings.Contains(body, "refusal") {
		t.Errorf("the Gemini flavor sent a refusal: %s", body)
	}
}

// TestGeminiQuotaFailure: QuotaID adds a google.rpc.QuotaFailure violation with that quotaId
// and quotaValue, beside the RetryInfo.
func TestGeminiQuotaFailure(t *testing.T) {
	t.Parallel()
	s := fake.New(t, fake.Gemini)
	s.Push(fake.Script{Status: 429, QuotaID: "GenerateRequestsPerDayPerProjectPerModel-FreeTier", QuotaValue: "25",
		RetryDelay: 5 * time.Second})
	resp := post(t, s, `{}`)
	var body struct {
		Error struct {
			Code    int              `json:"code"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || body.Error.Status != "RESOURCE_EXHAUSTED" || len(body.Error.Details) != 2 {
		t.Fatalf("status %d, body %+v; want 429 RESOURCE_EXHAUSTED with two details", resp.StatusCode, body.Error)
	}
	qf := body.Error.Details[0]
	v, _ := qf["violations"].([]any)
	if qf["@type"] != "type.googleapis.com/google.rpc.QuotaFailure" || len(v) != 1 {
		t.Fatalf("first detail = %v, want a QuotaFailure with one violation", qf)
	}
	viol := v[0].(map[string]any)
	if viol["quotaId"] != "GenerateRequestsPerDayPerProjectPerModel-FreeTier" || viol["quotaValue"] != "25" || viol["quotaMetric"] == nil {
		t.Errorf("violation = %v", viol)
	}
	if body.Error.Details[1]["retryDelay"] != "5s" {
		t.Errorf("second detail = %v, want retryDelay 5s", body.Error.Details[1])
	}
}
