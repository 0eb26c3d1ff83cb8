package providers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/internal/testkit/goroutines"
)

func TestStreamPlainAnswer(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		p, srv := setup(t, fc)
		const answer = "The answer is 42, as everybody knows."
		srv.Push(fake.Script{
			Steps: fake.Chunks(answer, 7),
			Usage: &fake.Usage{Input: 120, Output: 9, Cached: 100, Cost: 0.0042},
		})
		rec := newRecorder()
		resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "What is it?", System: "Be brief."}, rec)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if resp.Text != answer {
			t.Errorf("Text = %q, want %q", resp.Text, answer)
		}
		if got := rec.answerText(); got != answer {
			t.Errorf("observer saw %q, want %q", got, answer)
		}
		if resp.Finish != "stop" || resp.Truncated {
			t.Errorf("Finish, Truncated = %q, %v; want stop, false", resp.Finish, resp.Truncated)
		}
		if resp.Model != fc.model {
			t.Errorf("Model = %q, want %q", resp.Model, fc.model)
		}
		wantUsage := Usage{Reported: true, Input: 120, Output: 9, Cached: 100}
		if fc.flavor == fake.OpenRouter {
			wantUsage.CostUSD, wantUsage.CostKnown = 0.0042, true
		}
		if resp.Usage != wantUsage {
			t.Errorf("Usage = %+v, want %+v", resp.Usage, wantUsage)
		}

		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the fake got %d requests, want 1", len(reqs))
		}
		r := reqs[0]
		body := r.JSON()
		switch fc.flavor {
		case fake.Gemini:
			if got := r.Header.Get("X-Goog-Api-Key"); got != testKey {
				t.Errorf("x-goog-api-key = %q, want the key", got)
			}
			if !strings.Contains(r.Query, "alt=sse") {
				t.Errorf("query = %q, want alt=sse", r.Query)
			}
			if strings.Contains(string(r.Body), "ontinuation") {
				t.Errorf("body mentions continuation: %s", r.Body)
			}
			if !strings.Contains(string(r.Body), "Be brief.") {
				t.Errorf("body lacks the system instruction: %s", r.Body)
			}
		default:
			if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization = %q, want the bearer key", got)
			}
			if body["stream"] != true {
				t.Errorf("stream = %v, want true", body["stream"])
			}
			so, _ := body["stream_options"].(map[string]any)
			if so["include_usage"] != true {
				t.Errorf("stream_options = %v, want include_usage true", body["stream_options"])
			}
			if got := r.Header.Get("X-Stainless-Retry-Count"); got != "0" && got != "" {
				t.Errorf("X-Stainless-Retry-Count = %q, want 0", got)
			}
		}
		if fc.flavor == fake.OpenRouter {
			u, _ := body["usage"].(map[string]any)
			if u["include"] != true {
				t.Errorf("usage = %v, want include true", body["usage"])
			}
			if got := r.Header.Get("X-Title"); got != "consult" {
				t.Errorf("X-Title = %q, want consult", got)
			}
		}
	})
}

func TestStreamReasoning(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		p, srv := setup(t, fc)
		thoughts := []string{"Let me look at the files. ", "The loop is quadratic. ", "So: index it."}
		steps := []fake.Step{}
		for _, th := range thoughts {
			steps = append(steps, fake.Think(th))
		}
		steps = append(steps, fake.Chunks("Use a map.", 4)...)
		srv.Push(fake.Script{Steps: steps, Usage: &fake.Usage{Input: 50, Output: 4, Reasoning: 1234}})

		rec := newRecorder()
		resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q",
			Thinking: Thinking{On: true, Budget: 8000}}, rec)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if resp.Text != "Use a map." {
			t.Errorf("Text = %q, want only the answer", resp.Text)
		}
		if got, want := resp.Usage.Reasoning, consult.Tokens(1234); got != want {
			t.Errorf("Usage.Reasoning = %d, want %d", got, want)
		}
		if got, want := resp.Usage.Output, consult.Tokens(4); got != want {
			t.Errorf("Usage.Output = %d, want %d (reasoning excluded)", got, want)
		}
		if got, want := rec.lastTokens(), consult.Tokens(1234); got != want {
			t.Errorf("observer's last reasoning count = %d, want %d", got, want)
		}
		wantReasoning := strings.Join(thoughts, "")
		if fc.flavor == fake.OpenAI {
			wantReasoning = "" // OpenAI does not stream reasoning
		}
		if got := rec.reasoningText(); got != wantReasoning {
			t.Errorf("observer's reasoning = %q, want %q", got, wantReasoning)
		}
		if wantReasoning != "" {
			// The estimate grows while reasoning streams, before usage arrives.
			rec.mu.Lock()
			first := rec.tokens[0]
			rec.mu.Unlock()
			if first <= 0 || first >= 1234 {
				t.Errorf("first reasoning estimate = %d, want a small positive estimate", first)
			}
		}
	})
}

