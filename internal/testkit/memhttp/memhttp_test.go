package memhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestTransport: a request reaches the handler with its body, the response comes back with
// the handler's status, header and body, the handler's context ends when the client closes
// the body or cancels, and a handler's panic fails the client's read.
func TestTransport(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan time.Time, 1)
		c := &http.Client{Transport: Transport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/echo":
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("X-Echo", "yes")
				w.WriteHeader(http.StatusTeapot)
				w.Write(b)
			case "/hang":
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				ended <- time.Now()
			case "/slow":
				select {
				case <-r.Context().Done():
				case <-time.After(time.Hour):
				}
			case "/panic":
				w.Write([]byte("part"))
				panic(http.ErrAbortHandler)
			}
		}))}

		resp, err := c.Post("http://x.invalid/echo", "text/plain", strings.NewReader("ping"))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Echo") != "yes" || string(b) != "ping" {
			t.Errorf("echo: %d %v %q", resp.StatusCode, resp.Header, b)
		}
		resp.Body.Close()

		resp, err = c.Get("http://x.invalid/hang")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		closed := time.Now()
		resp.Body.Close()
		if at := <-ended; !at.Equal(closed) {
			t.Errorf("closing the body ended the handler's context %v after", at.Sub(closed))
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x.invalid/slow", nil)
		if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a handler that sends no header past the deadline: %v", err)
		}

		resp, err = c.Get("http://x.invalid/panic")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Error("reading the body of a handler that panicked gave no error")
		}
		resp.Body.Close()
	})
}
