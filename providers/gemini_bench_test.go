package providers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// geminiLongStream is a Gemini stream of n events in the layout the Gemini API sends
// (each event a candidate with one text part, usage metadata, the model version and the
// response id, as in the API reference's streamGenerateContent example), 20 of thoughts
// then the answer, about 400 bytes of text an event, ending with STOP.
func geminiLongStream(n int) (body string, answer int) {
	var b strings.Builder
	text := strings.Repeat(`The loop walks the slice twice, so it is \"quadratic\"; index it first.\n`, 5)
	for i := range n {
		thought := ""
		if i < 20 {
			thought = `,"thought": true`
		} else {
			answer += len(strings.ReplaceAll(strings.ReplaceAll(text, `\"`, `"`), `\n`, "\n"))
		}
		finish := ""
		if i == n-1 {
			finish = `,"finishReason": "STOP"`
		}
		fmt.Fprintf(&b, `data: {"candidates": [{"content": {"parts": [{"text": "%s"%s}],"role": "model"}%s,"index": 0}],`+
			`"usageMetadata": {"promptTokenCount": 9000,"candidatesTokenCount": %d,"totalTokenCount": %d,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 9000}],"thoughtsTokenCount": 640},`+
			`"modelVersion": "gemini-2.5-pro","responseId": "abcDEF123"}`+"\r\n\r\n", text, thought, finish, 100*i, 9640+100*i)
	}
	return b.String(), answer
}

// BenchmarkGeminiStream reads a 1,000-event Gemini stream (about 400 KB of answer, served
// in one write by the fake): the CPU and allocations of decoding a long answer.
func BenchmarkGeminiStream(b *testing.B) {
	body, answer := geminiLongStream(1000)
	srv := fake.New(b, fake.Gemini)
	srv.SetDefault(fake.Script{Body: body})
	p, err := NewGemini(Config{APIKey: testKey, BaseURL: srv.BaseURL()})
	if err != nil {
		b.Fatal(err)
	}
	read := func() {
		resp, err := p.Stream(context.Background(), Request{Model: "gemini-2.5-pro", Prompt: "q"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Text) != answer {
			b.Fatalf("answer %d bytes, want %d", len(resp.Text), answer)
		}
	}
	read()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		read()
	}
}
