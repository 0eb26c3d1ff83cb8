package consultation

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// causeSamples holds one value of every cause, each field set.
var causeSamples = []Cause{
	said{Detail: "d", Refused: &consult.ArgError{Arg: ArgPath, Value: `"rel"`, Rule: "is not absolute"}},
	gatherFailed{Path: "/p", Detail: "d"},
	overInflight{Need: 10, Limit: 5},
	countFailed{Detail: "d"},
	overCap{},
	noMatch{},
	modelUnavailable{Detail: "d"},
	noProvider{Detail: "d"},
	noModel{},
	tooLarge{},
	capUnpriced{},
	badPrice{Detail: "d"},
	overMaxCost{},
	ledgerUnreadable{Detail: "d"},
	budgetUnpriced{},
	overBudget{Spent: 1.5},
	noMoreAttempts{Phase: "p", Elapsed: time.Second, GaveUp: &GaveUp{Attempts: 3, Max: true}, Failed: []Attempt{{Err: "e", Elapsed: time.Second, Wait: time.Second}}},
	contextLength{Detail: "d", Overflow: &providers.Overflow{Window: 100, Prompt: 120, Completion: 10}},
	outputLimit{Detail: "d"},
	filtered{Detail: "d"},
	dailyQuota{Detail: "d"},
	authRejected{Provider: "openai", Status: 401, Detail: "d", KeyHint: "h"},
	upstreamFailed{Phase: "p", Detail: "d", Failed: []Attempt{{Err: "e"}}},
	refusal{Refusal: "no"},
	answerFiltered{StopDetail: "s"},
	noAnswer{},
	writeFailed{Detail: "d"},
	idleTimeout{stopState: stopState{Phase: "p", Elapsed: time.Second, Reasoning: 5, Attempt: 2, Failed: []Attempt{{Err: "e"}}}, Idle: time.Minute},
	timedOut{stopState: stopState{Phase: "p", NothingGathered: true}, Timeout: time.Minute},
	stoppedBy{stopState: stopState{Phase: "p"}, Headline: "h", Advice: "a"},
	cancelled{Phase: "p", Elapsed: time.Second},
}

// TestCausesRoundTrip: every cause is registered under its own reason, and a result's
// facts come back from their JSON (a record's) as they were, cause and notes.
func TestCausesRoundTrip(t *testing.T) {
	t.Parallel()
	seen := map[Reason]bool{}
	for _, c := range causeSamples {
		if seen[c.reason()] {
			t.Errorf("reason %q twice", c.reason())
		}
		seen[c.reason()] = true
		f := Facts{Cause: c, Lead: "l", PartialWhy: "w", UnknownStop: true, Requested: "r", Written: 3}
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var got Facts
		if err := json.Unmarshal(data, &got); err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("%T: %s came back as %+v (%v), want %+v", c, data, got, err, f)
		}
	}
	if len(seen) != len(causes) {
		t.Errorf("%d causes registered, %d sampled here", len(causes), len(seen))
	}
}

// TestFactsOfEarlierRecords: facts written by the consult before causes had types (one
// flat object, every field at the top) read as the cause they name, with the same words;
// a reason this consult does not know says its detail.
func TestFactsOfEarlierRecords(t *testing.T) {
	t.Parallel()
	rep := &Report{Files: 3, Bytes: 100, PromptTokens: 50_000, Counted: true, Path: "/src", Pattern: "**"}
	for _, tc := range []struct {
		json string
		want []string
	}{
		{`{"reason":"timeout","phase":"waiting for the model","elapsed":3000000000,"timeout":3000000000,"reasoning":12,"partial_why":"cut off at the deadline"}`,
			[]string{"Request timed out after 3 seconds while waiting for the model.", "The model had produced 12 reasoning tokens.", "raise timeout"}},
		{`{"reason":"said","detail":"old words","refused":{"arg":"path","value":"\"rel\"","rule":"is not absolute"}}`,
			[]string{`path "rel" is not absolute`}},
		{`{"reason":"upstream","detail":"openai: overloaded (HTTP 529)","phase":"waiting for the model","elapsed":1000,"partial_why":"cut off by the failure"}`,
			[]string{"The model call failed while waiting for the model: openai: overloaded (HTTP 529)"}},
		{`{"reason":"from_a_newer_consult","detail":"Something new happened."}`,
			[]string{"Something new happened."}},
	} {
		var f Facts
		if err := json.Unmarshal([]byte(tc.json), &f); err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		res := Result{IsError: true, Summary: &Summary{Kind: KindError, Report: rep, Error: &ErrorInfo{Class: ClassTimeout}}, Facts: &f}
		text := res.Text()
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s:\n%s\nwant %q in it", tc.json, text, w)
			}
		}
	}
}
