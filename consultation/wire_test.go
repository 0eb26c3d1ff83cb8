package consultation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/consultmcp/consult/providers"
)

// wireDir is the replay set of responses real providers sent (../shared/wire beside the
// repository: other projects' recordings, replayed here and never copied in).
const wireDir = "../../shared/wire/recordings"

// wirePrices are the prices (US dollars per million tokens) of the models that answered the
// recordings, as OpenRouter lists them and the providers' pricing pages gave them when they
// were recorded; a recording whose model's price could not be sourced is not here.
var wirePrices = map[string]string{
	"or-grok4-cached-reasoning-cost":      `"prompt": 3, "completion": 15, "cache_read": 0.75`,
	"or-claude-reasoning-stream":          `"prompt": 3, "completion": 15, "cache_read": 0.3, "cache_write": 3.75`,
	"or-o3-encrypted-reasoning-details":   `"prompt": 2, "completion": 8, "cache_read": 0.5`,
	"or-grok-summary-encrypted-cached":    `"prompt": 0.2, "completion": 0.5, "cache_read": 0.05`,
	"or-gemini-lite-encrypted-tiny-cost":  `"prompt": 0.25, "completion": 1.5`,
	"oa-gpt41-plain-usage":                `"prompt": 2, "completion": 8, "cache_read": 0.5`,
	"oa-gpt5-usage-then-extra-chunk":      `"prompt": 1.25, "completion": 10, "cache_read": 0.125`,
	"oa-gpt5nano-reasoning-tokens":        `"prompt": 0.05, "completion": 0.4, "cache_read": 0.005`,
	"g-25pro-thought-parts":               `"prompt": 1.25, "completion": 10, "cache_read": 0.125`,
	"g-3pro-signature-only-final-part":    `"prompt": 2, "completion": 12, "cache_read": 0.2`,
	"g-3pro-thought-and-answer-one-chunk": `"prompt": 2, "completion": 12, "cache_read": 0.2`,
	"g-25flash-usage-each-chunk":          `"prompt": 0.3, "completion": 2.5, "cache_read": 0.03`,
	"g-cached-content-tokens":             `"prompt": 0.3, "completion": 2.5, "cache_read": 0.03`,
	"g-max-tokens-partial-after-thinking": `"prompt": 0.3, "completion": 2.5, "cache_read": 0.03`,
	"g-flash-plain-crlf":                  `"prompt": 0.1, "completion": 0.4, "cache_read": 0.025`,
}

// TestWireBilledWithinBound replays each priced recording that reports its usage (its first
// successful response, byte for byte) to a consultation through the real provider, and
// checks that what it was billed (OpenRouter's reported cost, else its tokens at the list
// prices) is within the bound the request carried, and its output within the output limit.
func TestWireBilledWithinBound(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(wireDir, "manifest.json"))
	if err != nil {
		t.Skipf("the wire replay set is not beside the repository: %v", err)
	}
	var manifest struct {
		Recordings []struct {
			ID, Provider, Model string
			Responses           []struct {
				Status int
				Body   string
			}
		}
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	dir := sampleTree(t)
	checked := 0
	for _, rec := range manifest.Recordings {
		prices, ok := wirePrices[rec.ID]
		if !ok {
			continue
		}
		var body []byte
		for _, r := range rec.Responses {
			if r.Status == http.StatusOK {
				if body, err = os.ReadFile(filepath.Join(wireDir, r.Body)); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		checked++
		t.Run(rec.ID, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(body)
			}))
			t.Cleanup(srv.Close)
			spec, _ := providers.Lookup(rec.Provider)
			base := srv.URL
			if rec.Provider == providers.NameGemini {
				base += "/"
			}
			p, err := spec.New(providers.Config{APIKey: "sk-wire-test-key", BaseURL: base})
			if err != nil {
				t.Fatal(err)
			}
			cat := fileCatalog(t, rec.Provider, fmt.Sprintf(`{"models": {%q: {%s, "context": 1000000}}}`, rec.Model, prices))
			svc := &Service{Counter: counter, Model: p, Catalog: cat}
			res := svc.Consult(context.Background(), goReq(Request{Path: dir, Model: rec.Model}), nil)
			sum := summaryOf(t, res)
			e, u := sum.Estimate, sum.Usage
			if e == nil || !e.Known() || u == nil || u.CostUSD == nil {
				t.Fatalf("no bound or no cost: estimate %+v usage %+v\n%s", e, u, res.Text())
			}
			if *u.CostUSD > *e.MaxUSD || u.Output+u.Reasoning > e.OutputLimit {
				t.Errorf("billed %s (%s output tokens) over the bound %s (output limit %s)",
					FormatUSD(*u.CostUSD), u.Output+u.Reasoning, FormatUSD(*e.MaxUSD), e.OutputLimit)
			}
			t.Logf("billed %s, expected %s, at most %s", FormatUSD(*u.CostUSD), FormatUSD(*e.ExpectedUSD), FormatUSD(*e.MaxUSD))
		})
	}
	if checked != len(wirePrices) {
		t.Errorf("%d of the %d priced recordings were found in the manifest", checked, len(wirePrices))
	}
}
