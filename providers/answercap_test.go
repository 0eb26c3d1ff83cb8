package providers

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/testrun"

	"github.com/consultmcp/consult/internal/testkit/fake"
)

// TestAnswerCap: an answer past MaxAnswerBytes comes back cut at the cap, marked with its own
// finish reason, without an error or a second request, whether it arrives in many events or
// in one event of 50 MiB (openai-go's line scanner failed past 32 MiB and the call was retried).
func TestAnswerCap(t *testing.T) {
	t.Parallel()
	testrun.Large(t, "sends answers of 50 MiB")
	piece := strings.Repeat("é lorem ipsum \"quoted\"\n", 2900) // ~64 KiB, escapes and 2-byte runes
	many := make([]fake.Step, 0, 1100)
	for range 1100 { // ~70 MiB
		many = append(many, fake.Text(piece))
	}
	oneLine := strings.Repeat(piece, 800) // ~51 MiB
	cases := []struct {
		name  string
		steps []fake.Step
	}{
		{"many events", many},
		{"one 50 MiB event", []fake.Step{fake.Text(oneLine)}},
	}
	for _, fc := range flavors {
		for _, tc := range cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				p, srv := setup(t, fc)
				srv.SetDefault(fake.Script{Steps: tc.steps})
				var seen int
				resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q"}, answerCounter{&seen})
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if got, want := len(resp.Text), MaxAnswerBytes; got > want || got < want-utf8.UTFMax {
					t.Errorf("len(Text) = %d, want %d (to a rune)", got, want)
				}
				if !utf8.ValidString(resp.Text) || !strings.HasPrefix(oneLine, resp.Text) {
					t.Errorf("Text is not the answer's first bytes cut on a rune boundary")
				}
				if resp.Finish != FinishAnswerCap || !resp.Truncated {
					t.Errorf("Finish, Truncated = %q, %v; want %q, true", resp.Finish, resp.Truncated, FinishAnswerCap)
				}
				if seen != len(resp.Text) {
					t.Errorf("observer saw %d bytes, want %d", seen, len(resp.Text))
				}
				if got := len(srv.Requests()); got != 1 {
					t.Errorf("requests = %d, want 1", got)
				}
			})
		}
	}
}

// answerCounter counts the answer bytes an Observer is given.
type answerCounter struct{ n *int }

func (c answerCounter) Reasoning(consult.Tokens, string) {}
func (c answerCounter) Answer(d string)                  { *c.n += len(d) }

// TestStringCap: strings over the limit are cut outside escapes and on rune boundaries, the
// rest dropped and the quote kept; other bytes pass unchanged, whatever the read sizes.
func TestStringCap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
		cut            bool
	}{
		{"short", `data: {"a":"abc"}` + "\n\n", `data: {"a":"abc"}` + "\n\n", false},
		{"cut", `data: {"a":"abcdefgh","b":"xy"}` + "\n", `data: {"a":"abcd","b":"xy"}` + "\n", true},
		{"escaped quote skipped", `{"a":"abcd\"e\"f","b":1}`, `{"a":"abcd","b":1}`, true},
		{"not inside an escape", `{"a":"abc\u00e9zz"}`, `{"a":"abc\u00e9"}`, true},
		{"not inside a rune", `{"a":"abcé"}`, `{"a":"abcé"}`, false},
		{"rune boundary", `{"a":"abcéé"}`, `{"a":"abcé"}`, true},
		{"newline resets", "\"abcdefg\n\"ab\"", "\"abcd\n\"ab\"", true},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 3, 4096} {
			sc := &stringCap{max: 4}
			var got []byte
			for in := []byte(tc.in); len(in) > 0; {
				chunk := slices.Clone(in[:min(len(in), size)])
				in = in[len(chunk):]
				got = append(got, chunk[:sc.filter(chunk)]...)
			}
			if string(got) != tc.want || sc.cut.Load() != tc.cut {
				t.Errorf("%s (reads of %d): got %q, cut %v; want %q, %v", tc.name, size, got, sc.cut.Load(), tc.want, tc.cut)
			}
		}
	}
}

// chunkReader returns at most n bytes a read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestLongReasoningEventNotAnswerCap: a reasoning string cut in one huge event does not mark
// the answer that follows as cut.
func TestLongReasoningEventNotAnswerCap(t *testing.T) {
	t.Parallel()
	testrun.Large(t, "sends a reasoning event of 11 MiB")
	thought := strings.Repeat("hmm ", maxEventString/4+1<<18)
	for _, fc := range flavors {
		if fc.flavor == fake.OpenAI {
			continue // OpenAI streams no reasoning
		}
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := setup(t, fc)
			srv.Push(fake.Script{Steps: []fake.Step{fake.Think(thought), fake.Text("the answer")}})
			resp, err := p.Stream(context.Background(), Request{Model: fc.model, Prompt: "q", Thinking: Thinking{On: true}}, nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != "the answer" || resp.Finish != "stop" || resp.Truncated {
				t.Errorf("Text, Finish, Truncated = %q, %q, %v; want the whole answer, stop, false", resp.Text, resp.Finish, resp.Truncated)
			}
		})
	}
}
