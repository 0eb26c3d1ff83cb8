package consultation

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

// flavors maps each fake upstream to the provider built against it and a model it lists.
var flavors = []struct {
	flavor fake.Flavor
	model  string
	build  func(providers.Config) (providers.Provider, error)
}{
	{fake.OpenRouter, "google/gemini-2.5-pro", func(c providers.Config) (providers.Provider, error) { return providers.NewOpenRouter(c) }},
	{fake.OpenAI, "gpt-4.1", func(c providers.Config) (providers.Provider, error) { return providers.NewOpenAI(c) }},
	{fake.Gemini, "gemini-2.5-pro", func(c providers.Config) (providers.Provider, error) { return providers.NewGemini(c) }},
}

// upstream starts a fake of the given flavor and a service that talks to it through the
// real SDK client, with a catalog whose model list is a fake OpenRouter's GET /models: the
// upstream itself for OpenRouter, another fake listing the flavor's model for OpenAI and
// Gemini (OpenRouter's list holds their models too).
func upstream(t *testing.T, i int) (*fake.Server, *Service) {
	t.Helper()
	f := flavors[i]
	srv := fake.New(t, f.flavor)
	p, err := f.build(providers.Config{APIKey: "sk-test-key-123456", BaseURL: srv.BaseURL(),
		HTTPClient: &http.Client{Transport: providers.ActivityTransport(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	list := srv
	if f.flavor != fake.OpenRouter {
		list = fake.New(t, fake.OpenRouter)
		list.SetModels(flavorModels...)
	}
	return srv, &Service{Counter: counter, Model: p, DefaultModel: f.model, KeyHint: "OPENROUTER_API_KEY",
		Catalog: listCatalog(f.flavor, list, nil)}
}

// flavorModels are the OpenAI and Gemini flavors' models as OpenRouter lists them, at their
// providers' prices (OpenAI's and Google's pricing pages).
var flavorModels = []fake.Model{
	{ID: "openai/gpt-4.1", Context: 1_047_576, MaxOutput: 32_768,
		Pricing: map[string]string{"prompt": "0.000002", "completion": "0.000008", "input_cache_read": "0.0000005"}},
	{ID: "google/gemini-2.5-pro", Context: 1_048_576, MaxOutput: 65_536,
		Pricing: map[string]string{"prompt": "0.00000125", "completion": "0.00001", "input_cache_read": "0.000000125"}},
}

// listCatalog is a catalog of flavor's provider whose model list is list's GET /models,
// fetched with hc (nil: a plain client).
func listCatalog(flavor fake.Flavor, list *fake.Server, hc *http.Client) *catalog.Catalog {
	return catalog.New(catalog.Config{Provider: providerOf(flavor), ListURL: list.BaseURL() + "/models", HTTPClient: hc})
}

// providerOf is the provider a fake flavor stands for.
func providerOf(f fake.Flavor) string {
	switch f {
	case fake.OpenAI:
		return providers.NameOpenAI
	case fake.Gemini:
		return providers.NameGemini
	}
	return providers.NameOpenRouter
}

// fileCatalog is a catalog of provider with no model list (the fallback table) and a
// prices file of content.
func fileCatalog(t *testing.T, provider, content string) *catalog.Catalog {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	pf, err := catalog.LoadPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	return catalog.New(catalog.Config{Provider: provider, Prices: pf})
}

// bubbleUpstream is upstream with the fakes in memory, for a test inside a testing/synctest
// bubble (call it inside the bubble).
func bubbleUpstream(t *testing.T, i int) (*fake.Server, *Service) {
	t.Helper()
	f := flavors[i]
	srv := fake.NewInMemory(t, f.flavor)
	p, err := f.build(providers.Config{APIKey: "sk-test-key-123456", BaseURL: srv.BaseURL(),
		HTTPClient: &http.Client{Transport: providers.ActivityTransport(srv.Client().Transport)}})
	if err != nil {
		t.Fatal(err)
	}
	list := srv
	if f.flavor != fake.OpenRouter {
		list = fake.NewInMemory(t, fake.OpenRouter)
		list.SetModels(flavorModels...)
	}
	return srv, &Service{Counter: counter, Model: p, DefaultModel: f.model, KeyHint: "OPENROUTER_API_KEY",
		Catalog: listCatalog(f.flavor, list, list.Client())}
}

// goReq completes req with the Go files of its path and the question most tests ask.
func goReq(req Request) Request {
	if req.Pattern == "" {
		req.Pattern = "**/*.go"
	}
	if req.Query == "" {
		req.Query = "What does main do?"
	}
	return req
}

// summaryOf is the structured result a client receives for res.
func summaryOf(t *testing.T, res Result) *Summary {
	t.Helper()
	if res.Summary == nil {
		t.Fatalf("no summary in the result: %s", res.Text())
	}
	_, sum := Render(res, ToolNames)
	return sum
}

func TestAnswerEachProvider(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		t.Run(f.flavor.String(), func(t *testing.T) {
			srv, svc := upstream(t, i)
			srv.Push(fake.Script{
				Steps: append([]fake.Step{fake.Think("Let me read main.go. "), fake.Comment("OPENROUTER PROCESSING")},
					fake.Chunks("main prints hello.", 4)...),
				Usage: &fake.Usage{Input: 120, Output: 5, Reasoning: 40, Cached: 100, Cost: 0.0021},
			})
			dir := sampleTree(t)
			res := svc.Consult(context.Background(), goReq(Request{Path: dir}), nil)
			if res.IsError {
				t.Fatalf("error result: %s", res.Text())
			}
			if !strings.HasPrefix(res.Text(), "main prints hello.") {
				t.Errorf("answer should come first, got:\n%s", res.Text())
			}
			if strings.Contains(res.Text(), "Let me read") {
				t.Errorf("reasoning text leaked into the answer:\n%s", res.Text())
			}
			sum := summaryOf(t, res)
			if sum.Kind != KindAnswer || sum.Answer != "main prints hello." || sum.Files != 3 || sum.Attempts != 1 {
				t.Errorf("summary = %+v", sum)
			}
			if sum.Usage == nil || sum.Usage.Input != 120 || sum.Usage.Output != 5 || sum.Usage.Cached != 100 {
				t.Errorf("usage = %+v, want 120 in (100 cached), 5 out", sum.Usage)
			}
			if f.flavor != fake.OpenAI && sum.Usage.Reasoning != 40 {
				t.Errorf("reasoning tokens = %d, want 40", sum.Usage.Reasoning)
			}
			for _, frag := range []string{"---\nmodel ", "3 files", "120 in (100 cached", "5 out", "1 attempt"} {
				if !strings.Contains(res.Text(), frag) {
					t.Errorf("footer lacks %q:\n%s", frag, res.Text())
				}
			}
			if f.flavor == fake.OpenRouter && !strings.Contains(res.Text(), "$0.0021") {
				t.Errorf("OpenRouter footer lacks the cost:\n%s", res.Text())
			}
			reqs := srv.Requests()
			body := string(reqs[len(reqs)-1].Body)
			for _, want := range []string{"main.go", "internal/big/big.go", "What does main do?"} {
				if !strings.Contains(body, want) {
					t.Errorf("request body lacks %q", want)
				}
			}
			if strings.Contains(body, "TOKEN=secret") || strings.Contains(body, "node_modules") {
				t.Error("request body holds a skipped file")
			}
		})
	}
}

// TestDeadlineClosesUpstream: the model stalls; at the deadline the result says so, and the
// fake sees its request end with the client gone, not at the stall's end (an hour).
func TestDeadlineClosesUpstream(t *testing.T) {
	t.Parallel()
	for i, f := range flavors {
		for _, tc := range []struct {
			name    string
			script  fake.Script
			phase   string
			partial string
		}{
			{"stall before first byte", fake.Script{HeaderDelay: time.Hour}, "waiting for the first token", ""},
			{"stall mid-answer", fake.Script{Steps: []fake.Step{fake.Text("The first half"), fake.Hang()}}, "receiving the answer", "The first half"},
		} {
			t.Run(f.flavor.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				dir := sampleTree(t)
				// The fake clock: the phase at the deadline is the stall's, however long a busy
				// machine takes to gather and count.
				synctest.Test(t, func(t *testing.T) {
					srv, svc := bubbleUpstream(t, i)
					srv.Push(tc.script)
					start := time.Now()
					res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 1 * time.Second}), nil)
					deadline := start.Add(time.Second)
					if !res.IsError {
						t.Fatalf("want a timeout error, got %s", res.Text())
					}
					// A small request that timed out was slow, not large: no advice to shrink it.
					for _, frag := range []string{"Request timed out after 1 second", "while " + tc.phase, "3 files", "internal/big/big.go",
						"the model was slow, not the request large", "raise timeout", `on_timeout "continue"`} {
						if !strings.Contains(res.Text(), frag) {
							t.Errorf("timeout text lacks %q:\n%s", frag, res.Text())
						}
					}
					if strings.Contains(res.Text(), "exclude the largest") {
						t.Errorf("a small request is told to shrink:\n%s", res.Text())
					}
					if tc.partial != "" {
						if !strings.Contains(res.Text(), "Partial answer (cut off at the deadline):\n"+tc.partial) {
							t.Errorf("partial answer missing or unmarked:\n%s", res.Text())
						}
						if got := summaryOf(t, res).Answer; got != tc.partial {
							t.Errorf("structured partial answer = %q, want %q", got, tc.partial)
						}
					}
					req := completionRequest(t, srv)
					synctest.Wait()
					select {
					case <-req.Ended():
					default:
						t.Fatal("upstream request still open after the deadline (the stall lasts an hour)")
					}
					if !req.EndedAt().Equal(deadline) {
						t.Errorf("upstream request ended %v after the deadline, want at it", req.EndedAt().Sub(deadline))
					}
					if !req.ClientGone() {
						t.Error("the fake should see the client go away")
					}
				})
			})
		}
	}
}

