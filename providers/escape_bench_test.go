package providers

import (
	"testing"

	"github.com/consultmcp/consult/files"
)

// BenchmarkEscapeNetHTTP sizes and escapes GOROOT/src/net/http's prompt into a buffer
// reused from one iteration to the next: the escaping's own speed, without first touches
// of new memory.
func BenchmarkEscapeNetHTTP(b *testing.B) {
	g := gatherNetHTTP(b)
	prompt := []byte(files.NewPrompt(g.Files, "Why?").String())
	dst := make([]byte, escapedLen(prompt)+8)
	b.SetBytes(int64(len(prompt)))
	b.Run("len", func(b *testing.B) {
		for b.Loop() {
			escapedLen(prompt)
		}
	})
	b.Run("escape", func(b *testing.B) {
		for b.Loop() {
			appendEscaped(dst[:0], prompt)
		}
	})
}
