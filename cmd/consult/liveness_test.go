package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

func consultReq(dir string, extra map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "consultation"
	args := map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "model": "google/gemini-2.5-pro"}
	for k, v := range extra {
		args[k] = v
	}
	req.Params.Arguments = args
	return req
}

// TestStdioConcurrentCalls: 32 calls over one stdio session are all in flight upstream at
// once — none waits in a queue behind the others (mcp-go's default pool runs five): the
// upstream answers none until all 32 have arrived.
func TestStdioConcurrentCalls(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	srv.Barrier(32, 30*time.Second, fake.Script{Steps: []fake.Step{fake.Text("ok")}})
	c := stdioClient(t, "openrouter", "test-key", "--base-url", srv.BaseURL())
	dir := fixture(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, consultReq(dir, map[string]any{"timeout": 60}))
			if err == nil && res.IsError {
				err = errors.New(resultText(res))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("32 calls held upstream until all had arrived took %v", time.Since(start))
}

// TestStdioCancelEndsUpstream: the client gives up on a call (mcp-go sends
// notifications/cancelled); the upstream request, which would otherwise hang for the call's
// ten minutes, ends because of the cancel: it was open when the client cancelled, it ends
// with the client gone rather than complete, and long before the call's own timeout (the
// 30 s wait is a hang guard, not a speed bound).
func TestStdioCancelEndsUpstream(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	srv.SetDefault(fake.Script{Steps: []fake.Step{fake.Text("partial"), fake.Hang()}})
	c := stdioClient(t, "openrouter", "test-key", "--base-url", srv.BaseURL())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.CallTool(ctx, consultReq(fixture(t), map[string]any{"timeout": 600}))
	}()
	req := awaitCompletion(t, srv)
	select {
	case <-req.Ended():
		t.Fatal("upstream request ended before the client cancelled")
	case <-time.After(200 * time.Millisecond):
	}
	cancelled := time.Now()
	cancel()
	select {
	case <-req.Ended():
	case <-time.After(30 * time.Second):
		t.Fatal("upstream request still open 30 s after the client cancelled")
	}
	if !req.ClientGone() {
		t.Error("upstream request ended without the client going away")
	}
	t.Logf("upstream closed %v after the client cancelled", req.EndedAt().Sub(cancelled))
	<-done
}

// awaitCompletion waits for the first model request at the fake (30 s: a hang guard).
func awaitCompletion(t *testing.T, srv *fake.Server) *fake.Request {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, r := range srv.Requests() {
			if strings.Contains(r.Path, "chat/completions") {
				return r
			}
		}
	}
	t.Fatal("no model request reached the fake")
	return nil
}

// TestSignalEndsCalls: SIGTERM, SIGINT and stdin closing each cancel running calls, close
// their upstream requests and end the process.
func TestSignalEndsCalls(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, 0} {
		name := sig.String()
		if sig == 0 {
			name = "stdin closed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := fake.New(t, fake.OpenRouter)
			srv.SetDefault(fake.Script{HeaderDelay: time.Hour})
			cmd := exec.Command(binary, "openrouter", "test-key", "--base-url", srv.BaseURL())
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Stdout = &bytes.Buffer{}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			dir := fixture(t)
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"consultation","arguments":{"path":"` + dir + `","pattern":"**/*.go","query":"q","model":"google/gemini-2.5-pro","timeout":60}}}`,
			} {
				if _, err := stdin.Write([]byte(line + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			req := awaitCompletion(t, srv)
			signalled := time.Now()
			if sig == 0 {
				stdin.Close()
			} else if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-req.Ended():
			case <-time.After(30 * time.Second):
				t.Fatalf("upstream still open 30 s after %v, within the call's 60 s", sig)
			}
			t.Logf("upstream closed %v after %v", req.EndedAt().Sub(signalled), sig)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("process still running 30 s after %v\n%s", sig, stderr.String())
			}
		})
	}
}

// TestSelfTest: --test asks the model once and says whether the key works, without
// printing it. Not parallel: it runs the server in this process, which sets the default
// logger to its stderr.
func TestSelfTest(t *testing.T) {
	srv := fake.New(t, fake.OpenRouter)
	srv.Push(fake.Answer("The self-test reached the model."))
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"openrouter", "k", "--base-url", srv.BaseURL(), "--model", "google/gemini-2.5-pro", "--test"},
		env(nil), strings.NewReader(""), &out, &errb)
	if err != nil {
		t.Fatalf("--test: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "OK in") || !strings.Contains(out.String(), "The self-test reached the model.") || !strings.Contains(out.String(), "model google/gemini-2.5-pro") {
		t.Errorf("--test output:\n%s", out.String())
	}
	srv.Push(fake.Script{Status: 401})
	out.Reset()
	errb.Reset()
	err = run(context.Background(), []string{"openrouter", "bad-key-value", "--base-url", srv.BaseURL(), "--model", "google/gemini-2.5-pro", "--test"},
		env(nil), strings.NewReader(""), &out, &errb)
	if code, ok := err.(exitCode); !ok || code != 1 {
		t.Errorf("--test with a rejected key: err = %v, want exit status 1", err)
	}
	if !strings.Contains(errb.String(), "rejected the API key") || strings.Contains(errb.String()+out.String(), "bad-key-value") {
		t.Errorf("--test failure should say the key was rejected without printing it:\n%s", errb.String())
	}
}