func TestInBandErrorKeepsPartialAnswer(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.Push(fake.Script{Steps: []fake.Step{fake.Text("Half an answer"), fake.Fail(502, "provider returned error")}})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if !res.IsError {
		t.Fatalf("want an error, got %s", res.Text())
	}
	if !strings.Contains(res.Text(), "Partial answer (cut off by the failure):\nHalf an answer") {
		t.Errorf("partial answer missing:\n%s", res.Text())
	}
	if !strings.Contains(res.Text(), "provider returned error") {
		t.Errorf("upstream message missing:\n%s", res.Text())
	}
}

func TestAuthFailureNamesKeyNotValue(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.Push(fake.Script{Status: 401})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t)}), nil)
	if !res.IsError || !strings.Contains(res.Text(), "rejected the API key") || !strings.Contains(res.Text(), "OPENROUTER_API_KEY") {
		t.Errorf("want an auth error naming the variable:\n%s", res.Text())
	}
	if strings.Contains(res.Text(), "sk-test-key-123456") {
		t.Error("the API key appears in the result")
	}
}

func TestTooLargeIsNotSent(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	dir := writeTree(t, map[string]string{"a/big.txt": strings.Repeat("lorem ipsum dolor ", 500), "b/s.txt": "tiny\n"})
	res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*.txt", Query: "q", Model: "fake/small"}, nil)
	if !res.IsError || !strings.Contains(res.Text(), "Not sent: the request is too large for fake/small") {
		t.Fatalf("want a too-large refusal:\n%s", res.Text())
	}
	if !strings.Contains(res.Text(), "exclude_pattern") {
		t.Errorf("refusal should suggest an exclude_pattern:\n%s", res.Text())
	}
	if n := srv.Count("chat/completions"); n != 0 {
		t.Errorf("%d completion requests sent for a request that does not fit, want 0", n)
	}
}

