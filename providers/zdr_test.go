package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestZDRRequestBody: with Config.ZDR, every OpenRouter request body carries the provider
// routing preferences that restrict it to endpoints keeping no data ("zdr": true,
// "data_collection": "deny"), whether streamed from a Prompt or from an encoded Body, with
// the request's other fields as they were; without it, no provider preferences are sent.
func TestZDRRequestBody(t *testing.T) {
	t.Parallel()
	for _, zdr := range []bool{false, true} {
		srv := fake.New(t, fake.OpenRouter)
		p, err := NewOpenRouter(Config{APIKey: testKey, BaseURL: srv.BaseURL(), ZDR: zdr})
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Model: "anthropic/claude-sonnet-4", Prompt: "files", Question: "why?", Thinking: Thinking{On: true, Budget: 2000}}
		body, err := p.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []Request{req, {Body: body}} {
			if _, err := p.Stream(context.Background(), r, nil); err != nil {
				t.Fatalf("zdr %v: Stream: %v", zdr, err)
			}
		}
		for i, got := range srv.Requests() {
			m := got.JSON()
			provider, sent := m["provider"].(map[string]any)
			switch {
			case !zdr && sent:
				t.Errorf("request %d without ZDR sends provider preferences %v", i, provider)
			case zdr && (provider["zdr"] != true || provider["data_collection"] != "deny" || len(provider) != 2):
				t.Errorf("request %d with ZDR: provider %v, want {zdr: true, data_collection: deny}", i, m["provider"])
			}
			if reasoning, _ := m["reasoning"].(map[string]any); reasoning["max_tokens"] != float64(2000) || m["usage"] == nil {
				t.Errorf("request %d (zdr %v) lost its other fields: reasoning %v, usage %v", i, zdr, m["reasoning"], m["usage"])
			}
		}
	}
}

// TestZDRRefusedWhereNotOffered: OpenAI and Gemini cannot be asked per request to keep no
// data, so their constructors refuse a Config that asks, saying that OpenRouter can; the
// registry says which provider takes it.
func TestZDRRefusedWhereNotOffered(t *testing.T) {
	t.Parallel()
	for _, s := range Registry() {
		_, err := s.New(Config{APIKey: testKey, BaseURL: "http://127.0.0.1:1", ZDR: true})
		switch {
		case s.ZDR && err != nil:
			t.Errorf("%s takes ZDR, yet refused it: %v", s.Name, err)
		case !s.ZDR && (err == nil || !strings.Contains(err.Error(), "zero data retention") || !strings.Contains(err.Error(), "OpenRouter")):
			t.Errorf("%s cannot honour ZDR: got %v, want a refusal naming OpenRouter", s.Name, err)
		}
	}
	if s, _ := Lookup(NameOpenRouter); !s.ZDR {
		t.Error("the registry does not say OpenRouter takes ZDR")
	}
}
