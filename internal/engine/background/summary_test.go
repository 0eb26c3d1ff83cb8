package background

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/engine/results"
)

// TestSavedSummaryReadBackUnchanged: a result read back from the results directory carries
// the summary as it was saved, byte for byte once encoded again, so a client collecting it
// after a restart sees the structured content the running server would have sent.
func TestSavedSummaryReadBackUnchanged(t *testing.T) {
	t.Parallel()
	cost, fits := 0.0123, true
	sum := &consultation.Summary{
		Kind: consultation.KindAnswer, ID: results.NewID(time.Now()), Answer: "it prints hello", OutputFile: "/tmp/a.md", Model: "m",
		Files: 2, Bytes: 2048, PromptTokens: 900,
		Usage:    &consultation.UsageSummary{Input: 900, Output: 10, Reasoning: 5, Cached: 1, CostUSD: &cost},
		Streamed: &consultation.StreamedSummary{Reasoning: 5, Answer: 10}, Truncated: true, TruncatedBy: consultation.TruncatedByOutputLimit,
		StopReason: "length", Phase: "receiving the answer", ElapsedSeconds: 1.5, Attempts: 2,
		Report: &consultation.Report{Path: "/p", Pattern: "**", Files: 2, Fits: &fits, LargestFiles: []consultation.Entry{{Path: "a.go", Bytes: 1, Tokens: 1}},
			Skipped: []consultation.Skipped{{Reason: "binary", Count: 1, Examples: []string{"x.bin"}}}, Counted: true},
		Error:    &consultation.ErrorInfo{Class: consultation.ClassOutputLimit, Message: "cut", HTTPStatus: 200, ProviderCode: "length"},
		Withheld: []files.Withheld{{Path: ".env", Why: "environment file (.env)"}},
		Redacted: []files.Redacted{{Path: "c.go", Kinds: []string{"GitHub token"}}},
	}
	saved, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	res := (&Engine{}).fromRecord(results.Record{ID: sum.ID, Status: results.Done, Summary: saved})
	got, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, saved) {
		t.Errorf("read back:\n%s\nsaved:\n%s", got, saved)
	}
	// A record without a summary (or an unreadable one) gets one made from its fields.
	for _, raw := range []json.RawMessage{nil, json.RawMessage(`{"kind":`)} {
		res := (&Engine{}).fromRecord(results.Record{ID: "x", IsError: true, Model: "m", Answer: "part", Summary: raw})
		if s := res.Summary; s == nil || s.Kind != consultation.KindError || s.ID != "x" || s.Answer != "part" {
			t.Errorf("summary %+v from a record with summary %q", s, raw)
		}
	}
}
