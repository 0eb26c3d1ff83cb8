package background

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/consultmcp/consult/consultation"
)

// longAnswer is an answer of about n bytes in lines, with multi-byte characters in them.
func longAnswer(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("line with an é and a 世 and a 🙂, number ")
		b.WriteString(strings.Repeat("x", i%37))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestPagesCoverTheAnswer: a long answer is kept and returned in pages no longer than the
// page size, each ending on a character boundary, each naming the next; read in order they
// are the answer, byte for byte.
func TestPagesCoverTheAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	answer := longAnswer(120_000)
	res := consultation.Result{Summary: &consultation.Summary{Kind: consultation.KindAnswer, Answer: answer, Model: "m"}, Answer: answer}
	ctx := WithOwner(context.Background(), "me")
	const size = 30_000
	first := r.eng.Paged(ctx, res, size)
	sum := first.Summary
	if sum.ID == "" || sum.Page == nil || sum.Page.TotalChars != len(answer) || len(sum.Answer) > size || sum.Next == nil {
		t.Fatalf("first page: id %q page %+v next %+v, %d bytes", sum.ID, sum.Page, sum.Next, len(sum.Answer))
	}
	if !strings.Contains(first.Text(), "\n---\nmodel m · ") || !strings.Contains(first.Text(), `"offset": `) {
		t.Errorf("first page's text lacks the footer or the way on:\n%s", first.Text()[len(first.Text())-300:])
	}
	got := sum.Answer
	for pages := 1; sum.Next != nil; pages++ {
		if pages > 10 {
			t.Fatal("more pages than a 120,000-byte answer needs")
		}
		off, _ := sum.Next.Arguments[ArgOffset].(int)
		next := r.eng.Page(ctx, sum.ID, off, size)
		if next.IsError {
			t.Fatalf("page at %d: %s", off, next.Text())
		}
		sum = next.Summary
		if sum.Model != "m" || sum.ID != first.Summary.ID || sum.Kind != consultation.KindAnswer {
			t.Errorf("page at %d: model %q, id %q, kind %q: the result's fields are lost", off, sum.Model, sum.ID, sum.Kind)
		}
		if len(sum.Answer) > size || !utf8.ValidString(sum.Answer) || sum.Page.Offset != off {
			t.Fatalf("page at %d: %d bytes, valid UTF-8 %v, offset %d", off, len(sum.Answer), utf8.ValidString(sum.Answer), sum.Page.Offset)
		}
		got += sum.Answer
	}
	if got != answer {
		t.Errorf("the pages make %d bytes, not the %d-byte answer", len(got), len(answer))
	}
	if res := r.eng.Page(WithOwner(context.Background(), "other"), first.Summary.ID, 0, size); !res.IsError || res.Summary.Error.Class != consultation.ClassNotFound {
		t.Errorf("another owner's page: %s", res.Text())
	}
	if res := r.eng.Page(ctx, first.Summary.ID, len(answer)+1, size); !res.IsError || res.Summary.Error.Class != consultation.ClassInvalidArgument {
		t.Errorf("an offset past the end: %s", res.Text())
	}
	short := consultation.Result{Summary: &consultation.Summary{Kind: consultation.KindAnswer, Answer: "short"}}
	if got := r.eng.Paged(ctx, short, size); got.Summary.Page != nil || got.Summary.ID != "" {
		t.Errorf("a short answer was paged: %+v", got.Summary)
	}
}

// TestPageAlwaysMovesOn: whatever the page size, even one smaller than a character, each
// page holds at least one character and names the next offset after its own: a client
// that follows next reads the whole answer and stops.
func TestPageAlwaysMovesOn(t *testing.T) {
	t.Parallel()
	answer := strings.Repeat("🙂世é\nx", 50)
	for _, size := range []int{1, 2, 3, 4, 5, 7, 64} {
		res := consultation.Result{Summary: &consultation.Summary{Kind: consultation.KindAnswer, ID: "id"}}
		var got strings.Builder
		off := 0
		for calls := 0; ; calls++ {
			if calls > len(answer) {
				t.Fatalf("size %d: still paging after %d calls", size, calls)
			}
			p := page(res, answer[off:min(len(answer), off+size+utf8.UTFMax)], off, len(answer), size)
			got.WriteString(p.Summary.Answer)
			if p.Summary.Next == nil {
				break
			}
			next := p.Summary.Page.NextOffset
			if next <= off {
				t.Fatalf("size %d: the page at %d names %d next", size, off, next)
			}
			off = next
		}
		if got.String() != answer {
			t.Errorf("size %d: the pages make %q", size, got.String())
		}
	}
}

// TestPageSizeFloor: a page asked for in a size below MinPageBytes is MinPageBytes long, so
// a long answer never takes thousands of calls.
func TestPageSizeFloor(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := WithOwner(context.Background(), "me")
	answer := strings.Repeat("a line of the answer\n", 2000)
	res := consultation.Result{Summary: &consultation.Summary{Kind: consultation.KindAnswer, Answer: answer, Model: "m"}, Answer: answer}
	first := r.eng.Paged(ctx, res, 1)
	if n := len(first.Summary.Answer); n > MinPageBytes || n < MinPageBytes*4/5 {
		t.Fatalf("first page of size 1: %d bytes, want about %d", n, MinPageBytes)
	}
	next := r.eng.Page(ctx, first.Summary.ID, first.Summary.Page.NextOffset, 1)
	if n := len(next.Summary.Answer); next.IsError || n > MinPageBytes || n < MinPageBytes*4/5 {
		t.Fatalf("next page of size 1: %d bytes: %s", n, next.Text()[:200])
	}
}

// TestLaterPageIsThePage: a page after the first carries the page and the way to the next,
// not the call's figures and warnings again: its structured result and its text say them
// only on the first page.
func TestLaterPageIsThePage(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	answer := longAnswer(20_000)
	const warning = "the timeout is longer than some clients wait"
	res := consultation.Result{Summary: &consultation.Summary{Kind: consultation.KindAnswer, Answer: answer, Model: "m", Files: 3,
		Warnings: []string{warning}, Usage: &consultation.UsageSummary{Input: 10, Output: 20}}, Answer: answer}
	ctx := WithOwner(context.Background(), "me")
	first := r.eng.Paged(ctx, res, MinPageBytes)
	text, sum := consultation.Render(first, consultation.ToolNames)
	if !strings.Contains(text, warning) || len(sum.Warnings) != 1 || sum.Usage == nil {
		t.Fatalf("the first page lacks the call's warning or usage:\n%s", text)
	}
	off, _ := first.Summary.Next.Arguments[ArgOffset].(int)
	text, sum = consultation.Render(r.eng.Page(ctx, first.Summary.ID, off, MinPageBytes), consultation.ToolNames)
	if strings.Contains(text, warning) || strings.Contains(text, "---\nmodel") {
		t.Errorf("a later page's text says the call's warning or footer again:\n%s", text[max(0, len(text)-400):])
	}
	want := consultation.Summary{Kind: consultation.KindAnswer, ID: first.Summary.ID, Answer: sum.Answer, Page: sum.Page, Next: sum.Next}
	if sum.Page == nil || sum.Next == nil || sum.Answer == "" || !reflect.DeepEqual(*sum, want) {
		t.Errorf("a later page's structured result = %+v, want the page and the way on alone", *sum)
	}
}