// TestUnknownModelRefusedBeforeSending: a model no source knows is refused before anything
// is sent, named as unknown with the closest known ids; a misspelt id is never priced or
// sized as another by a prefix.
func TestUnknownModelRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	for i, model := range []string{"nobody/no-such-model", "gpt-4.1-typo", "gemini-2.5-pr0"} {
		t.Run(flavors[i].flavor.String(), func(t *testing.T) {
			t.Parallel()
			srv, svc := upstream(t, i)
			res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: model}), nil)
			if !res.IsError || summaryOf(t, res).Error.Class != ClassInvalidArgument ||
				!strings.Contains(res.Text(), `model "`+model+`" is not available: no source knows it`) || !strings.Contains(res.Text(), "the closest known") {
				t.Fatalf("want an unknown-model refusal:\n%s", res.Text())
			}
			if i > 0 && !strings.Contains(res.Text(), strings.TrimPrefix(flavors[i].model, "google/")) {
				t.Errorf("the refusal does not name %s among the closest:\n%s", flavors[i].model, res.Text())
			}
			if n := srv.Count("chat/completions") + srv.Count("GenerateContent"); n != 0 {
				t.Errorf("%d completion requests sent for an unknown model, want 0", n)
			}
		})
	}
}

func TestOutputFile(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.Push(fake.Answer("The full answer."), fake.Answer("Second answer."))
	out := filepath.Join(t.TempDir(), "answer.md")
	dir := sampleTree(t)
	res := svc.Consult(context.Background(), goReq(Request{Path: dir, OutputFile: out}), nil)
	if res.IsError {
		t.Fatal(res.Text())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "The full answer." {
		t.Errorf("output file holds %q, %v", b, err)
	}
	if strings.Contains(res.Text(), "The full answer.") || !strings.Contains(res.Text(), "Answer written to "+out) || !strings.Contains(res.Text(), "---\nmodel") {
		t.Errorf("result should give the path and footer, not the answer:\n%s", res.Text())
	}
	res = svc.Consult(context.Background(), goReq(Request{Path: dir, OutputFile: out}), nil)
	second := strings.TrimSuffix(out, ".md") + "-1.md"
	if b, _ := os.ReadFile(second); string(b) != "Second answer." || !strings.Contains(res.Text(), "already existed") {
		t.Errorf("second call should write %s and say why:\n%s", second, res.Text())
	}
	if b, _ := os.ReadFile(out); string(b) != "The full answer." {
		t.Error("the first answer was overwritten")
	}
}

func TestUnknownWindowIsSentWithNote(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0) // a model OpenRouter lists without a context length
	srv.SetModels(fake.Model{ID: "custom/model"})
	res := svc.Consult(context.Background(), goReq(Request{Path: sampleTree(t), Model: "custom/model", DryRun: true}), nil)
	if res.IsError || !strings.Contains(res.Text(), "context window unknown") {
		t.Errorf("want a dry run that notes the unknown window:\n%s", res.Text())
	}
}

