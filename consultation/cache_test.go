package consultation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// sentBodies runs one consultation per query on dir through svc and returns the request
// bodies the upstream received, in order.
func sentBodies(t *testing.T, srv *fake.Server, svc *Service, dir, model string, queries ...string) [][]byte {
	t.Helper()
	before := len(srv.Requests())
	for _, q := range queries {
		res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.go", Query: q, Model: model}, nil)
		if res.IsError {
			t.Fatalf("query %q: %s", q, res.Text())
		}
	}
	var bodies [][]byte
	for _, r := range srv.Requests()[before:] {
		if strings.HasSuffix(r.Path, "/chat/completions") || strings.Contains(r.Path, ":streamGenerateContent") {
			bodies = append(bodies, r.Body)
		}
	}
	if len(bodies) != len(queries) {
		t.Fatalf("%d model requests for %d queries", len(bodies), len(queries))
	}
	return bodies
}

// userText is the user message of a chat or Gemini request body, as the model reads it: the
// text of every part in order, and whether the first part carries OpenRouter's cache_control.
func userText(t *testing.T, body []byte) (parts []string, cacheControl []string) {
	t.Helper()
	var chat struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Contents []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &chat); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	for _, c := range chat.Contents { // Gemini
		for _, p := range c.Parts {
			parts = append(parts, p.Text)
			cacheControl = append(cacheControl, "")
		}
	}
	for _, m := range chat.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			parts = append(parts, s)
			cacheControl = append(cacheControl, "")
			continue
		}
		var ps []struct {
			Type         string `json:"type"`
			Text         string `json:"text"`
			CacheControl *struct {
				Type string `json:"type"`
			} `json:"cache_control"`
		}
		if err := json.Unmarshal(m.Content, &ps); err != nil {
			t.Fatalf("user content is neither a string nor parts: %s", m.Content)
		}
		for _, p := range ps {
			if p.Type != "text" {
				t.Errorf("part of type %q, want text", p.Type)
			}
			parts = append(parts, p.Text)
			cc := ""
			if p.CacheControl != nil {
				cc = p.CacheControl.Type
			}
			cacheControl = append(cacheControl, cc)
		}
	}
	return parts, cacheControl
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestSameFilesSamePrefix: two questions about the same tree send byte-identical request
// bodies up to the question (the prefix a provider's prompt cache holds: files sorted by
// path, the question last), for every provider; when one file changes, the bodies part at
// that file, not before it.
func TestSameFilesSamePrefix(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		t.Run(f.flavor.String(), func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, i)
			dir := writeTree(t, map[string]string{"a.go": "package a\n", "m/b.go": "package b\n", "z.go": "package z\n"})
			bodies := sentBodies(t, srv, svc, dir, f.model, "What does a do?", "Where is z?")
			n := commonPrefix(bodies[0], bodies[1])
			parts, _ := userText(t, bodies[0])
			whole := strings.Join(parts, "")
			q := strings.Index(whole, "Question:\n")
			if q < 0 || !strings.Contains(whole[q:], "What does a do?") {
				t.Fatalf("the question is not last in the message: %q", whole)
			}
			// Everything before the question is in the common prefix of the two bodies.
			if i := bytes.Index(bodies[0], []byte("Question:")); i < 0 || n < i {
				t.Errorf("bodies part at byte %d, before the question (byte %d):\n%s", n, i, bodies[0][:min(n+40, len(bodies[0]))])
			}
			for _, p := range []string{"File: a.go", "File: m/b.go", "File: z.go"} {
				if !bytes.Contains(bodies[0][:n], []byte(p)) {
					t.Errorf("%s is not in the shared prefix", p)
				}
			}
			// A changed file: the bodies agree up to it, and part in it.
			if err := os.WriteFile(filepath.Join(dir, "m", "b.go"), []byte("package b // changed\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			changed := sentBodies(t, srv, svc, dir, f.model, "Where is z?")[0]
			m := commonPrefix(bodies[1], changed)
			at := bytes.Index(changed, []byte("File: m/b.go"))
			if m < at || m > bytes.Index(changed, []byte("File: z.go")) {
				t.Errorf("after m/b.go changed the bodies part at byte %d; want within m/b.go (from byte %d)", m, at)
			}
		})
	}
}

