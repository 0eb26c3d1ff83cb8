package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// maxPricesBytes bounds a prices file: a few thousand models.
const maxPricesBytes = 1 << 20

// PricesFile is a user's prices file (--prices FILE), which wins over every other source.
// Its format (JSON; every figure optional but prompt and completion go together):
//
//	{"models": {
//	  "gpt-5.4-mini": {
//	    "prompt": 0.75, "completion": 4.5,      US dollars per million tokens
//	    "reasoning": 4.5,                       when reasoning is billed otherwise than output
//	    "cache_read": 0.075, "cache_write": 0,  a cached prompt token; one written to the cache
//	    "request": 0,                           US dollars per request
//	    "long_over": 272000,                    over this many prompt tokens, "long" applies
//	    "long": {"prompt": 1.5, "completion": 6.75},
//	    "context": 400000, "max_output": 128000, tokens
//	    "expires": "2027-06-30"                 the day after which the model may be removed
//	  }}}
//
// A model is named as calls name it ("gpt-5.4-mini", "gemini-3.5-flash") or by its
// OpenRouter id ("openai/gpt-5.4-mini"). Unknown fields are refused (a misspelt field
// would silently not count), and so are figures no price can have.
type PricesFile struct {
	// Path is the file's path, as figures from it name their source.
	Path   string
	models map[string]Model
}

// filePrice is one model's entry in a prices file.
type filePrice struct {
	Prompt     *float64   `json:"prompt"`
	Completion *float64   `json:"completion"`
	Reasoning  float64    `json:"reasoning"`
	CacheRead  float64    `json:"cache_read"`
	CacheWrite float64    `json:"cache_write"`
	Request    float64    `json:"request"`
	LongOver   int64      `json:"long_over"`
	Long       *filePrice `json:"long"`
	Context    int64      `json:"context"`
	MaxOutput  int64      `json:"max_output"`
	Expires    string     `json:"expires"`
}

// LoadPrices reads and checks a prices file; every mistake is an error naming the file
// and the model.
func LoadPrices(path string) (*PricesFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prices file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPricesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("prices file %s: %w", path, err)
	}
	if len(data) > maxPricesBytes {
		return nil, fmt.Errorf("prices file %s: more than %d bytes", path, maxPricesBytes)
	}
	return parsePrices(path, data)
}

func parsePrices(path string, data []byte) (*PricesFile, error) {
	var doc struct {
		Models map[string]filePrice `json:"models"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("prices file %s: %w (the format is in README, \"What a consultation costs\")", path, err)
	}
	if doc.Models == nil {
		return nil, fmt.Errorf("prices file %s: no \"models\" object", path)
	}
	pf := &PricesFile{Path: path, models: map[string]Model{}}
	source := "the prices file " + path
	for _, id := range slices.Sorted(maps.Keys(doc.Models)) { // in order: a file with several mistakes always names the same one
		m, err := doc.Models[id].model(strings.TrimSpace(id), source)
		if err != nil {
			return nil, fmt.Errorf("prices file %s, model %q: %w", path, id, err)
		}
		pf.models[strings.ToLower(strings.TrimSpace(id))] = m
	}
	return pf, nil
}

// price is the entry's prices; ok is false when it gives none.
func (e filePrice) price() (p providers.Price, ok bool, err error) {
	switch {
	case e.Prompt == nil && e.Completion == nil:
		if e.Reasoning != 0 || e.CacheRead != 0 || e.CacheWrite != 0 || e.Request != 0 || e.LongOver != 0 || e.Long != nil {
			return p, false, errors.New("a price needs \"prompt\" and \"completion\"")
		}
		return p, false, nil
	case e.Prompt == nil || e.Completion == nil:
		return p, false, errors.New("\"prompt\" and \"completion\" go together")
	}
	p = providers.Price{Input: *e.Prompt, Output: *e.Completion, Reasoning: e.Reasoning, CacheRead: e.CacheRead,
		CacheWrite: e.CacheWrite, Request: e.Request}
	if (e.LongOver > 0) != (e.Long != nil) {
		return p, false, errors.New("\"long_over\" and \"long\" go together")
	}
	if e.Long != nil {
		if e.Long.Context != 0 || e.Long.MaxOutput != 0 || e.Long.Expires != "" || e.Long.Long != nil {
			return p, false, errors.New("\"long\" holds prices only")
		}
		long, ok, err := e.Long.price()
		if err != nil || !ok {
			return p, false, fmt.Errorf("long: %w", cmp.Or(err, errors.New("a price needs \"prompt\" and \"completion\"")))
		}
		p.LongOver, p.Long = consult.Tokens(e.LongOver), &long
	}
	return p, true, p.Check()
}

// model is the entry as a Model.
func (e filePrice) model(id, source string) (Model, error) {
	m := Model{ID: id, Source: source}
	p, ok, err := e.price()
	if err != nil {
		return m, err
	}
	if e.Context < 0 || e.MaxOutput < 0 || e.LongOver < 0 {
		return m, errors.New("a token count is negative")
	}
	m.Window, m.MaxOutput = consult.Tokens(e.Context), consult.Tokens(e.MaxOutput)
	if ok {
		p.Source, p.MaxOutput = source, m.MaxOutput
		m.Price = &p
	}
	if e.Expires != "" {
		if m.Expires, err = time.Parse(time.DateOnly, e.Expires); err != nil {
			return m, fmt.Errorf("\"expires\" %q is not a date (YYYY-MM-DD)", e.Expires)
		}
	}
	if !ok && m.Window == 0 && m.MaxOutput == 0 && m.Expires.IsZero() {
		return m, errors.New("the entry says nothing")
	}
	return m, nil
}
