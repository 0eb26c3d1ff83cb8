package fake

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
)

// NewInMemory makes a server of the given flavor that listens on no socket: it serves the
// requests of the client [Server.Client] returns in memory, so a test can run it with a
// provider and its SDK inside a testing/synctest bubble (create it inside the bubble). Its
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
	return &http.Client{Transport: memTransport{s}}
}

// memTransport serves each request with s's handler on a goroutine of its own, as net/http's
// server would: the handler's request context ends when the client cancels its request or
// closes the response body, or when the handler returns.
type memTransport struct{ s *Server }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	sr := r.Clone(ctx)
	if sr.Body == nil {
		sr.Body = http.NoBody
	}
	sr.RequestURI = r.URL.RequestURI()
	pr, pw := io.Pipe()
	w := &memWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				pw.CloseWithError(io.ErrUnexpectedEOF) // as a reset connection
			}
			w.Flush()
			pw.Close()
		}()
		m.s.serve(w, sr)
	}()
	select {
	case <-w.ready:
	case <-r.Context().Done():
		cancel()
		return nil, r.Context().Err()
	}
	// The client's cancellation ends a read of the body, as net/http's transport does.
	stop := context.AfterFunc(r.Context(), func() { pr.CloseWithError(r.Context().Err()) })
	return &http.Response{
		Status:     http.StatusText(w.code),
		StatusCode: w.code,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     w.sent,
		Body:       &memBody{PipeReader: pr, close: func() { stop(); cancel() }},
		Request:    r,
	}, nil
}

// memWriter is the handler's side of a memTransport response: the status and header go to
// the client at the first Write or Flush, or when the handler returns.
type memWriter struct {
	header http.Header
	sent   http.Header
	code   int
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code = code
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush sends the status and header; the body is unbuffered.
func (w *memWriter) Flush() { w.WriteHeader(http.StatusOK) }

// memBody is a memTransport response body: closing it is the client going away.
type memBody struct {
	*io.PipeReader
	close func()
}

func (b *memBody) Close() error {
	b.close()
	return b.PipeReader.Close()
}
