package catalog

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// listServer is a fake OpenRouter whose GET /models lists models in the shape OpenRouter
// documents (internal/testkit/fake names the source).
func listServer(t *testing.T, models ...fake.Model) (*fake.Server, string) {
	t.Helper()
	srv := fake.New(t, fake.OpenRouter)
	srv.SetModels(models...)
	return srv, srv.BaseURL() + "/models"
}

var listed = []fake.Model{
	{ID: "openai/gpt-5.4-mini", Context: 400_000, MaxOutput: 128_000,
		Pricing: map[string]string{"prompt": "0.00000075", "completion": "0.0000045", "input_cache_read": "0.000000075"}},
	{ID: "openai/gpt-5.4", Context: 1_050_000, MaxOutput: 128_000,
		Pricing: map[string]string{"prompt": "0.0000025", "completion": "0.000015", "input_cache_read": "0.00000025"}},
	{ID: "openai/gpt-4.1", Context: 1_047_576, MaxOutput: 32_768, Expires: "2027-01-14",
		Pricing: map[string]string{"prompt": "0.000002", "completion": "0.000008"}},
	{ID: "google/gemini-3.5-flash", Context: 1_048_576, MaxOutput: 65_536,
		Pricing: map[string]string{"prompt": "0.0000015", "completion": "0.000009", "request": "0.001"}},
	{ID: "anthropic/claude-sonnet-4.5", Context: 1_000_000, MaxOutput: 64_000,
		Pricing: map[string]string{"prompt": "0.000003", "completion": "0.000015", "input_cache_write": "0.00000375"}},
	{ID: "openrouter/auto", Context: 2_000_000, Pricing: map[string]string{"prompt": "-1", "completion": "-1"}},
	{ID: "vendor/broken", Context: 8_000, Pricing: map[string]string{"prompt": "0.000001", "completion": "1e303"}},
}

// TestLookupFromList: each provider's ids are found in OpenRouter's list (openai/*,
// google/*, any id on OpenRouter), with prices (per request too), window, largest output,
// expiry and the list's date; routing variants and dated snapshots are their model.
func TestLookupFromList(t *testing.T) {
	t.Parallel()
	_, url := listServer(t, listed...)
	tests := []struct {
		provider, model, id string
		in, out, request    float64
		window, maxOut      consult.Tokens
		expires             string
	}{
		{providers.NameOpenAI, "gpt-5.4-mini", "openai/gpt-5.4-mini", 0.75, 4.5, 0, 400_000, 128_000, ""},
		{providers.NameOpenAI, "gpt-4.1-2025-04-14", "openai/gpt-4.1", 2, 8, 0, 1_047_576, 32_768, "2027-01-14"},
		{providers.NameGemini, "models/gemini-3.5-flash", "google/gemini-3.5-flash", 1.5, 9, 0.001, 1_048_576, 65_536, ""},
		{providers.NameOpenRouter, "anthropic/claude-sonnet-4.5:nitro", "anthropic/claude-sonnet-4.5", 3, 15, 0, 1_000_000, 64_000, ""},
		{providers.NameOpenRouter, "openai/gpt-5.4", "openai/gpt-5.4", 2.5, 15, 0, 1_050_000, 128_000, ""},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			t.Parallel()
			c := New(Config{Provider: tt.provider, ListURL: url})
			m, err := c.Lookup(context.Background(), tt.model)
			if err != nil {
				t.Fatal(err)
			}
			p := m.Price
			if m.ID != tt.id || p == nil || !near(p.Input, tt.in) || !near(p.Output, tt.out) || !near(p.Request, tt.request) ||
				m.Window != tt.window || m.MaxOutput != tt.maxOut || p.MaxOutput != tt.maxOut {
				t.Errorf("Lookup = %+v, price %+v", m, p)
			}
			if got := m.Expires.Format(time.DateOnly); tt.expires != "" && got != tt.expires || tt.expires == "" && !m.Expires.IsZero() {
				t.Errorf("Expires = %v, want %q", m.Expires, tt.expires)
			}
			if !strings.HasPrefix(m.Source, "OpenRouter's model list of "+time.Now().UTC().Format(time.DateOnly)) || p.Source != m.Source {
				t.Errorf("Source = %q / %q", m.Source, p.Source)
			}
		})
	}
}

