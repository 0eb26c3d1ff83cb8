package background

import (
	"context"
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