func TestStreamKeepAliveComments(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		synctest.Test(t, func(t *testing.T) {
			p, srv := setupInMemory(t, fc)
			steps := []fake.Step{fake.Comment("warming up"), fake.Sleep(120 * time.Millisecond), fake.Text("Hello")}
			steps = append(steps, fake.Comment("between chunks"), fake.Text(", world"))
			srv.Push(fake.Script{KeepAlive: 20 * time.Millisecond, Steps: steps})
			resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != "Hello, world" {
				t.Errorf("Text = %q, want %q", resp.Text, "Hello, world")
			}
		})
	})
}

func TestStreamInBandError(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		tests := []struct {
			name     string
			steps    []fake.Step
			kind     Kind
			partial  bool
			retry    bool
			wantText string
		}{
			{"after text", []fake.Step{fake.Text("Half an "), fake.Text("answer"), fake.Fail(502, "Provider disconnected unexpectedly")},
				Server, true, false, "Half an answer"},
			{"overloaded before text", []fake.Step{fake.Think("hmm"), fake.Fail(503, "The model is overloaded")},
				Overloaded, false, true, ""},
			{"rate limited before text", []fake.Step{fake.Fail(429, "Rate limit exceeded upstream")},
				RateLimited, false, true, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				p, srv := setup(t, fc)
				srv.Push(fake.Script{Steps: tt.steps})
				resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
				e := asError(t, err)
				if e.Kind != tt.kind {
					t.Errorf("Kind = %q, want %q (%v)", e.Kind, tt.kind, e)
				}
				if !e.InBand {
					t.Errorf("InBand = false, want true (%v)", e)
				}
				if e.Partial != tt.partial {
					t.Errorf("Partial = %v, want %v", e.Partial, tt.partial)
				}
				if got := Retryable(err); got != tt.retry {
					t.Errorf("Retryable = %v, want %v", got, tt.retry)
				}
				if resp == nil || resp.Text != tt.wantText {
					t.Errorf("partial response = %+v, want text %q", resp, tt.wantText)
				}
			})
		}
	})
}

// TestStreamStallBeforeFirstByte: an upstream that sends nothing, not even headers, is left
// at the call's deadline, to the instant (in a synctest bubble), with a Canceled error that
// is not retryable.
func TestStreamStallBeforeFirstByte(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		synctest.Test(t, func(t *testing.T) {
			p, srv := setupInMemory(t, fc)
			srv.Push(fake.Script{HeaderDelay: time.Hour})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			deadline, _ := ctx.Deadline()

			resp, err := p.Stream(ctx, Request{Model: fc.model, Prompt: "q"}, nil)
			if returned := time.Now(); !returned.Equal(deadline) {
				t.Errorf("Stream returned %v from the deadline, want at it", returned.Sub(deadline))
			}
			e := asError(t, err)
			if e.Kind != Canceled || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, Canceled) {
				t.Errorf("error = %v (kind %q), want Canceled wrapping DeadlineExceeded", err, e.Kind)
			}
			if Retryable(err) {
				t.Error("a cancelled call is retryable, want not")
			}
			if resp == nil || resp.Text != "" {
				t.Errorf("response = %+v, want empty", resp)
			}
			r := srv.Requests()[0]
			synctest.Wait()
			if ended := r.EndedAt(); !ended.Equal(deadline) {
				t.Errorf("the fake's request ended %v from the deadline, want at it", ended.Sub(deadline))
			}
			if !r.ClientGone() {
				t.Error("the fake's request ended on its own, want the client to have gone away")
			}
		})
	})
}

