package mcpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/providers"
	"github.com/consultmcp/consult/providers/fake"
	"github.com/consultmcp/consult/tokens"
)

// TestLoadOverStdio: 64 concurrent consultations over one stdio session against an upstream
// that answers after 1 s all succeed within 3 s, and the goroutine count returns to its
// baseline once the session ends.
func TestLoadOverStdio(t *testing.T) {
	srv := fake.New(t, fake.OpenRouter)
	srv.SetDefault(fake.Script{Steps: []fake.Step{fake.Sleep(time.Second), fake.Text("ok")}})
	dir := goTree(t)
	runtime.GC()
	baseline := runtime.NumGoroutine()

	base := &http.Transport{MaxIdleConnsPerHost: 64}
	hc := &http.Client{Transport: providers.ActivityTransport(base)}
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k", BaseURL: srv.BaseURL(), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	counter := tokens.NewCounter()
	counter.CountString("q") // loads the vocabulary (once per process) before the calls are timed
	s := New(Config{Service: &consultation.Service{Counter: counter, Model: p, DefaultModel: "google/gemini-2.5-pro"}})
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeStdio(ctx, s, serverIn, serverOut, io.Discard) }()

	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(nil)))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "load", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mcp.CallToolRequest{}
			req.Params.Name = "consultation"
			req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "timeout": 10}
			res, err := c.CallTool(ctx, req)
			if err == nil && res.IsError {
				err = errors.New(text(res))
			}
			errs <- err
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("64 concurrent one-second consultations took %v", elapsed)
	if elapsed > 3*time.Second {
		t.Errorf("64 concurrent calls took %v, want within 3s", elapsed)
	}

	c.Close()
	cancel()
	clientOut.Close()
	serverOut.Close()
	<-served
	base.CloseIdleConnections() // kept-alive upstream connections are the transport's, not leaks
	var now int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		runtime.GC()
		if now = runtime.NumGoroutine(); now <= baseline {
			return
		}
	}
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	t.Errorf("goroutines: %d after the load, baseline %d\n%s", now, baseline, buf[:n])
}