// TestListSpecialPrices: a router whose price varies is known without a price; prices no
// model can have are refused as bad data; the long-prompt tier OpenAI and Google document
// is applied to the list's prices.
func TestListSpecialPrices(t *testing.T) {
	t.Parallel()
	_, url := listServer(t, listed...)
	c := New(Config{Provider: providers.NameOpenRouter, ListURL: url})
	ctx := context.Background()
	if m, err := c.Lookup(ctx, "openrouter/auto"); err != nil || m.Price != nil || m.BadPrice != nil || m.Window != 2_000_000 {
		t.Errorf("a router whose price varies: %+v, %v", m, err)
	}
	if m, err := c.Lookup(ctx, "vendor/broken"); err != nil || m.Price != nil || !errors.Is(m.BadPrice, providers.ErrBadPrice) {
		t.Errorf("a model priced 1e303 a token: %+v, %v; want bad data", m, err)
	}
	m, err := c.Lookup(ctx, "openai/gpt-5.4")
	if err != nil || m.Price.Long == nil || m.Price.LongOver != 272_000 || !near(m.Price.Long.Input, 5) || !near(m.Price.Long.Output, 22.5) || !near(m.Price.Long.CacheRead, 0.5) {
		t.Errorf("gpt-5.4's tier over 272k: %+v, %v", m.Price, err)
	}
}

// TestUnknownModel: a model no source knows is an error naming it, the sources asked and
// the closest known ids in the provider's own naming; ids are exact, never family prefixes.
func TestUnknownModel(t *testing.T) {
	t.Parallel()
	_, url := listServer(t, listed...)
	tests := []struct {
		provider, model string
		closest         string
	}{
		{providers.NameOpenAI, "gpt-5-typo", "gpt-5.4"},
		{providers.NameOpenAI, "gpt-5.4-nano", "gpt-5.4-mini"}, // not priced as gpt-5.4 by prefix
		{providers.NameGemini, "gemini-3.5-flsh", "gemini-3.5-flash"},
		{providers.NameOpenRouter, "anthropic/claude-sonet-4.5", "anthropic/claude-sonnet-4.5"},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Provider: tt.provider, ListURL: url}).Lookup(context.Background(), tt.model)
			var ue *UnknownModelError
			if !errors.As(err, &ue) || ue.Model != tt.model || !slices.Contains(ue.Closest, tt.closest) {
				t.Fatalf("Lookup(%q) = %v; want unknown, %q among the closest", tt.model, err, tt.closest)
			}
			for _, c := range ue.Closest {
				if tt.provider != providers.NameOpenRouter && strings.Contains(c, "/") {
					t.Errorf("closest %q is not in %s's naming", c, tt.provider)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, "OpenRouter's model list") || !strings.Contains(msg, tt.closest) {
				t.Errorf("message %q lacks the source or the closest id", msg)
			}
		})
	}
}

// TestFallbackOffline: with no list to fetch, the dated table answers, by exact id.
func TestFallbackOffline(t *testing.T) {
	t.Parallel()
	c := New(Config{Provider: providers.NameOpenAI})
	m, err := c.Lookup(context.Background(), "gpt-5.4-mini")
	if err != nil || m.Price == nil || m.Source != SourceTable || m.Price.Source != SourceTable || m.Window != 400_000 {
		t.Fatalf("gpt-5.4-mini offline: %+v, %v", m, err)
	}
	if m, err := c.Lookup(context.Background(), "gpt-4.1"); err != nil || m.Expires.IsZero() {
		t.Errorf("gpt-4.1 offline: %+v, %v; want its expiry", m, err)
	}
	var ue *UnknownModelError
	if _, err := c.Lookup(context.Background(), "gpt-5.4-mini-typo"); !errors.As(err, &ue) || !strings.Contains(err.Error(), SourceTable) {
		t.Errorf("a near miss offline: %v; want unknown, naming the table", err)
	}
	for _, r := range table {
		if err := tableModels()[r.id].Price.Check(); err != nil {
			t.Errorf("table row %s: %v", r.id, err)
		}
	}
}

