// Package memhttp serves HTTP requests in memory, without a socket, so that a test can run an
// HTTP client and server inside a testing/synctest bubble (net/http over real sockets does
// not run in one).
package memhttp

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// Transport returns a RoundTripper that serves each request with h in memory, on a goroutine
// of its own, as net/http's server would: the handler's request context ends when the client
// cancels its request or closes the response body, or when the handler returns; the client's
// cancellation ends a read of the body. The status and header reach the client at the
// handler's first Write or Flush, or when it returns; the body is unbuffered. A handler that
// panics (as with http.ErrAbortHandler) fails the client's read as a reset connection does.
func Transport(h http.Handler) http.RoundTripper { return transport{h} }

type transport struct{ h http.Handler }

func (m transport) RoundTrip(r *http.Request) (*http.Response, error) {
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
		m.h.ServeHTTP(w, sr)
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

// memWriter is the handler's side of a response.
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

// memBody is a response body: closing it is the client going away.
type memBody struct {
	*io.PipeReader
	close func()
}

func (b *memBody) Close() error {
	b.close()
	return b.PipeReader.Close()
}
