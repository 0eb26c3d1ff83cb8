package providers

import (
	"context"
	"errors"
	"log/slog"
	"testing"
)

// TestStreamRunEnd checks the finishing code both stream loops share: which error an
// unfinished stream gets, in order (the context's end, the provider's own reason, a
// transport error), that a finished one succeeds, and that a stream's own error becomes
// an *Error (Canceled once the context ended, else Transport) unless it is one already.
func TestStreamRunEnd(t *testing.T) {
	t.Parallel()
	blockedErr := &Error{Provider: "p", Kind: ContentFiltered, Message: "the prompt was blocked"}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		finished   bool
		streamErr  error
		unfinished func() error
		partial    bool
		want       Kind // "" for success
		wantPart   bool
	}{
		{"finished", context.Background(), true, nil, nil, false, "", false},
		{"finished, context ended after", ended, true, nil, nil, false, "", false},
		{"cut short", context.Background(), false, nil, nil, true, Transport, true},
		{"cut short, provider's reason", context.Background(), false, nil, func() error { return blockedErr }, false, ContentFiltered, false},
		{"provider has no reason", context.Background(), false, nil, func() error { return nil }, false, Transport, false},
		{"context ended first", ended, false, nil, func() error { return blockedErr }, true, Canceled, true},
		{"stream error", context.Background(), false, errors.New("boom"), func() error { return blockedErr }, false, Transport, false},
		{"stream error after part of the answer", context.Background(), true, errors.New("boom"), nil, true, Transport, true},
		{"stream error, context ended", ended, true, errors.New("boom"), nil, true, Canceled, true},
		{"provider's error", ended, false, blockedErr, nil, false, ContentFiltered, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startRun("p", &Body{req: Request{Model: "m"}, text: &escapedText{}}, redactor{}, slog.New(slog.DiscardHandler))
			r.finished = tt.finished
			if tt.partial {
				r.text.add("part")
			}
			resp := &Response{}
			got, err := r.end(tt.ctx, resp, tt.streamErr, tt.unfinished)
			if got != resp {
				t.Error("end returned another response")
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Kind != tt.want || e.Partial != tt.wantPart {
				t.Errorf("err = %v (kind %q, partial %v), want kind %q, partial %v", err, e.Kind, e.Partial, tt.want, tt.wantPart)
			}
		})
	}
}

// TestStreamRunSettle checks the answer cap finishes the answer, and a reported reasoning
// count of zero gives way to the estimate from the streamed text.
func TestStreamRunSettle(t *testing.T) {
	t.Parallel()
	r := startRun("p", &Body{req: Request{Model: "m"}, text: &escapedText{}}, redactor{}, slog.New(slog.DiscardHandler))
	r.meter.add("twelve chars") // 12 characters: 3 tokens estimated
	r.text.add("answer")
	r.capped = true
	resp := &Response{}
	r.settle(resp, &Usage{Input: 10, Output: 2})
	if resp.Text != "answer" {
		t.Errorf("Text = %q, want %q", resp.Text, "answer")
	}
	if !r.finished || resp.Finish != FinishAnswerCap || !resp.Truncated {
		t.Errorf("finished %v, Finish %q, Truncated %v; want true, %q, true", r.finished, resp.Finish, resp.Truncated, FinishAnswerCap)
	}
	if got, want := resp.Usage, (Usage{Input: 10, Output: 2, Reasoning: 3}); got != want {
		t.Errorf("Usage = %+v, want %+v", got, want)
	}
}