// completionRequest returns the first model request the fake received (not a model-list
// look-up).
func completionRequest(t *testing.T, srv *fake.Server) *fake.Request {
	t.Helper()
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "chat/completions") || strings.Contains(r.Path, "GenerateContent") {
			return r
		}
	}
	t.Fatalf("no model request among %d requests", len(srv.Requests()))
	return nil
}

// TestSecretsStayOutAndAreListed: a consultation holds back credential files (also behind
// a harmless link name) and redacts tokens in useful files; the request body has none of
// them, and the answer's footer and structured result list each file with the reason.
func TestSecretsStayOutAndAreListed(t *testing.T) {
	t.Parallel()
	srv, svc := upstream(t, 0)
	srv.Push(fake.Script{Steps: fake.Chunks("ok", 1)})
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	token := "ghp_"
	for i := range 36 {
		token += string(alnum[(i*7+3*i*i)%len(alnum)])
	}
	dir := writeTree(t, map[string]string{
		"main.go":          "package main\n\nconst gh = \"" + token + "\"\n",
		".env":             "OPENAI_API_KEY=sk-env-secret\n",
		".vscode/mcp.json": `{"servers":{"consult":{"env":{"OPENROUTER_API_KEY":"sk-or-v1-mcp-secret"}}}}`,
	})
	if err := os.Symlink(".env", filepath.Join(dir, "notes.txt")); err != nil {
		t.Skip(err)
	}
	res := svc.Consult(context.Background(), Request{Path: dir, Pattern: "**/*", Query: "q"}, nil)
	if res.IsError {
		t.Fatalf("error result: %s", res.Text())
	}
	reqs := srv.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, secret := range []string{token, "sk-env-secret", "sk-or-v1-mcp-secret"} {
		if strings.Contains(body, secret) {
			t.Errorf("request body holds %q", secret)
		}
	}
	if !strings.Contains(body, "[REDACTED GitHub token]") {
		t.Errorf("request body lacks the redaction mark:\n%s", body)
	}
	for _, line := range []string{
		".env (environment file)",
		".vscode/mcp.json (MCP or agent client configuration (holds API keys))",
		"notes.txt (link to .env: environment file)",
		"main.go (GitHub token)",
	} {
		if !strings.Contains(res.Text(), "  "+line+"\n") && !strings.HasSuffix(res.Text(), "  "+line) {
			t.Errorf("footer lacks %q:\n%s", line, res.Text())
		}
	}
	sum := summaryOf(t, res)
	if len(sum.Withheld) != 3 || len(sum.Redacted) != 1 || sum.Redacted[0].Path != "main.go" {
		t.Errorf("structured withheld = %+v, redacted = %+v", sum.Withheld, sum.Redacted)
	}
}