// TestPricesFileWins: the user's prices file wins over the list field by field, and makes
// a model no other source knows known.
func TestPricesFileWins(t *testing.T) {
	t.Parallel()
	_, url := listServer(t, listed...)
	path := filepath.Join(t.TempDir(), "prices.json")
	writeFile(t, path, `{"models": {
		"gpt-5.4-mini": {"prompt": 0.5, "completion": 3, "long_over": 100000, "long": {"prompt": 1, "completion": 6}},
		"my-local-model": {"prompt": 0, "completion": 0, "context": 32768, "max_output": 4096},
		"openai/gpt-4.1": {"expires": "2026-12-31"}}}`)
	pf, err := LoadPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Provider: providers.NameOpenAI, ListURL: url, Prices: pf})
	ctx := context.Background()
	m, err := c.Lookup(ctx, "gpt-5.4-mini")
	if err != nil || !near(m.Price.Input, 0.5) || m.Price.LongOver != 100_000 || m.Window != 400_000 || m.MaxOutput != 128_000 ||
		!strings.Contains(m.Source, path) || m.Price.Source != "the prices file "+path {
		t.Errorf("file over list: %+v (price %+v), %v", m, m.Price, err)
	}
	if m, err := c.Lookup(ctx, "my-local-model"); err != nil || m.Price == nil || m.Window != 32_768 || m.MaxOutput != 4_096 {
		t.Errorf("a model only the file knows: %+v, %v", m, err)
	}
	if m, err := c.Lookup(ctx, "gpt-4.1"); err != nil || m.Expires.Format(time.DateOnly) != "2026-12-31" || !near(m.Price.Input, 2) {
		t.Errorf("an expiry from the file, prices from the list: %+v, %v", m, err)
	}
}

