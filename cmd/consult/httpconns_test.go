package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeNet is an in-memory listener for tests under synctest: each dial is a net.Pipe whose
// other end Accept returns, so the server's deadlines run on the bubble's clock.
type pipeNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeNet() *pipeNet { return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})} }

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error   { p.once.Do(func() { close(p.done) }); return nil }
func (p *pipeNet) Addr() net.Addr { return pipeAddr{} }

// dial connects to the server and waits until it has taken the connection in (its
// ConnContext and ConnState hooks have run).
func (p *pipeNet) dial() *pipeConn {
	c, s := net.Pipe()
	p.conns <- s
	synctest.Wait()
	return &pipeConn{Conn: c, r: bufio.NewReader(c)}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeConn is the client's end of a connection.
type pipeConn struct {
	net.Conn
	r *bufio.Reader
}

// send writes a request with the given extra header lines and body in one write.
func (c *pipeConn) send(t *testing.T, method, path, body string, headers ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatalf("sending %s %s: %v", method, path, err)
	}
}

// response reads one response whole.
func (c *pipeConn) response(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return resp, string(b)
}

// openFor waits for the server to close the connection, at most limit, and returns how long
// it stayed open; ok is false if it was still open at limit. Anything the server sends
// instead of closing is an error.
func (c *pipeConn) openFor(t *testing.T, limit time.Duration) (d time.Duration, ok bool) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	n, err := c.r.Read(make([]byte, 1))
	switch {
	case n > 0:
		t.Fatalf("the server sent more on an answered connection")
	case err == io.EOF:
		return time.Since(start), true
	case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("waiting for the close: %v", err)
	}
	return limit, false
}

// longWait is how long the tests wait for a close that should come: far past every limit.
const longWait = time.Hour

// pipeServer serves next behind the real guard (token testToken, loopback bind, tweak
// applied) in an http.Server configured as newHTTPServer configures it, on a pipeNet. Call
// it inside a bubble; the returned stop closes the server.
func pipeServer(t *testing.T, next http.Handler, tweak func(*httpGuard)) (*pipeNet, *httpGuard, func()) {
	t.Helper()
	g := newHTTPGuard(testToken, nil, true)
	if tweak != nil {
		tweak(g)
	}
	g.next = next
	srv := &http.Server{ReadHeaderTimeout: readHeaderTimeout, MaxHeaderBytes: maxHeaderBytes, Handler: g,
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	g.boundConns(srv)
	ln := newPipeNet()
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	return ln, g, func() { srv.Close(); <-done; synctest.Wait() }
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// TestHTTPServerLimits: the server consult runs has the limits the tests below hold on the
// same guard and settings (pipeServer), and no read or write timeout, which would cut a
// streaming response.
func TestHTTPServerLimits(t *testing.T) {
	t.Parallel()
	ts := guardedMCP(t, nil, nil)
	srv := ts.Config
	if srv.ReadHeaderTimeout != readHeaderTimeout || srv.IdleTimeout != idleTimeout || srv.MaxHeaderBytes != maxHeaderBytes {
		t.Errorf("ReadHeaderTimeout %s, IdleTimeout %s, MaxHeaderBytes %d; want %s, %s, %d",
			srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes, readHeaderTimeout, idleTimeout, maxHeaderBytes)
	}
	if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("ReadTimeout %s, WriteTimeout %s; want none: they would cut a response that streams for as long as a call runs", srv.ReadTimeout, srv.WriteTimeout)
	}
	if srv.ConnContext == nil || srv.ConnState == nil {
		t.Error("the server does not count its untrusted connections (no ConnContext / ConnState hook)")
	}
}

// TestHTTPRefusalClosesConnection: every request the guard refuses gets its answer and then
// the server closes the connection at once, instead of keeping it for the client's next
// request (before, 300 connections left open after their 401 held 300 descriptors for ever).
func TestHTTPRefusalClosesConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln, _, stop := pipeServer(t, okHandler, nil)
		defer stop()
		bearer := "Authorization: Bearer " + testToken
		for _, tc := range []struct {
			name    string
			headers []string
			want    int
		}{
			{"no token", nil, 401},
			{"wrong token", []string{"Authorization: Bearer wrong-0123456789abcdef"}, 401},
			{"two Authorization headers", []string{bearer, bearer}, 400},
			{"evil Origin", []string{bearer, "Origin: http://evil.example"}, 403},
		} {
			c := ln.dial()
			c.send(t, "POST", "/mcp", initialize, tc.headers...)
			resp, body := c.response(t)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: status %d, want %d; body %q", tc.name, resp.StatusCode, tc.want, body)
			}
			if d, closed := c.openFor(t, longWait); !closed || d != 0 {
				t.Errorf("%s: connection still open %s after the refusal (closed: %v), want closed at once", tc.name, d, closed)
			}
			c.Close()
		}
		c := ln.dial()
		c.send(t, "POST", "/mcp", initialize, bearer)
		if resp, body := c.response(t); resp.StatusCode != 200 || body != "ok" {
			t.Errorf("with the token: %d %q, want 200 ok", resp.StatusCode, body)
		}
		c.Close()
	})
}