// TestStreamStallMidAnswer: cancelling a stream that stalled after some answer (keep-alive
// comments still coming) returns the partial answer at once, and leaves the upstream.
func TestStreamStallMidAnswer(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		synctest.Test(t, func(t *testing.T) {
			p, srv := setupInMemory(t, fc)
			srv.Push(fake.Script{KeepAlive: 30 * time.Millisecond,
				Steps: []fake.Step{fake.Text("The first part"), fake.Hang()}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := newRecorder()
			var cancelledAt time.Time
			go func() {
				<-rec.first
				time.Sleep(100 * time.Millisecond)
				cancelledAt = time.Now()
				cancel()
			}()
			resp, err := p.Stream(ctx, Request{Model: fc.model, Prompt: "q"}, rec)
			if cancelledAt.IsZero() {
				t.Fatalf("Stream returned before the answer started: %v", err)
			}
			if returned := time.Now(); !returned.Equal(cancelledAt) {
				t.Errorf("Stream returned %v after the cancel, want at once", returned.Sub(cancelledAt))
			}
			e := asError(t, err)
			if e.Kind != Canceled || !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want Canceled wrapping context.Canceled", err)
			}
			if !e.Partial || Retryable(err) {
				t.Errorf("Partial, Retryable = %v, %v; want true, false", e.Partial, Retryable(err))
			}
			if resp.Text != "The first part" {
				t.Errorf("partial Text = %q, want %q", resp.Text, "The first part")
			}
			r := srv.Requests()[0]
			synctest.Wait()
			if ended := r.EndedAt(); !ended.Equal(cancelledAt) {
				t.Errorf("the fake's request ended %v after the cancel, want at once", ended.Sub(cancelledAt))
			}
			if !r.ClientGone() {
				t.Error("the fake's request ended on its own, want the client to have gone away")
			}
		})
	})
}

func TestStreamCancelCause(t *testing.T) {
	t.Parallel()
	errIdle := errors.New("no progress for 5s (idle timeout)")
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				p, srv := setupInMemory(t, fc)
				srv.Push(fake.Script{Steps: []fake.Step{fake.Hang()}})
				ctx, cancel := context.WithCancelCause(context.Background())
				time.AfterFunc(50*time.Millisecond, func() { cancel(errIdle) })
				_, err := p.Stream(ctx, Request{Model: fc.model, Prompt: "q"}, nil)
				if !errors.Is(err, errIdle) || !errors.Is(err, context.Canceled) || !errors.Is(err, Canceled) {
					t.Errorf("error = %v, want it to wrap the cause, context.Canceled and Canceled", err)
				}
			})
		})
	}
}

func TestStreamTransportFailures(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		tests := []struct {
			name    string
			script  fake.Script
			partial bool
			text    string
		}{
			{"reset before text", fake.Script{Steps: []fake.Step{fake.Think("x"), fake.Reset()}}, false, ""},
			{"reset after text", fake.Script{Steps: []fake.Step{fake.Text("abc"), fake.Reset()}}, true, "abc"},
			{"ends without finish", fake.Script{Steps: []fake.Step{fake.Text("abc")}, NoFinish: true}, true, "abc"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				p, srv := setup(t, fc)
				srv.Push(tt.script)
				resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
				e := asError(t, err)
				if e.Kind != Transport {
					t.Errorf("Kind = %q, want %q (%v)", e.Kind, Transport, e)
				}
				if e.Partial != tt.partial || Retryable(err) == tt.partial {
					t.Errorf("Partial, Retryable = %v, %v; want %v, %v", e.Partial, Retryable(err), tt.partial, !tt.partial)
				}
				if resp.Text != tt.text {
					t.Errorf("Text = %q, want %q", resp.Text, tt.text)
				}
			})
		}
	})
}

func TestStreamConnectionRefused(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		srv := fake.NewServer(fc.flavor)
		base := srv.BaseURL()
		srv.Close()
		p := newProviderFor(t, fc, base, nil)
		_, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		e := asError(t, err)
		if e.Kind != Transport || !Retryable(err) {
			t.Errorf("error = %v (kind %q, retryable %v), want a retryable transport error", err, e.Kind, Retryable(err))
		}
	})
}

func TestStreamLengthFinish(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		p, srv := setup(t, fc)
		finish := "length"
		if fc.flavor == fake.Gemini {
			finish = "MAX_TOKENS"
		}
		srv.Push(fake.Script{Steps: fake.Chunks("cut sh", 3), Finish: finish})
		resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if resp.Finish != "length" || !resp.Truncated {
			t.Errorf("Finish, Truncated = %q, %v; want length, true", resp.Finish, resp.Truncated)
		}
	})
}

func TestStreamNoModel(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		p, srv := setup(t, fc)
		_, err := p.Stream(context.Background(), Request{Prompt: "q"}, nil)
		if e := asError(t, err); e.Kind != BadRequest {
			t.Errorf("Kind = %q, want %q", e.Kind, BadRequest)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("the fake got %d requests, want 0", n)
		}
	})
}

