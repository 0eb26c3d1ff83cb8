package background

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/testkit/fake"
)

// failMode is r's request without on_timeout "continue".
func (r *rig) failMode() consultation.Request {
	in := r.request(10 * time.Second)
	in.OnTimeout = ""
	return in
}

// TestFollowUp: an answer in the call is kept with an id; a follow-up of it is asked about
// the same files, sent first and byte for byte as before (so a provider's cache can serve
// them), with the earlier question and answer before the new question; a file changed since
// is named; the follow-up's own record carries the thread for the next one.
func TestFollowUp(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := WithOwner(context.Background(), "me")
	r.up.Push(fake.Answer("main prints hello"), fake.Answer("it prints it once"), fake.Answer("now twice"))
	first := r.eng.Consult(ctx, r.failMode(), nil)
	id := first.Summary.ID
	if first.IsError || id == "" {
		t.Fatalf("first: id %q: %s", id, first.Text())
	}
	if !strings.Contains(first.Text(), "id "+id+": pass it as follow_up_of") {
		t.Errorf("the text (all Gemini CLI's model reads) does not give the id:\n%s", first.Text())
	}
	in := r.failMode()
	in.Query = "How many times?"
	in.FollowUpOf = id
	second := r.eng.Consult(ctx, in, nil)
	if second.IsError || second.Summary.FollowUpOf != id || second.Summary.ID == "" || second.Summary.ID == id {
		t.Fatalf("follow-up: %+v: %s", second.Summary, second.Text())
	}
	if len(second.Summary.Warnings) != 0 {
		t.Errorf("no file changed, but: %q", second.Summary.Warnings)
	}
	reqs := r.up.Requests()
	var bodies [][]byte
	for _, q := range reqs {
		if strings.Contains(q.Path, "chat/completions") {
			bodies = append(bodies, q.Body)
		}
	}
	if len(bodies) != 2 {
		t.Fatalf("%d model requests, want 2", len(bodies))
	}
	cut := bytes.Index(bodies[0], []byte("What does main do?"))
	if cut < 0 || !bytes.HasPrefix(bodies[1], bodies[0][:cut]) {
		t.Error("the follow-up's request does not begin with the first's bytes up to its question")
	}
	for _, want := range []string{"What does main do?", "main prints hello", "How many times?"} {
		if !bytes.Contains(bodies[1][cut:], []byte(want)) {
			t.Errorf("the follow-up's question part lacks %q", want)
		}
	}
	// A file changed since: named in the next follow-up, which carries both earlier turns.
	if err := os.WriteFile(filepath.Join(r.tree, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\"); println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in.Query, in.FollowUpOf = "And now?", second.Summary.ID
	third := r.eng.Consult(ctx, in, nil)
	if w := third.Summary.Warnings; len(w) != 1 || !strings.Contains(w[0], "main.go (changed)") {
		t.Errorf("warnings %q, want main.go named as changed", w)
	}
	if last := r.up.Requests()[len(r.up.Requests())-1]; !bytes.Contains(last.Body, []byte("main prints hello")) || !bytes.Contains(last.Body, []byte("it prints it once")) {
		t.Error("the second follow-up does not carry both earlier answers")
	}
}

// TestFollowUpRefused: a follow-up of other files, of another owner's consultation or of an
// unknown id is refused before anything is sent.
func TestFollowUpRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.up.Push(fake.Answer("an answer"))
	first := r.eng.Consult(WithOwner(context.Background(), "me"), r.failMode(), nil)
	for name, tc := range map[string]struct {
		owner string
		edit  func(*consultation.Request)
		class consultation.ErrorClass
	}{
		"other pattern":   {"me", func(in *consultation.Request) { in.Pattern = "*.go" }, consultation.ClassInvalidArgument},
		"other owner":     {"you", func(*consultation.Request) {}, consultation.ClassNotFound},
		"not an id":       {"me", func(in *consultation.Request) { in.FollowUpOf = "../x" }, consultation.ClassInvalidArgument},
		"continue, other": {"you", func(in *consultation.Request) { in.OnTimeout = consultation.OnTimeoutContinue }, consultation.ClassNotFound},
	} {
		in := r.failMode()
		in.FollowUpOf = first.Summary.ID
		tc.edit(&in)
		ctx := WithOwner(context.Background(), tc.owner)
		var res consultation.Result
		if in.OnTimeout == consultation.OnTimeoutContinue {
			res = r.eng.Start(ctx, in, nil)
		} else {
			res = r.eng.Consult(ctx, in, nil)
		}
		if !res.IsError || res.Summary.Error.Class != tc.class {
			t.Errorf("%s: got %s", name, res.Text())
		}
	}
	if n := r.up.Count("/chat/completions"); n != 1 {
		t.Errorf("%d model requests, want only the first", n)
	}
}

// TestFollowUpInBackground: a continue-mode follow-up runs in a worker, which prepares it
// the same way; its record keeps the thread.
func TestFollowUpInBackground(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := WithOwner(context.Background(), "me")
	r.up.Push(fake.Answer("first answer"), fake.Answer("second answer"))
	first := r.eng.Consult(ctx, r.failMode(), nil)
	in := r.request(10 * time.Second)
	in.Query, in.FollowUpOf = "More?", first.Summary.ID
	res := r.eng.Start(ctx, in, nil)
	if res.IsError || !strings.Contains(res.Text(), "second answer") || res.Summary.FollowUpOf != first.Summary.ID {
		t.Fatalf("got %+v: %s", res.Summary, res.Text())
	}
	r.wg.Wait()
	rec, err := r.store.Load(res.Summary.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Thread) != 1 || rec.Thread[0].Answer != "first answer" || len(rec.Digests) != 1 {
		t.Errorf("record thread %+v, digests %v", rec.Thread, rec.Digests)
	}
}

// TestFollowUpEscapesChangedNames: a follow-up names the files changed since with every
// control character escaped, in its text and its structured warnings alike: a file named
// with an OSC 52 sequence (which writes the terminal's clipboard), a C1 CSI or a
// right-to-left override reaches neither the model nor a terminal raw.
func TestFollowUpEscapesChangedNames(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := WithOwner(context.Background(), "me")
	r.up.Push(fake.Answer("one"), fake.Answer("two"))
	first := r.eng.Consult(ctx, r.failMode(), nil)
	if first.IsError {
		t.Fatal(first.Text())
	}
	hostile := []string{
		"osc\x1b]52;c;cm0gLXJmIH4=\x07.go", // OSC 52: set the clipboard
		"csi\u009b31m.go",                  // C1 CSI
		"bidi\u202eog.txt.go",              // right-to-left override
	}
	for _, name := range hostile {
		if err := os.WriteFile(filepath.Join(r.tree, name), []byte("package main\n"), 0o644); err != nil {
			t.Skipf("this file system refuses the name %q: %v", name, err)
		}
	}
	in := r.failMode()
	in.Query, in.FollowUpOf = "And now?", first.Summary.ID
	res := r.eng.Consult(ctx, in, nil)
	if res.IsError {
		t.Fatal(res.Text())
	}
	text, sum := consultation.Render(res, consultation.ToolNames)
	if len(sum.Warnings) != 1 {
		t.Fatalf("warnings %q, want the one naming the new files", sum.Warnings)
	}
	for where, s := range map[string]string{"text": text, "structured warning": sum.Warnings[0]} {
		for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if strings.Contains(s, raw) {
				t.Errorf("the %s holds %q raw: %q", where, raw, s)
			}
		}
		for _, want := range []string{`osc\x1b]52;c;cm0gLXJmIH4=\x07.go (new)`, `csi\u009b31m.go (new)`, `bidi\u202eog.txt.go (new)`} {
			if !strings.Contains(s, want) {
				t.Errorf("the %s does not name %s:\n%s", where, want, s)
			}
		}
	}
}
