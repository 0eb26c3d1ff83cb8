package background

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/results"
)

// ArgOffset is consultation_result's argument for the page of a long answer to return.
const ArgOffset = "offset"

// Long answers are returned in pages: clients cut a long tool result (Claude Code moves one
// over about 46 KB of JSON into a file and shows its model a 2 KB preview; Codex keeps about
// 48,000 characters and drops the middle; Gemini CLI keeps the first 8,000 and the last
// 32,000), so an answer longer than a page is kept in the results directory and returned a
// page at a time, each result saying where the next starts.

// DefaultPageBytes is the default page: under every supported client's limit, with room
// for the rest of the result and for JSON escaping.
const DefaultPageBytes = 30_000

// Paged returns res with only the first page of its answer when the answer is longer than
// size bytes, keeping the whole answer in the results directory (under the consultation's
// id, or a new one for a call that had none); res itself otherwise. The answer whole is
// then also the consultation's resource, consult://results/{id}.
func (e *Engine) Paged(ctx context.Context, res consultation.Result, size int) consultation.Result {
	sum := res.Summary
	if sum == nil || size <= 0 || len(sum.Answer) <= size || sum.Page != nil {
		return res
	}
	if sum.ID == "" {
		in := consultation.Request{Model: sum.Model}
		if r := sum.Report; r != nil {
			in.Path, in.Pattern, in.Exclude = r.Path, r.Pattern, r.Exclude
		}
		id, err := e.keep(ctx, in, res, nil, time.Now())
		if err != nil {
			e.logger.Warn("cannot keep a long answer for paging; it is returned whole", "error", err)
			return res
		}
		sum.ID = id
	}
	return page(res, sum.Answer, 0, size)
}

// Page is consultation_result with an offset: the page of consultation id's answer that
// starts there, for ctx's owner.
func (e *Engine) Page(ctx context.Context, id string, offset, size int) consultation.Result {
	if err := checkID(id); err != nil {
		return consultation.FailureOf(err)
	}
	rec, failed := e.load(id, OwnerFrom(ctx))
	switch {
	case failed != nil:
		return *failed
	case rec.Status != results.Done:
		return e.running(rec, "its answer is not complete yet, so it has no pages")
	}
	res := e.fromRecord(rec)
	answer := rec.Answer
	if offset > len(answer) || (offset > 0 && offset < len(answer) && !utf8.RuneStart(answer[offset])) {
		return consultation.FailureOf(consultation.NewArgError(ArgOffset, "offset %d is not where a page of consultation %s starts: its answer has %d bytes; use next.arguments.offset of the previous page, or 0 for the first", offset, id, len(answer)))
	}
	return page(res, answer, offset, size)
}

// page is res holding the part of answer from offset, at most size bytes, cut at the last
// line break in its final fifth, else at a character boundary; the notes and footer follow
// the first page only.
func page(res consultation.Result, answer string, offset, size int) consultation.Result {
	end := min(offset+size, len(answer))
	if end < len(answer) {
		if nl := strings.LastIndexByte(answer[offset:end], '\n'); nl >= size*4/5 {
			end = offset + nl + 1
		}
		for end > offset && !utf8.RuneStart(answer[end]) {
			end--
		}
	}
	sum := *res.Summary
	sum.Answer = answer[offset:end]
	sum.Page = &consultation.Page{Offset: offset, TotalChars: len(answer)}
	sum.Next = nil
	if end < len(answer) {
		sum.Page.NextOffset = end
		sum.Next = &consultation.NextStep{Tool: "consultation_result", Arguments: map[string]any{"id": sum.ID, ArgOffset: end}}
	}
	res.Summary = &sum
	return res
}
