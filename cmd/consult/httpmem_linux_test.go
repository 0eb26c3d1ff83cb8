//go:build linux

package main

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// zeros is an endless body of zero bytes, n at most.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.n {
		n = z.n
	}
	clear(p[:n])
	z.n -= n
	return int(n), nil
}

// TestHTTPHugeBodiesBoundedMemory: four clients each send a 100 MB body at once, with and
// without a declared length, with the right token; the server refuses each (413) and its
// peak memory stays under 300 MB (before the cap, one such body cost about 0.5 GiB).
func TestHTTPHugeBodiesBoundedMemory(t *testing.T) {
	t.Parallel()
	const token = "bodies-test-token-0123456789"
	endpoint, cmd, logs := startHTTPBinaryEnv(t, []string{"CONSULT_HTTP_TOKEN=" + token})
	peak := watchPeak(cmd)
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Go(func() {
			req, err := http.NewRequest("POST", endpoint, &zeros{n: 100 << 20})
			if err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				req.ContentLength = 100 << 20 // declared: refused before reading
			} // else chunked: read up to the cap
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				// The server may close the connection once it has refused the body.
				if !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
					t.Errorf("body %d: %v", i, err)
				}
				codes[i] = http.StatusRequestEntityTooLarge
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusRequestEntityTooLarge {
			t.Errorf("body %d: status %d, want 413", i, c)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if p := peak.Peak(); p > 300<<20 || p == 0 {
		t.Errorf("peak memory %d MiB, want under 300\n%s", p>>20, logs.String())
	} else {
		t.Logf("peak %d MiB", p>>20)
	}
}
