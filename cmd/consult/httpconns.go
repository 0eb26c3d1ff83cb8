package main

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// The limits of what connections may hold. A request that streams (an SSE response to a long
// call, with its heartbeats) is not bounded by them: there is no read or write timeout on a
// request in progress, only on a connection that carries none.
const (
	// idleTimeout closes a keep-alive connection that has carried no request for this long:
	// MCP clients open a new one on loopback at no cost, and an idle connection kept for ever
	// is a descriptor lost for ever.
	idleTimeout = 10 * time.Second
	// maxUntrustedConns caps the connections that have not yet carried a request with the
	// token, so that a flood of them cannot take the descriptors the calls need (files,
	// upstream requests, workers): 128 leaves most of even a 256-descriptor limit to them.
	maxUntrustedConns = 128
	// untrustedGrace is how long a connection that has not shown the token is sure to be
	// kept, to send its first request, before a newer connection may take its place. An
	// honest client sends its request as soon as it has connected.
	untrustedGrace = time.Second
)

// connGate tracks the server's connections that have not yet carried a request with the
// token, oldest first. A connection is trusted from its first request that the guard admits:
// then it is closed only by its client, by idleTimeout, or by the server's shutdown.
//
// When the cap is reached, a new connection waits, before it is served and before the server
// accepts any other, until the oldest untrusted one has had untrustedGrace, and then takes its
// place (that one is closed). So a flood of connections that send nothing, or stop half way
// through their headers, holds at most maxUntrustedConns descriptors, and the token holder's
// connection, queued in the listener's backlog behind the flood's, is accepted within about
// (connections ahead of it / maxUntrustedConns) * untrustedGrace and has its request read
// before it can be displaced. Connections that never show the token live at most
// readHeaderTimeout anyway (a request the guard refuses closes its connection), so without a
// flood the cap is never reached.
type connGate struct {
	max   int
	grace time.Duration

	mu      sync.Mutex
	pending []pendingConn // oldest first; at most max, so a scan of it is short
	freed   chan struct{} // closed (and replaced) when a connection leaves the set
}

// pendingConn is an untrusted connection and when it was accepted.
type pendingConn struct {
	c     net.Conn
	since time.Time
}

// connKey is the request context key under which connGate stores the request's connection.
type connKey struct{}

func newConnGate(max int, grace time.Duration) *connGate {
	return &connGate{max: max, grace: grace, freed: make(chan struct{})}
}

// arrive counts c as untrusted once there is room: at once under the cap, else when a
// connection leaves the set or the oldest has had its grace (it is closed). It runs in the
// server's accept loop, before c is served, and waits at most g.grace.
func (g *connGate) arrive(c net.Conn) {
	for {
		g.mu.Lock()
		var evict net.Conn
		wait := time.Duration(0)
		if g.max > 0 && len(g.pending) >= g.max {
			if wait = g.grace - time.Since(g.pending[0].since); wait <= 0 {
				evict = g.pending[0].c
				g.pending = slices.Delete(g.pending, 0, 1)
			}
		}
		if wait > 0 {
			freed := g.freed
			g.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-freed:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		g.pending = append(g.pending, pendingConn{c: c, since: time.Now()})
		g.mu.Unlock()
		if evict != nil {
			evict.Close() // its serving goroutine sees the error and ends
		}
		return
	}
}

// trust takes the connection of a request the guard admitted out of the untrusted set.
func (g *connGate) trust(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(net.Conn); ok && g != nil {
		g.forget(c)
	}
}

// forget drops c from the untrusted set, if it is there, and wakes a connection waiting
// for room.
func (g *connGate) forget(c net.Conn) {
	g.mu.Lock()
	if i := slices.IndexFunc(g.pending, func(p pendingConn) bool { return p.c == c }); i >= 0 {
		g.pending = slices.Delete(g.pending, i, i+1)
		close(g.freed)
		g.freed = make(chan struct{})
	}
	g.mu.Unlock()
}

// boundConns sets srv's connection limits for the guard's server: idle keep-alive
// connections end after idleTimeout, and connections that have not shown the token are
// capped by a connGate, which the guard tells about each request it admits. Headers must
// arrive within readHeaderTimeout (set where srv is built); requests that the guard refuses
// close their connection.
func (g *httpGuard) boundConns(srv *http.Server) {
	srv.IdleTimeout = idleTimeout
	gate := newConnGate(g.maxConns, untrustedGrace)
	g.conns = gate
	// Every accepted connection is counted as untrusted (waiting for room first), each
	// request carries its connection in its context (for trust), closed ones are forgotten.
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		gate.arrive(c)
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			gate.forget(c)
		}
	}
}
