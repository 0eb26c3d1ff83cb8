package providers

import (
	"context"
	"os"
	"testing"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// gatherNetHTTP gathers the .go files of GOROOT/src/net/http, the tree the memory figures
// of a call are measured on.
func gatherNetHTTP(tb testing.TB) *files.Gathered {
	tb.Helper()
	root := testrun.GOROOTSrc(tb, "net", "http")
	if _, err := os.Stat(root); err != nil {
		tb.Skipf("no GOROOT tree: %v", err)
	}
	g, err := files.Gather(context.Background(), files.Options{Root: root, Pattern: "**/*.go",
		MaxFileBytes: 1 << 40, MaxTotalBytes: 1 << 40, MaxFiles: 1 << 30})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// BenchmarkSendNetHTTP lays out, encodes and sends one request carrying GOROOT/src/net/http
// to each provider's fake (which discards the body), thinking on, as a consultation does:
// B/op is what one call allocates, body included, against the gathered bytes reported as
// prompt_MB.
func BenchmarkSendNetHTTP(b *testing.B) {
	g := gatherNetHTTP(b)
	for _, fc := range flavors {
		b.Run(fc.name, func(b *testing.B) {
			srv := fake.New(b, fc.flavor)
			srv.DiscardBodies()
			srv.SetDefault(fake.Script{Steps: fake.Chunks("ok", 2), Model: fc.model})
			p, err := fc.newP(Config{APIKey: testKey, BaseURL: srv.BaseURL()})
			if err != nil {
				b.Fatal(err)
			}
			send := func() {
				prompt := files.NewPrompt(g.Files, "What does the server do?")
				body, err := p.(Encoder).Encode(Request{Model: fc.model, Thinking: Thinking{On: true}, System: "Be brief.",
					Text: prompt.Prefix, Question: prompt.Question()})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Stream(context.Background(), Request{Body: body}, nil); err != nil {
					b.Fatal(err)
				}
			}
			send() // the first call pays for the connection and the heap's growth
			b.ReportAllocs()
			for b.Loop() {
				send()
			}
			b.ReportMetric(float64(g.Bytes)/1e6, "prompt_MB")
		})
	}
}

// BenchmarkEncodeNetHTTP encodes (sizes, then escapes) GOROOT/src/net/http into one body,
// without sending it: the CPU cost of the one copy.
func BenchmarkEncodeNetHTTP(b *testing.B) {
	g := gatherNetHTTP(b)
	p, err := NewOpenAI(Config{APIKey: testKey, BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(g.Bytes))
	b.ReportAllocs()
	for b.Loop() {
		prompt := files.NewPrompt(g.Files, "Why?")
		if _, err := p.Encode(Request{Model: "o3", Text: prompt.Prefix, Question: prompt.Question()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeEnvelope encodes a request whose message is one byte, with every field an
// OpenRouter body can carry: the cost of the envelope around the prompt.
func BenchmarkEncodeEnvelope(b *testing.B) {
	p, err := NewOpenRouter(Config{APIKey: testKey, BaseURL: "http://127.0.0.1:1", ZDR: true})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Model: "anthropic/claude-sonnet-4", Prompt: "q", Question: "Why?", System: "Be brief.",
		CacheBreakpoint: true, Thinking: Thinking{On: true, Budget: 4000}, OutputLimit: 20000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Encode(req); err != nil {
			b.Fatal(err)
		}
	}
}
