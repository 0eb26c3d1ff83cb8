package consultation

import (
	"context"
	"fmt"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/providers"
)

// Model is what a consultation needs of a provider: stream one answer.
// providers.Provider satisfies it.
type Model interface {
	// Stream sends req once and blocks until the answer is complete, ctx ends or the
	// upstream fails; the returned response is never nil and holds what arrived.
	Stream(ctx context.Context, req providers.Request, obs providers.Observer) (*providers.Response, error)
}

var _ Model = providers.Provider(nil)

// systemPrompt frames every consultation.
const systemPrompt = "You are a senior software engineer answering a question about the files below, which are the only context you have. Answer from them, cite file paths when you refer to code, and say so when the files do not contain the answer."

// Catalog knows what models cost and how large they are (internal/core/catalog).
type Catalog interface {
	// Lookup finds model, bounded by ctx; a model no source knows is a
	// *catalog.UnknownModelError.
	Lookup(ctx context.Context, model string) (catalog.Model, error)
	// Peek is Lookup from what the catalog holds already: it never waits.
	Peek(model string) (catalog.Model, error)
}

func partialText(resp *providers.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Text
}

// knownStops are the normalised stop reasons consult understands; any other is named in
// the result.
var knownStops = map[string]bool{"stop": true, "length": true, "content_filter": true, providers.FinishAnswerCap: true}

// lookupModel finds model id in cat, once, within a bounded part of the call's time: its
// window, prices, largest output and expiry, and the warnings a call with it carries (a model
// nothing is known of, one listed to be removed: the server's default model is named as the
// one to choose instead). A model no source knows is an error, before anything is sent.
func lookupModel(ctx context.Context, cat Catalog, id, defaultModel string) (m catalog.Model, warnings []string, err error) {
	if cat == nil || id == "" {
		return m, nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, budgetOf(ctx).lookup())
	defer cancel()
	if m, err = cat.Lookup(lctx, id); err != nil {
		return m, nil, err
	}
	if m.Unchecked != "" {
		warnings = append(warnings, fmt.Sprintf("nothing is known of model %s: %s; its window and price are unknown, so no cap can be checked", consult.Printable(id), m.Unchecked))
	}
	if !m.Expires.IsZero() {
		when := "is listed to be removed after"
		if time.Now().After(m.Expires.AddDate(0, 0, 1)) {
			when = "was listed to be removed after"
		}
		advice := "choose a current model before then"
		if d := defaultModel; d != "" && d != id {
			advice += " (the server's default is " + consult.Printable(d) + ")"
		}
		warnings = append(warnings, fmt.Sprintf("model %s %s %s (%s): %s", consult.Printable(id), when, m.Expires.Format(time.DateOnly), m.Source, advice))
	}
	return m, warnings, nil
}

// modelRequest builds the request of a call to m once, for every attempt to send: its files
// fs and its question, under an output limit, with the cache key and marks (cacheKey, a
// breakpoint, longCache) an encoding provider sends. A provider that encodes its own bodies
// ([providers.Encoder]) gets the files laid out straight into the one body it sends, so the
// prompt exists once, in the body; any other model gets the laid-out prompt. Either way the
// files' contents are dropped here: the request holds them now, and reports need only paths
// and sizes.
func modelRequest(m Model, req request, fs []files.File, limit consult.Tokens, cacheKey string, breakpoint, longCache bool) (providers.Request, error) {
	preq := providers.Request{
		Model:       req.Model.ID,
		Thinking:    providers.Thinking{On: req.Model.Thinking, Budget: req.Model.Budget},
		System:      systemPrompt,
		OutputLimit: limit,
	}
	defer func() {
		for i := range fs {
			fs[i].Content = nil
		}
	}()
	enc, ok := m.(providers.Encoder)
	if !ok {
		preq.Prompt = files.Layout(fs, req.Query)
		return preq, nil
	}
	// The files first and the question last, apart: the same files give the same prefix,
	// which the provider's prompt cache can hold, and the key that names them.
	prompt := files.NewPrompt(fs, req.Query)
	preq.Text, preq.Question, preq.CacheKey = prompt.Prefix, prompt.Question(), cacheKey
	preq.CacheBreakpoint, preq.LongCache = breakpoint, longCache
	body, err := enc.Encode(preq)
	preq.Text, preq.Question, preq.Body = nil, "", body
	return preq, err
}
