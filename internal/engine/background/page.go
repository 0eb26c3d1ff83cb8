package background

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/results"
)

// ArgOffset is consultation_result's argument for the page of a long answer to return.
const ArgOffset = "offset"

// offsetRule is what offset may be: where a page starts, as the previous page said.
var offsetRule = consultation.NumberRule{Arg: ArgOffset,
	Must: "a whole number of bytes, 0 or more, as next.arguments.offset of the previous page gave it",
	OK:   func(v float64) bool { return v >= 0 && v <= 1<<40 && v == math.Trunc(v) }}

// Long answers are returned in pages: clients cut a long tool result (Claude Code moves one
// over about 46 KB of JSON into a file and shows its model a 2 KB preview; Codex keeps about
// 48,000 characters and drops the middle; Gemini CLI keeps the first 8,000 and the last
// 32,000), so an answer longer than a page is kept in the results directory and returned a
// page at a time, each result saying where the next starts.

// DefaultPageBytes is the default page: under every supported client's limit, with room
// for the rest of the result and for JSON escaping.
const DefaultPageBytes = 30_000

// MinPageBytes is the smallest page: a long answer in smaller ones takes too many calls.
// Smaller sizes given to Paged and Page are raised to it.
const MinPageBytes = 4096

// Paged returns res with only the first page of its answer when the answer is longer than
// size bytes (at least MinPageBytes; size <= 0: never), keeping the whole answer in the
// results directory (under the consultation's id, or a new one for a call that had none);
// res itself otherwise. The answer whole is then also the consultation's resource,
// consult://results/{id}. A result returned whole, or the last page of one (Page), is
// marked collected: it may then make room for other owners' results.
func (e *Engine) Paged(ctx context.Context, res consultation.Result, size int) consultation.Result {
	sum := res.Summary
	if size > 0 {
		size = max(size, MinPageBytes)
	}
	if sum == nil || size <= 0 || len(sum.Answer) <= size || sum.Page != nil {
		e.delivered(res) // returned whole
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
	answer := sum.Answer
	return page(res, answer[:min(len(answer), size+utf8.UTFMax)], 0, len(answer), size)
}

// Page is consultation_result with an offset: the page of consultation id's answer that
// starts there, for ctx's owner, at most size bytes (at least MinPageBytes). The record is
// read as a stream (results.Store.LoadPart): a page read holds the page and the record's
// small fields, never the whole answer.
func (e *Engine) Page(ctx context.Context, id string, offset, size int) consultation.Result {
	if id == "" {
		return consultation.FailureOf(&consult.ArgError{Arg: ArgOffset, Rule: "needs id", Fix: "it names where the next page of that consultation's answer starts"})
	}
	if err := checkID(id); err != nil {
		return consultation.FailureOf(err)
	}
	size = max(size, MinPageBytes)
	// A page may need the bytes of the character that straddles its end.
	rec, part, err := e.store.LoadPart(id, max(offset, 0), size+utf8.UTFMax)
	rec, failed := e.judge(id, OwnerFrom(ctx), rec, err)
	switch {
	case failed != nil:
		return *failed
	case rec.Status != results.Done:
		return e.running(rec, "its answer is not complete yet, so it has no pages")
	}
	if offset < 0 || offset > part.Total || (offset < part.Total && !utf8.RuneStart(part.Text[0])) {
		return consultation.FailureOf(&consult.ArgError{Arg: ArgOffset, Value: fmt.Sprint(offset), Rule: fmt.Sprintf("is not where a page of consultation %s starts: its answer has %d bytes; use next.arguments.offset of the previous page, or 0 for the first", id, part.Total)})
	}
	res := page(e.fromRecord(rec), part.Text, offset, part.Total, size)
	if res.Summary.Next == nil {
		e.delivered(res) // its last page
	}
	return res
}

// page is res holding the page of its answer that starts at offset: part holds the
// answer's bytes from offset (at least size+utf8.UTFMax of them, or to the end), total the
// answer's length. The page is at most size bytes, cut at the last line break in its final
// fifth, else at a character boundary; it always holds at least one character, so a reader
// that follows next always moves on. The notes and footer follow the first page only.
func page(res consultation.Result, part string, offset, total, size int) consultation.Result {
	end := min(size, len(part)) // in part
	if offset+end < total {
		if nl := strings.LastIndexByte(part[:end], '\n'); nl >= size*4/5 {
			end = nl + 1
		}
		for end > 0 && !utf8.RuneStart(part[end]) {
			end--
		}
		if end == 0 { // a character longer than the page: it makes the page alone
			_, end = utf8.DecodeRuneInString(part)
		}
	}
	sum := *res.Summary
	sum.Answer = part[:end]
	sum.Page = &consultation.Page{Offset: offset, TotalChars: total}
	sum.Next = nil
	if offset+end < total {
		sum.Page.NextOffset = offset + end
		sum.Next = &consultation.NextStep{Tool: "consultation_result", Arguments: map[string]any{"id": sum.ID, ArgOffset: offset + end}}
	}
	res.Summary = &sum
	return res
}