// TestFormatUSD: a cost under a cent keeps two significant digits, never "$0.0000".
func TestFormatUSD(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "$0"}, {0.0000058, "$0.0000058"}, {0.00042, "$0.00042"}, {0.0123, "$0.0123"}, {1.5, "$1.50"}, {12.345, "$12.35"}} {
		if got := FormatUSD(tc.v); got != tc.want {
			t.Errorf("FormatUSD(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestHangingModelListOneWait: with OpenRouter's model list hanging and none cached, a call
// waits for it once, a bounded part of its time (a quarter, at most 5 s), then goes on
// without it (the model unchecked, with a warning); the next call does not wait again.
func TestHangingModelListOneWait(t *testing.T) {
	t.Parallel()
	dir := sampleTree(t)
	synctest.Test(t, func(t *testing.T) {
		srv, svc := bubbleUpstream(t, 0)
		srv.PushModels(fake.Script{HeaderDelay: time.Hour})
		srv.SetDefault(fake.Answer("ok"))
		for i, want := range []time.Duration{5 * time.Second, 0} {
			start := time.Now()
			res := svc.Consult(context.Background(), goReq(Request{Path: dir, Timeout: 20 * time.Second}), nil)
			if got := time.Since(start); got != want {
				t.Errorf("call %d took %v, want %v", i+1, got, want)
			}
			sum := summaryOf(t, res)
			if res.IsError || sum.Answer != "ok" || !strings.Contains(strings.Join(sum.Warnings, "\n"), "could not be had") {
				t.Errorf("call %d: %+v\n%s", i+1, sum.Warnings, res.Text())
			}
		}
		time.Sleep(time.Minute) // the fetch ends at its own timeout
		synctest.Wait()
	})
}
