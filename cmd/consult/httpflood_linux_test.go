//go:build linux

package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// floodFDs is the descriptor limit the flooded server runs with: the report's 256.
const floodFDs = 256

// holderWait is how long the token holder waits for its answer: far longer than it takes
// (milliseconds) when the server serves it, and long enough to see that it never would.
const holderWait = 30 * time.Second

// TestHTTPFloodWithFewDescriptors reproduces the report "300 connections left open after
// their 401 kept a 256-descriptor server from ever serving the token holder": the binary runs
// with 256 descriptors; 300 clients send a request without the token and hold their
// connection open, and 300 more open connections that send nothing; each client opens a new
// connection as soon as the server closes its own, for as long as the flood lasts. During the
// flood the token holder's initialize is answered, and the server never runs out of
// descriptors. Before connections were bounded, the server held every refused connection
// for ever and the token holder's request was never accepted.
func TestHTTPFloodWithFewDescriptors(t *testing.T) {
	t.Parallel()
	const token = "flood-test-token-0123456789"
	endpoint, cmd, logs := startHTTPBinaryEnv(t, []string{"CONSULT_HTTP_TOKEN=" + token})
	limit := unix.Rlimit{Cur: floodFDs, Max: floodFDs}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_NOFILE, &limit, nil); err != nil {
		t.Fatalf("lowering the server's descriptor limit: %v", err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/mcp")

	ctx, stopFlood := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var refused, closedByServer atomic.Int64
	hold := func(sendRequest bool) {
		for ctx.Err() == nil {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				continue
			}
			stop := context.AfterFunc(ctx, func() { c.Close() })
			r := bufio.NewReader(c)
			if sendRequest {
				io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
					"Content-Length: "+strconv.Itoa(len(initialize))+"\r\n\r\n"+initialize)
				if status, _ := r.ReadString('\n'); strings.HasPrefix(status, "HTTP/1.1 401") {
					refused.Add(1)
				}
			}
			io.Copy(io.Discard, r) // until the server closes the connection
			if ctx.Err() == nil {
				closedByServer.Add(1)
			}
			stop()
			c.Close()
		}
	}
	for range 300 {
		wg.Go(func() { hold(true) })
		wg.Go(func() { hold(false) })
	}
	defer func() { stopFlood(); wg.Wait() }()

	// Let the flood build first: the report's 300 refused connections (fewer are answered
	// by a server that runs out of descriptors).
	for deadline := time.Now().Add(5 * time.Second); refused.Load() < 300 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	holder := &http.Client{Timeout: holderWait, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := holder.Do(req)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the token holder was not served during the flood (%v after %s); %d refusals answered so far\n%s", err, took.Round(time.Millisecond), refused.Load(), logs.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "serverInfo") {
		t.Fatalf("the token holder during the flood: status %d, body %q", resp.StatusCode, body)
	}
	t.Logf("token holder served in %s during a flood of 600 connections; %d refused and %d connections closed by the server so far",
		took.Round(time.Millisecond), refused.Load(), closedByServer.Load())
	stopFlood()
	wg.Wait()
	if strings.Contains(logs.String(), "too many open files") {
		t.Errorf("the server ran out of descriptors during the flood:\n%s", logs.String())
	}
}
