package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// roundTripFunc is an in-memory transport, so time-dependent logic can run in a synctest
// bubble without sockets.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

const modelsJSON = `{"data":[{"id":"a/b","context_length":4096,"top_provider":{"context_length":4096}}]}`

func modelsTransport(calls *atomic.Int32, block bool) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		if block {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return &http.Response{
			StatusCode: http.StatusOK,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       io.NopCloser(strings.NewReader(modelsJSON)),
			Request:    r,
		}, nil
	})
}

func TestModelsTTLSynctest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		p, err := NewOpenRouter(Config{APIKey: testKey, BaseURL: "http://models.test/api/v1",
			HTTPClient: &http.Client{Transport: modelsTransport(&calls, false)}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		check := func(wantCalls int32) {
			t.Helper()
			w, ok, err := p.ContextWindow(ctx, "a/b")
			if err != nil || !ok || w != 4096 {
				t.Fatalf("ContextWindow = %d, %v, %v; want 4096", w, ok, err)
			}
			if got := calls.Load(); got != wantCalls {
				t.Errorf("%d fetches, want %d", got, wantCalls)
			}
		}
		check(1)
		time.Sleep(ModelsTTL - time.Second)
		check(1) // still fresh
		time.Sleep(2 * time.Second)
		check(2) // stale: fetched again
	})
}

func TestModelsWaitBoundedSynctest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		p, err := NewOpenRouter(Config{APIKey: testKey, BaseURL: "http://models.test/api/v1",
			HTTPClient: &http.Client{Transport: modelsTransport(&calls, true)}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, ok, err := p.ContextWindow(ctx, "a/b")
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("ContextWindow returned after %v, want exactly the 2s deadline", got)
		}
		if ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ContextWindow = %v, %v; want DeadlineExceeded", ok, err)
		}
		// The shared fetch goes on for the next caller, bounded by its own timeout.
		time.Sleep(modelsFetchTimeout)
		synctest.Wait()
		if got := calls.Load(); got != 1 {
			t.Errorf("%d fetches, want 1", got)
		}
	})
}