// TestLoadPricesRefusesMistakes: every mistake in a prices file is an error naming the
// file and the model.
func TestLoadPricesRefusesMistakes(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"models": {"m": {"prompt": 1, "completion": 2, "promt": 3}}}`,
		`{"models": {"m": {"prompt": 1}}}`,
		`{"models": {"m": {"prompt": -1, "completion": 2}}}`,
		`{"models": {"m": {"prompt": 2000000, "completion": 2}}}`,
		`{"models": {"m": {"prompt": 1, "completion": 1e400}}}`,
		`{"models": {"m": {"prompt": 1, "completion": 2, "request": -0.5}}}`,
		`{"models": {"m": {"prompt": 1, "completion": 2, "long_over": 1000}}}`,
		`{"models": {"m": {"prompt": 1, "completion": 2, "expires": "soon"}}}`,
		`{"models": {"m": {}}}`,
		`{"prices": {}}`,
		`[]`,
	} {
		path := filepath.Join(t.TempDir(), "prices.json")
		writeFile(t, path, bad)
		if _, err := LoadPrices(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadPrices(%s) = %v; want an error naming the file", bad, err)
		}
	}
	if _, err := LoadPrices(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing prices file loaded")
	}
}

// TestDiskCache: a fetched list is kept on disk with its date; a new catalog answers from
// it at once, without waiting for the list it fetches again (here one that hangs), and the
// source names the cached list's date.
func TestDiskCache(t *testing.T) {
	t.Parallel()
	srv, url := listServer(t, listed...)
	store := results.Open(t.TempDir(), 0, 0, 0)
	first := New(Config{Provider: providers.NameOpenAI, ListURL: url, Cache: store})
	if _, err := first.Lookup(context.Background(), "gpt-5.4-mini"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, _, err := store.ReadModels(); return err == nil })
	// Make the cache old enough to be refreshed, and the list hang until released.
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(store.Dir(), "models.json"), old, old); err != nil {
		t.Fatal(err)
	}
	srv.PushModels(fake.Script{HeaderDelay: time.Hour}) // the fetch hangs (the server closes it at the end)
	second := New(Config{Provider: providers.NameOpenAI, ListURL: url, Cache: store})
	m, err := second.Lookup(context.Background(), "gpt-5.4-mini") // no deadline: it must not wait
	second.mu.Lock()
	inFlight := second.fetching != nil
	second.mu.Unlock()
	if err != nil || !inFlight || !strings.Contains(m.Source, old.UTC().Format(time.DateOnly)) {
		t.Errorf("from the disk cache, the refresh in flight (%v): %+v, %v", inFlight, m, err)
	}
	waitFor(t, func() bool { return srv.Count("/models") == 2 }) // the first fetch and the refresh
}

// TestHangingListOneBoundedWait: with no cached list and a list that hangs, the first call
// waits as long as its context allows, then has the fallback table; the next calls do not
// wait for the same fetch again.
func TestHangingListOneBoundedWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		hang := roundTripper(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		c := New(Config{Provider: providers.NameOpenAI, ListURL: "http://models.test/api/v1/models", HTTPClient: &http.Client{Transport: hang}})
		for i, want := range []time.Duration{2 * time.Second, 0, 0} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			start := time.Now()
			m, err := c.Lookup(ctx, "gpt-5.4-mini")
			cancel()
			if got := time.Since(start); got != want {
				t.Errorf("lookup %d took %v, want %v", i+1, got, want)
			}
			if err != nil || m.Source != SourceTable {
				t.Errorf("lookup %d: %+v, %v; want the fallback table", i+1, m, err)
			}
			// A model the table does not know is not refused while the list is missing.
			if m, err := c.Lookup(ctx, "gpt-6-new"); err != nil || m.Unchecked == "" || m.Price != nil {
				t.Errorf("lookup %d of a model the table lacks: %+v, %v; want it unchecked", i+1, m, err)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("%d fetches, want 1", n)
		}
		time.Sleep(fetchTimeout) // the fetch ends at its own timeout
		synctest.Wait()
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestListRefreshed: a list older than RefreshAfter is fetched again; calls meanwhile are
// answered from the one they have.
func TestListRefreshed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		body := `{"data":[{"id":"openai/gpt-5.4-mini","context_length":400000,"pricing":{"prompt":"0.00000075","completion":"0.0000045"},"top_provider":{"max_completion_tokens":128000}}]}`
		rt := roundTripper(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		})
		c := New(Config{Provider: providers.NameOpenAI, ListURL: "http://models.test/api/v1/models", HTTPClient: &http.Client{Transport: rt}})
		lookup := func() {
			t.Helper()
			if _, err := c.Lookup(context.Background(), "gpt-5.4-mini"); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		lookup()
		time.Sleep(RefreshAfter - time.Second)
		lookup()
		if n := calls.Load(); n != 1 {
			t.Errorf("%d fetches within RefreshAfter, want 1", n)
		}
		time.Sleep(2 * time.Second)
		lookup()
		if n := calls.Load(); n != 2 {
			t.Errorf("%d fetches after RefreshAfter, want 2", n)
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until cond holds (checked every few milliseconds), failing after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

// TestUnlistedEndpointRefusesNothing: calls to an endpoint of the user's (--base-url: a
// proxy, a local model server) are not refused for a model no source knows; the model is
// unknown, with the reason, and a model the table knows keeps its figures.
func TestUnlistedEndpointRefusesNothing(t *testing.T) {
	t.Parallel()
	c := New(Config{Provider: providers.NameOpenAI, Unlisted: "its calls go to a local server"})
	m, err := c.Lookup(context.Background(), "llama3.3:70b")
	if err != nil || m.Unchecked != "its calls go to a local server" || m.Price != nil {
		t.Errorf("a local server's model: %+v, %v; want unknown, not refused", m, err)
	}
	if m, err := c.Lookup(context.Background(), "gpt-5.4-mini"); err != nil || m.Price == nil {
		t.Errorf("a known model through the same endpoint: %+v, %v; want its figures", m, err)
	}
}