// TestOpenRouterCacheControl: an OpenRouter request to an Anthropic model sends the user
// message as two text parts, the files with "cache_control": {"type": "ephemeral"} and the
// question after them (https://openrouter.ai/docs/features/prompt-caching: Anthropic needs
// cache_control breakpoints, set on a content part); other models get the one string.
func TestOpenRouterCacheControl(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	dir := sampleTree(t)
	claude := sentBodies(t, srv, svc, dir, "anthropic/claude-sonnet-4", "What does main do?")[0]
	parts, cc := userText(t, claude)
	if len(parts) != 2 || cc[0] != "ephemeral" || cc[1] != "" {
		t.Fatalf("claude: %d parts, cache_control %q; want the files part marked ephemeral and the question apart", len(parts), cc)
	}
	if !strings.Contains(parts[0], "File: main.go") || strings.Contains(parts[0], "Question:") || !strings.HasSuffix(parts[1], "What does main do?") {
		t.Errorf("claude parts: files %q…, question %q", parts[0][:min(60, len(parts[0]))], parts[1])
	}
	gemini := sentBodies(t, srv, svc, dir, "google/gemini-2.5-pro", "What does main do?")[0]
	if parts, _ := userText(t, gemini); len(parts) != 1 || bytes.Contains(gemini, []byte("cache_control")) {
		t.Errorf("gemini via OpenRouter: %d parts, cache_control present %v; want one string, none", len(parts), bytes.Contains(gemini, []byte("cache_control")))
	}
	// The same files give the same first part, byte for byte, whatever the question.
	again := sentBodies(t, srv, svc, dir, "anthropic/claude-sonnet-4", "Another question?")[0]
	p2, _ := userText(t, again)
	if p2[0] != parts[0] {
		t.Error("the cached part differs between two questions about the same files")
	}
}

// TestCacheControlOnlyFromTheMinimum: files under the model's minimum cacheable size get no
// breakpoint (it would cache nothing): Claude Sonnet 4 caches from 1,024 tokens, Haiku 4.5
// from 4,096; the expected price counts the cache write only where the breakpoint is sent.
func TestCacheControlOnlyFromTheMinimum(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.SetModels(
		fake.Model{ID: "anthropic/claude-sonnet-4", Context: 200_000, MaxOutput: 64_000,
			Pricing: map[string]string{"prompt": "0.000003", "completion": "0.000015", "input_cache_write": "0.00000375", "input_cache_read": "0.0000003"}},
		fake.Model{ID: "anthropic/claude-haiku-4.5", Context: 200_000, MaxOutput: 64_000,
			Pricing: map[string]string{"prompt": "0.000001", "completion": "0.000005", "input_cache_write": "0.00000125", "input_cache_read": "0.0000001"}},
	)
	large := sampleTree(t) // over 1,024 tokens of files, under 4,096
	small := writeTree(t, map[string]string{"a.go": "package a\n"})
	tests := []struct {
		dir, model string
		marked     bool
	}{
		{large, "anthropic/claude-sonnet-4", true},
		{small, "anthropic/claude-sonnet-4", false},
		{large, "anthropic/claude-haiku-4.5", false},
	}
	for _, tt := range tests {
		dry := reportOf(t, svc.Consult(context.Background(), Request{Path: tt.dir, Pattern: "**/*.go", Query: "q", Model: tt.model, DryRun: true}, nil))
		body := sentBodies(t, srv, svc, tt.dir, tt.model, "What is here?")[0]
		parts, cc := userText(t, body)
		if marked := len(parts) == 2 && cc[0] == "ephemeral"; marked != tt.marked {
			t.Errorf("%s with %s file tokens: cache_control sent %v, want %v", tt.model, dry.Tokens, marked, tt.marked)
		}
		// The expected price counts the files at the cache-write price only when marked.
		pr := map[string][2]float64{"anthropic/claude-sonnet-4": {3, 3.75}, "anthropic/claude-haiku-4.5": {1, 1.25}}[tt.model]
		in := pr[0]
		if tt.marked {
			in = pr[0] + (pr[1]-pr[0])*float64(dry.Tokens)/float64(dry.PromptTokens)
		}
		e := dry.Cost
		want := float64(e.PromptTokens)*in/1e6 + float64(e.ExpectedAnswer)*map[string]float64{"anthropic/claude-sonnet-4": 15, "anthropic/claude-haiku-4.5": 5}[tt.model]/1e6
		if !closeTo(*e.ExpectedUSD, want) {
			t.Errorf("%s: expected %v, want %v", tt.model, *e.ExpectedUSD, want)
		}
	}
}

