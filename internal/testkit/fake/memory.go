package fake

import (
	"net/http"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/memhttp"
)

// NewInMemory makes a server of the given flavor that listens on no socket: it serves the
// requests of the client [Server.Client] returns in memory, so a test can run it with a
// provider's client inside a testing/synctest bubble (create it inside the bubble). Its
// URL is http://fake.invalid. A Reset step, which needs a connection to reset, fails the
// request as a handler panic does. It closes when the test ends.
func NewInMemory(t testing.TB, f Flavor) *Server {
	t.Helper()
	s := newServer(f)
	s.URL = "http://fake.invalid"
	t.Cleanup(s.Close)
	return s
}

// Client returns an HTTP client for s: for a server made by NewInMemory, one whose requests
// s serves in memory; else a plain client.
func (s *Server) Client() *http.Client {
	if s.srv != nil {
		return &http.Client{}
	}
	return &http.Client{Transport: memhttp.Transport(http.HandlerFunc(s.serve))}
}