func TestNewRequiresKey(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		_, err := fc.newP(Config{BaseURL: "http://127.0.0.1:1/"})
		if err == nil || !strings.Contains(err.Error(), "API key") {
			t.Errorf("error = %v, want one about the missing API key", err)
		}
	})
}

func TestName(t *testing.T) {
	t.Parallel()
	for _, fc := range flavors {
		p, _ := setup(t, fc)
		if got := p.Name(); got != fc.name {
			t.Errorf("Name() = %q, want %q", got, fc.name)
		}
	}
}

func TestStreamResetAfterFinish(t *testing.T) {
	t.Parallel()
	finishChunk := map[fake.Flavor]string{
		fake.OpenAI:     `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"o3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
		fake.OpenRouter: `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"o3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
		fake.Gemini:     `data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}]}` + "\r\n\r\n",
	}
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(fake.Script{NoFinish: true,
				Steps: []fake.Step{fake.Text("complete"), fake.Raw(finishChunk[fc.flavor]), fake.Reset()}})
			resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil)
			if err != nil {
				t.Fatalf("Stream: %v, want success: the answer had finished", err)
			}
			if resp.Text != "complete" || resp.Finish != "stop" {
				t.Errorf("response = %+v, want the complete answer", resp)
			}
		})
	}
}

// TestGeminiNoAutomaticContinuation: a dropped stream is not re-opened by itself when the
// server sent a continuation token (Google's Go SDK would by default).
func TestGeminiNoAutomaticContinuation(t *testing.T) {
	t.Parallel()
	p, srv := setup(t, flavorFor(fake.Gemini))
	chunk := `data: {"candidates":[{"content":{"parts":[{"text":"part one"}],"role":"model"},"index":0,` +
		`"continuationToken":"dG9rZW4="}],"modelVersion":"gemini-2.5-pro"}` + "\r\n\r\n"
	srv.Push(fake.Script{NoFinish: true, Steps: []fake.Step{fake.Raw(chunk), fake.Reset()}})
	resp, err := p.Stream(context.Background(), Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil)
	if e := asError(t, err); e.Kind != Transport || !e.Partial {
		t.Errorf("error = %v, want a partial transport error", err)
	}
	if resp.Text != "part one" {
		t.Errorf("Text = %q, want %q", resp.Text, "part one")
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the fake got %d requests, want 1 (no automatic continuation)", n)
	}
}

// TestEnvironmentIgnored proves the SDKs' environment fallbacks do not redirect requests or
// leak another provider's credentials.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/wrong")
	t.Setenv("OPENAI_API_KEY", "env-openai-key")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1/wrong")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	t.Setenv("GEMINI_API_KEY", "env-gemini-key")
	for _, fc := range flavors {
		t.Run(fc.name, func(t *testing.T) {
			p, srv := setup(t, fc)
			if _, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			r := srv.Requests()[0]
			for name, vals := range r.Header {
				for _, v := range vals {
					if strings.Contains(v, "env-") {
						t.Errorf("header %s = %q comes from the environment", name, v)
					}
				}
			}
			if fc.flavor == fake.OpenRouter && r.Header.Get("OpenAI-Organization") != "" {
				t.Errorf("OpenRouter got OpenAI-Organization %q", r.Header.Get("OpenAI-Organization"))
			}
		})
	}
}

// TestConcurrentStreamsNoLeak: 32 concurrent streams through one provider, a quarter of them
// hanging until their deadline, all end as they should, and every goroutine they started
// ends with them.
func TestConcurrentStreamsNoLeak(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fc flavorCase) {
		tr := &http.Transport{}
		goroutines.Check(t, tr.CloseIdleConnections)
		srv := fake.NewServer(fc.flavor)
		defer srv.Close()
		p := newProviderFor(t, fc, srv.BaseURL(), &http.Client{Transport: ActivityTransport(tr)})
		srv.SetFunc(func(r *fake.Request) fake.Script {
			if r.Seq%4 == 0 {
				return fake.Script{Steps: []fake.Step{fake.Text("x"), fake.Hang()}}
			}
			return fake.Script{Steps: append([]fake.Step{fake.Sleep(20 * time.Millisecond)}, fake.Chunks("answer", 2)...)}
		})
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer cancel()
				resp, err := p.Stream(ctx, Request{Model: fc.model, Prompt: "q"}, nil)
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Stream: %v", err)
				}
				if err == nil && resp.Text != "answer" {
					t.Errorf("Text = %q, want answer", resp.Text)
				}
			})
		}
		wg.Wait()
	})
}
