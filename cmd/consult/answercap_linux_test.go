package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/providers"
)

// TestBigAnswerMemory: a 32 MiB answer comes back cut at the answer cap, and the server's
// peak memory stays under 300 MB (an uncapped 64 MB answer took 1.16 GiB: 32 MB would take
// about 580 MB).
func TestBigAnswerMemory(t *testing.T) {
	t.Parallel()
	const maxRSS = 300 << 20
	piece := strings.Repeat("An answer line that goes on, with \"quotes\" and é.\n", 1300) // ~64 KiB
	// The first piece as the fake sends text; the rest as the same chunk encoded once here,
	// so that the fake (under -race, instrumented) does not encode 32 MiB of JSON.
	chunk, err := json.Marshal(map[string]any{"id": "gen-fake-big", "object": "chat.completion.chunk", "created": time.Now().Unix(),
		"model": "google/gemini-2.5-pro", "provider": "FakeProvider",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}, "logprobs": nil, "finish_reason": nil}}})
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]fake.Step, 512)
	steps[0] = fake.Text(piece)
	for i := 1; i < len(steps); i++ {
		steps[i] = fake.Raw("data: " + string(chunk) + "\n\n")
	}
	srv := fake.New(t, fake.OpenRouter)
	srv.SetDefault(fake.Script{Steps: steps})
	dir := fixture(t)

	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"consultation","arguments":{"path":"` + dir + `","pattern":"**/*.go","query":"q","model":"google/gemini-2.5-pro"}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(binary, "openrouter", "--base-url", srv.BaseURL())
	cmd.Env = []string{"HOME=" + t.TempDir(), "OPENROUTER_API_KEY=test-key-0123456789abcdef"}
	stdin, stdout, errb := startPiped(t, cmd)
	peak := watchPeak(cmd)
	io.WriteString(stdin, in)
	r := bufio.NewReaderSize(stdout, 1<<20)
	var result []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the result: %v\n%s", err, errb.String())
		}
		if bytes.Contains(line, []byte(`"id":2,`)) {
			result = line
			break
		}
	}
	stdin.Close()
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("binary: %v\n%s", err, errb.String())
	}

	var msg struct {
		Result struct {
			IsError           bool                 `json:"isError"`
			StructuredContent consultation.Summary `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(result, &msg); err != nil {
		t.Fatal(err)
	}
	sum := msg.Result.StructuredContent
	if msg.Result.IsError || !sum.Truncated || sum.TruncatedBy != consultation.TruncatedByAnswerCap {
		t.Errorf("isError %v, truncated %v by %q; want false, true by %q", msg.Result.IsError, sum.Truncated, sum.TruncatedBy, consultation.TruncatedByAnswerCap)
	}
	got := len(sum.Answer)
	if sum.Page != nil { // returned in pages: the first is here, the whole is kept
		got = sum.Page.TotalChars
	}
	if want := providers.MaxAnswerBytes; got > want || got < want-4 {
		t.Errorf("answer is %d bytes, want %d", got, want)
	}
	if !bytes.Contains(result, []byte("[The answer was cut at 8 MiB")) {
		t.Errorf("the result text does not say the answer was cut at 8 MiB")
	}
	if got := srv.Count("/chat/completions"); got != 1 {
		t.Errorf("completion requests = %d, want 1", got)
	}
	rss := peak.Peak()
	t.Logf("peak RSS %d MiB", rss>>20)
	if rss > maxRSS {
		t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, maxRSS>>20)
	}
}
