package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"

	"github.com/consultmcp/consult/internal/testkit/goroutines"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// TestLoadOverStdio: 64 concurrent consultations over one stdio session are all in flight
// upstream at once (the upstream answers none until all 64 have arrived, so a server that
// served fewer at a time would never finish them), all succeed, and every goroutine they
// started ends with the session. No bound on time: a busy machine only makes it slower.
func TestLoadOverStdio(t *testing.T) {
	t.Parallel()
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	goroutines.Check(t, base.CloseIdleConnections) // kept-alive upstream connections are the transport's, not leaks
	srv := fake.New(t, fake.OpenRouter)
	srv.Barrier(64, 30*time.Second, fake.Script{Steps: []fake.Step{fake.Text("ok")}})
	dir := goTree(t)
	hc := &http.Client{Transport: providers.ActivityTransport(base)}
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k", BaseURL: srv.BaseURL(), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	counter := tokens.NewCounter()
	counter.CountString("q") // loads the vocabulary (once per process) before the calls are timed
	c, _ := stdioClient(t, New(Config{Service: &consultation.Service{Counter: counter, Model: p, DefaultModel: "google/gemini-2.5-pro"}}), false)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "consultation"
			req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "timeout": 60}
			res, err := c.CallTool(context.Background(), req)
			if err == nil && res.IsError {
				err = errors.New(text(res))
			}
			errs <- err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("64 concurrent consultations, held upstream until all had arrived, took %v", elapsed)
}

// TestDeadlineFromArrivalUnderLoad: 200 concurrent consultations with timeout 2 over one
// stdio session all end (answer or timeout) within 2.2 s of being sent, although mcp-go runs
// at most WorkerPoolSize at once: the deadline runs from arrival, and a call that waited for
// a worker past it is answered at once, in phase "queued", sending nothing upstream. With
// 1 s answers the second hundred start at about 1 s; with 3 s answers they wait past their
// deadline. Prints the figures; a load test: it runs with CONSULT_LOAD=1
// (make bench).
func TestDeadlineFromArrivalUnderLoad(t *testing.T) {
	testrun.Load(t)
	for _, answer := range []time.Duration{time.Second, 3 * time.Second} {
		t.Run(answer.String()+" answers", func(t *testing.T) { deadlineUnderLoad(t, answer) })
	}
}

func deadlineUnderLoad(t *testing.T, answer time.Duration) {
	const calls, timeout, within = 200, 2, 2200 * time.Millisecond
	srv := fake.New(t, fake.OpenRouter)
	srv.SetDefault(fake.Script{Steps: []fake.Step{fake.Sleep(answer), fake.Text("ok")}})
	dir := goTree(t)
	base := &http.Transport{MaxIdleConnsPerHost: calls}
	defer base.CloseIdleConnections()
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k", BaseURL: srv.BaseURL(), HTTPClient: &http.Client{Transport: providers.ActivityTransport(base)}})
	if err != nil {
		t.Fatal(err)
	}
	svc := &consultation.Service{Counter: tokens.NewCounter(), Model: p, DefaultModel: "google/gemini-2.5-pro",
		Inflight: consultation.NewInflight(consultation.DefaultInflight())}
	c, _ := stdioClient(t, New(Config{Service: svc}), true)
	ctx := context.Background()
	type outcome struct {
		took     time.Duration
		answered bool
		phase    string
		err      error
	}
	out := make([]outcome, calls)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "consultation"
			req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "timeout": timeout}
			sent := time.Now()
			res, err := c.CallTool(ctx, req)
			out[i].took, out[i].err = time.Since(sent), err
			if err != nil {
				return
			}
			out[i].answered = !res.IsError
			if !res.IsError {
				return
			}
			var sum struct {
				Phase string `json:"phase"`
				Error *struct {
					Class string `json:"class"`
				} `json:"error"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(raw, &sum) != nil || sum.Error == nil || sum.Error.Class != "timeout" {
				out[i].err = errors.New("not a timeout result: " + text(res))
			}
			out[i].phase = sum.Phase
		})
	}
	wg.Wait()
	var answered int
	var slowest time.Duration
	phases := map[string]int{}
	for i, o := range out {
		if o.err != nil {
			t.Errorf("call %d: %v", i, o.err)
			continue
		}
		slowest = max(slowest, o.took)
		if o.answered {
			answered++
		} else {
			phases[o.phase]++
		}
		if o.took > within {
			t.Errorf("call %d ended %v after it was sent, want within %v", i, o.took, within)
		}
	}
	upstream := srv.Count("chat/completions")
	t.Logf("%d concurrent calls, timeout %d s, %v upstream answers, %d workers: %d answered, timeouts by phase %v; the last ended %v after it was sent; %d upstream requests",
		calls, timeout, answer, WorkerPoolSize, answered, phases, slowest.Round(time.Millisecond), upstream)
	if queued := phases[string(consultation.PhaseQueued)]; upstream > calls-queued {
		t.Errorf("%d upstream requests, but %d calls ended queued: a queued call sent something", upstream, queued)
	}
}
