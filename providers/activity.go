package providers

import (
	"context"
	"io"
	"net/http"
)

type activityKey struct{}

// WithActivity returns a context whose HTTP requests, when sent through an
// [ActivityTransport], report upstream life to fn: once with n = 0 when the response
// headers arrive, then on every body Read that returns n > 0 bytes. fn runs on the reading
// goroutine and must be cheap and non-blocking.
func WithActivity(ctx context.Context, fn func(n int)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, activityKey{}, fn)
}

// ActivityTransport wraps base (nil means http.DefaultTransport) so that each request whose
// context carries a callback from [WithActivity] reports every byte the upstream sends:
// response headers, data, and the SSE keep-alive comments that the stream readers skip. Requests
// without a callback pass through untouched.
func ActivityTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &activityTransport{base: base}
}

type activityTransport struct{ base http.RoundTripper }

func (t *activityTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fn, _ := req.Context().Value(activityKey{}).(func(int))
	resp, err := t.base.RoundTrip(req)
	if fn == nil || resp == nil {
		return resp, err
	}
	fn(0)
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = &activityBody{ReadCloser: resp.Body, fn: fn}
	}
	return resp, err
}

type activityBody struct {
	io.ReadCloser
	fn func(int)
}

func (b *activityBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.fn(n)
	}
	return n, err
}