// TestOpenAIPromptCacheKey: OpenAI requests carry prompt_cache_key
// (https://platform.openai.com/docs/api-reference/chat/create: "prompt_cache_key", a string
// used to route requests with the same prefix to the same cache), the same for the same
// files, another when a file changes; OpenRouter and Gemini requests carry none.
func TestOpenAIPromptCacheKey(t *testing.T) {
	t.Parallel()
	key := func(body []byte) string {
		var b struct {
			Key *string `json:"prompt_cache_key"`
		}
		if err := json.Unmarshal(body, &b); err != nil || b.Key == nil {
			return ""
		}
		return *b.Key
	}
	srv, svc := upstream(t, 1)
	dir := sampleTree(t)
	bodies := sentBodies(t, srv, svc, dir, "gpt-4.1", "q1", "q2")
	k1, k2 := key(bodies[0]), key(bodies[1])
	if k1 == "" || k1 != k2 {
		t.Fatalf("prompt_cache_key %q and %q; want the same, non-empty", k1, k2)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k3 := key(sentBodies(t, srv, svc, dir, "gpt-4.1", "q1")[0]); k3 == "" || k3 == k1 {
		t.Errorf("after a file changed the key is %q, want a new one (was %q)", k3, k1)
	}
	for _, i := range []int{0, 2} {
		srv, svc := upstream(t, i)
		if b := sentBodies(t, srv, svc, dir, flavors[i].model, "q")[0]; bytes.Contains(b, []byte("prompt_cache_key")) {
			t.Errorf("%s request carries prompt_cache_key", flavors[i].flavor)
		}
	}
}

func TestFileSetKey(t *testing.T) {
	keyOf := func(fs []files.File) string {
		for i := range fs {
			fs[i].Digest = sha256.Sum256(fs[i].Content)
		}
		return fileSetKey(Digests(fs))
	}
	t.Parallel()
	// Same files in another order: same key; a path or a byte changed: another.
	a := keyOf(filesOf("a.go", "x", "b.go", "y"))
	if b := keyOf(filesOf("b.go", "y", "a.go", "x")); a != b {
		t.Errorf("order changed the key: %s, %s", a, b)
	}
	for _, other := range [][]string{{"a.go", "x", "b.go", "z"}, {"a.go", "x", "c.go", "y"}, {"a.gox", "", "b.go", "y"}} {
		if k := keyOf(filesOf(other...)); k == a {
			t.Errorf("%q gives the same key as the original", other)
		}
	}
}

// filesOf makes files of path, content pairs.
func filesOf(pc ...string) []files.File {
	var fs []files.File
	for i := 0; i+1 < len(pc); i += 2 {
		fs = append(fs, files.File{Path: pc[i], Content: []byte(pc[i+1])})
	}
	return fs
}

// TestLongCache: with LongCache, an OpenAI request asks for extended retention
// (prompt_cache_retention "24h", https://platform.openai.com/docs/guides/prompt-caching), an
// OpenRouter request to an Anthropic model marks its files with "ttl": "1h"
// (https://openrouter.ai/docs/features/prompt-caching), and the expected price counts that
// cache's writes at twice the prompt price; without it, neither field is sent.
func TestLongCache(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	for _, long := range []bool{false, true} {
		srv, svc := upstream(t, 1)
		svc.LongCache = long
		body := sentBodies(t, srv, svc, dir, "gpt-4.1", "What does main do?")[0]
		if got := bytes.Contains(body, []byte(`"prompt_cache_retention":"24h"`)); got != long {
			t.Errorf("OpenAI, LongCache %v: prompt_cache_retention 24h sent %v", long, got)
		}
		srv, svc = upstream(t, 0)
		svc.LongCache = long
		srv.SetModels(fake.Model{ID: "anthropic/claude-sonnet-4", Context: 200_000, MaxOutput: 64_000,
			Pricing: map[string]string{"prompt": "0.000003", "completion": "0.000015", "input_cache_write": "0.00000375", "input_cache_read": "0.0000003"}})
		// Before any request: a later dry run expects the cache the request wrote.
		dry := reportOf(t, svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.go", Query: "q", Model: "anthropic/claude-sonnet-4", DryRun: true}, nil))
		body = sentBodies(t, srv, svc, dir, "anthropic/claude-sonnet-4", "What does main do?")[0]
		if got := bytes.Contains(body, []byte(`"ttl":"1h"`)); got != long {
			t.Errorf("OpenRouter to Claude, LongCache %v: ttl 1h sent %v", long, got)
		}
		write := 3.75
		if long {
			write = 6 // twice the $3 prompt price
		}
		e := dry.Cost
		in := 3 + (write-3)*float64(dry.Tokens)/float64(dry.PromptTokens)
		if want := float64(e.PromptTokens)*in/1e6 + float64(e.ExpectedAnswer)*15/1e6; !closeTo(*e.ExpectedUSD, want) {
			t.Errorf("LongCache %v: expected %v, want %v (cache writes at $%v per million)", long, *e.ExpectedUSD, want, write)
		}
		if bound := float64(e.BoundTokens)*write/1e6 + float64(e.OutputLimit)*15/1e6; !closeTo(*e.MaxUSD, bound) {
			t.Errorf("LongCache %v: bound %v, want %v", long, *e.MaxUSD, bound)
		}
	}
}