// TestHTTPIdleConnectionsClosed: a connection that sends nothing, or stops half way through
// its headers, is closed at readHeaderTimeout; a keep-alive connection that carries no
// further request is closed at idleTimeout (before, it was kept for ever).
func TestHTTPIdleConnectionsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln, g, stop := pipeServer(t, okHandler, nil)
		defer stop()

		silent := ln.dial()
		half := ln.dial()
		io.WriteString(half, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		if d, closed := silent.openFor(t, longWait); !closed || d != readHeaderTimeout {
			t.Errorf("a connection that sent nothing was open %s (closed: %v), want closed at %s", d, closed, readHeaderTimeout)
		}
		if d, closed := half.openFor(t, longWait); !closed || d != 0 { // closed at the same instant as silent
			t.Errorf("a connection that sent half its headers was open %s after the silent one (closed: %v), want closed with it", d, closed)
		}

		kept := ln.dial()
		kept.send(t, "POST", "/mcp", initialize, "Authorization: Bearer "+testToken)
		if resp, _ := kept.response(t); resp.StatusCode != 200 {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		if d, closed := kept.openFor(t, longWait); !closed || d != idleTimeout {
			t.Errorf("an idle keep-alive connection was open %s (closed: %v), want closed at %s", d, closed, idleTimeout)
		}
		for _, c := range []*pipeConn{silent, half, kept} {
			c.Close()
		}
		synctest.Wait()
		if n := g.conns.untrusted(); n != 0 {
			t.Errorf("%d connections still counted after all closed", n)
		}
	})
}

// TestHTTPStreamOutlivesLimits: a response that streams a heartbeat every 10 s for 10
// minutes, or says nothing for 15 minutes before it answers (a call without a progress
// token), is delivered whole: no limit of the server cuts a request in progress.
func TestHTTPStreamOutlivesLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const beats = 60
		stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			if r.URL.Query().Has("silent") {
				time.Sleep(15 * time.Minute)
				io.WriteString(w, "data: answer\n\n")
				return
			}
			for i := range beats {
				fmt.Fprintf(w, "data: beat %d\n\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(10 * time.Second)
			}
			io.WriteString(w, "data: answer\n\n")
		})
		ln, _, stop := pipeServer(t, stream, nil)
		defer stop()
		for _, path := range []string{"/mcp", "/mcp?silent"} {
			c := ln.dial()
			start := time.Now()
			c.send(t, "POST", path, initialize, "Authorization: Bearer "+testToken)
			resp, body := c.response(t)
			if resp.StatusCode != 200 || !strings.HasSuffix(body, "data: answer\n\n") {
				t.Errorf("%s: status %d after %s, body ends %q; want the whole stream", path, resp.StatusCode, time.Since(start), body[max(0, len(body)-40):])
			}
			if path == "/mcp" && strings.Count(body, "data: beat") != beats {
				t.Errorf("%d heartbeats arrived, want %d", strings.Count(body, "data: beat"), beats)
			}
			c.Close()
		}
	})
}

// TestHTTPFloodKeepsTokenHolder: with the untrusted cap at 4, ten connections that send
// nothing are taken in four at a time, each after the oldest has had its grace, which is
// closed: six are closed, four open. The token holder's connection, queued behind the flood,
// is taken in likewise and served; neither its call in progress nor its idle connection is
// closed by a further flood. What the gate counts falls back to zero when the connections end.
func TestHTTPFloodKeepsTokenHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("wait") {
				<-release
			}
			io.WriteString(w, "ok")
		})
		ln, g, stop := pipeServer(t, slow, func(g *httpGuard) { g.maxConns = 4 })
		defer stop()

		start := time.Now()
		var flood []*pipeConn
		for range 10 {
			flood = append(flood, ln.dial())
		}
		if took, want := time.Since(start), 2*untrustedGrace; took != want {
			t.Errorf("ten connections over a cap of four were taken in after %s, want %s (4 at once, 4 when those had their grace, 2 when the next had theirs)", took, want)
		}
		for i, c := range flood {
			d, closed := c.openFor(t, time.Millisecond)
			if want := i < 6; closed != want || (closed && d != 0) {
				t.Errorf("flood connection %d: closed %v after %s, want closed %v", i, closed, d, want)
			}
		}
		if n := g.conns.untrusted(); n != 4 {
			t.Errorf("%d untrusted connections counted, want the cap, 4", n)
		}

		idle := ln.dial() // the token holder: one call answered, then idle
		idle.send(t, "POST", "/mcp", initialize, "Authorization: Bearer "+testToken)
		if resp, _ := idle.response(t); resp.StatusCode != 200 {
			t.Fatalf("the token holder during a flood: status %d, want 200", resp.StatusCode)
		}
		answered := time.Now()
		busy := ln.dial() // the token holder: a call in progress
		busy.send(t, "POST", "/mcp?wait", initialize, "Authorization: Bearer "+testToken)
		synctest.Wait()
		for range 10 {
			flood = append(flood, ln.dial())
		}
		if n := g.conns.untrusted(); n != 4 {
			t.Errorf("after a second flood, %d untrusted connections counted, want 4", n)
		}
		close(release)
		if resp, body := busy.response(t); resp.StatusCode != 200 || body != "ok" {
			t.Errorf("the token holder's call through a second flood: %d %q, want 200 ok", resp.StatusCode, body)
		}
		if _, closed := idle.openFor(t, longWait); !closed || time.Since(answered) != idleTimeout {
			t.Errorf("the token holder's idle connection was closed %s after its answer (closed: %v), want at idleTimeout %s, not by the flood", time.Since(answered), closed, idleTimeout)
		}
		for _, c := range append(flood, idle, busy) {
			c.Close()
		}
		synctest.Wait()
		if n := g.conns.untrusted(); n != 0 {
			t.Errorf("%d connections still counted after all closed", n)
		}
	})
}

// TestConnGateTrustOutsideServer: trust on a context without a connection, or on a guard
// without a gate, is a no-op.
func TestConnGateTrustOutsideServer(t *testing.T) {
	t.Parallel()
	var nilGate *connGate
	nilGate.trust(context.Background())
	g := newConnGate(2, time.Second)
	g.trust(context.Background())
	if g.untrusted() != 0 {
		t.Error("trust without a connection changed the count")
	}
}

// untrusted is how many connections g counts as untrusted now.
func (g *connGate) untrusted() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}
