package providers_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

// An OpenRouter call against a fake upstream, with upstream liveness noted at the
// transport: the keep-alive comments count as life although the SDK never shows them.
func Example() {
	srv := fake.NewServer(fake.OpenRouter)
	defer srv.Close()
	srv.Push(fake.Script{
		KeepAlive: 10 * time.Millisecond,
		Steps: append([]fake.Step{fake.Think("Checking the loop."), fake.Sleep(50 * time.Millisecond)},
			fake.Chunks("Use a map.", 4)...),
		Usage: &fake.Usage{Input: 1200, Output: 4, Reasoning: 96, Cost: 0.0031},
	})

	p, err := providers.NewOpenRouter(providers.Config{
		APIKey:  "sk-or-example",
		BaseURL: srv.BaseURL(),
	})
	if err != nil {
		panic(err)
	}
	reads := 0
	ctx := providers.WithActivity(context.Background(), func(n int) {
		if n > 0 {
			reads++
		}
	})
	resp, err := p.Stream(ctx, providers.Request{
		Model:    "anthropic/claude-sonnet-4",
		Prompt:   "files... then the question",
		Thinking: providers.Thinking{On: true, Budget: 4000},
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text)
	fmt.Println("reasoning tokens:", resp.Usage.Reasoning, "cost known:", resp.Usage.CostKnown)
	fmt.Println("upstream reads seen:", reads > 3)
	// Output:
	// Use a map.
	// reasoning tokens: 96 cost known: true
	// upstream reads seen: true
}

// Errors carry a Kind; Retryable follows the retry rules.
func ExampleRetryable() {
	srv := fake.NewServer(fake.Gemini)
	defer srv.Close()
	srv.Push(fake.Script{Status: 429, RetryDelay: 3 * time.Second})

	p, _ := providers.NewGemini(providers.Config{APIKey: "example", BaseURL: srv.BaseURL()})
	_, err := p.Stream(context.Background(), providers.Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil)

	var e *providers.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind, e.RetryAfter, providers.Retryable(err))
	}
	fmt.Println(errors.Is(err, providers.RateLimited))
	// Output:
	// rate limited 3s true
	// true
}
