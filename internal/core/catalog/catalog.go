// Package catalog knows what models cost and how large they are: prices, tiers, prices per
// request, context windows, largest outputs and expiry dates. Its sources, the first that
// knows a model winning field by field: the user's prices file (--prices); OpenRouter's
// public model list (GET https://openrouter.ai/api/v1/models, no key; it lists the
// openai/* and google/* models too), cached on disk with its date and refreshed; and, only
// when no list can be had, a dated fallback table of exact ids. A model no source knows is
// unknown, and named so with the closest ids known.
package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/providers"
)

// DefaultListURL is OpenRouter's public model list.
const DefaultListURL = "https://openrouter.ai/api/v1/models"

// Timing of the model list.
const (
	// RefreshAfter is the age at which the list is fetched again; an older list still
	// answers meanwhile (its date is shown with every figure).
	RefreshAfter = time.Hour
	// WaitAfter is the age of a cached list past which a call waits (bounded) for a fresh
	// one rather than use it at once.
	WaitAfter = 7 * 24 * time.Hour
	// fetchTimeout bounds a fetch of the list, which goes on for the next calls when the
	// call that started it stops waiting.
	fetchTimeout = 15 * time.Second
	// retryAfter is how long after a failed fetch no call waits for another.
	retryAfter = 5 * time.Minute
	// maxListBytes bounds the list (OpenRouter's is about 1 MB).
	maxListBytes = 32 << 20
)

// Model is what the catalog knows of a model.
type Model struct {
	// ID is the model's id where it was found ("openai/gpt-5.4-mini").
	ID string
	// Window is the context window and MaxOutput the largest output, in tokens; 0 unknown.
	Window, MaxOutput consult.Tokens
	// Price is the model's prices; nil when unknown (a router whose price varies, or a
	// source that gives none). BadPrice says why the source's prices were refused.
	Price    *providers.Price
	BadPrice error
	// Expires is the date after which the model may be removed; zero when none is listed.
	Expires time.Time
	// Source names where the figures come from, with their date.
	Source string
	// Unchecked says why nothing could be known of the model: the model list it would be
	// checked against could not be had (the figures are then all unknown).
	Unchecked string
}

// UnknownModelError is a model no source knows.
type UnknownModelError struct {
	Model string
	// Known names the sources asked; Closest are the known ids closest to Model.
	Known   []string
	Closest []string
}

// Error names the model, the sources asked and the closest known ids.
func (e *UnknownModelError) Error() string {
	s := fmt.Sprintf("model %q is not available: no source knows it (not in %s)", e.Model, strings.Join(e.Known, " nor "))
	if len(e.Closest) > 0 {
		s += "; the closest known: " + strings.Join(e.Closest, ", ")
	}
	return s
}

// Cache keeps the model list on disk between runs (the results directory's store).
type Cache interface {
	// ReadModels returns what WriteModels last wrote, and when.
	ReadModels() ([]byte, time.Time, error)
	// WriteModels replaces it.
	WriteModels(data []byte) error
}

// Config configures a Catalog.
type Config struct {
	// Provider is the provider calls go to ("openrouter", "openai", "gemini"): it says how
	// a call's model id maps onto OpenRouter's ("gpt-5.4" is "openai/gpt-5.4").
	Provider string
	// ListURL is where the model list is fetched (GET); empty fetches none.
	ListURL string
	// Offline uses the list of ListURL cached on disk, but never fetches it (a dry run
	// from the command line, which uses no network).
	Offline bool
	// Unlisted, when set, says why no source can tell which models exist (calls go to an
	// endpoint of the user's, --base-url: a proxy or a local model server, whose models no
	// list names): a model the sources do not know is then not refused, only unknown.
	Unlisted string
	// APIKey, when set, is sent with the fetch (a proxy in front of OpenRouter may need
	// it); never set it to another provider's key.
	APIKey string
	// HTTPClient fetches the list; nil uses a plain client.
	HTTPClient *http.Client
	// Cache keeps the list on disk; nil keeps it in memory only.
	Cache Cache
	// Prices is the user's prices file; nil is none.
	Prices *PricesFile
	// Logger receives what went wrong with the list; nil discards.
	Logger *slog.Logger
}

// Catalog answers Lookup from its sources. It is safe for concurrent use.
type Catalog struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	list     *modelList
	loaded   bool // the disk cache was read
	fetching *fetch
	failed   time.Time // the last fetch failed then
}

// modelList is a fetched model list.
type modelList struct {
	models  map[string]Model
	fetched time.Time
}

// fetch is a fetch of the list in flight, shared by whoever waits for it.
type fetch struct {
	done chan struct{}
	list *modelList
	err  error
	// slow: a caller stopped waiting for it; no later caller waits.
	slow atomic.Bool
}

// New returns a catalog over cfg's sources.
func New(cfg Config) *Catalog {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Catalog{cfg: cfg, log: log}
}

// Lookup finds model: the model list (fetched when stale, waiting for it no longer than ctx
// allows, and not at all while a cached one can answer or after a fetch that made a call
// wait failed), else the fallback table when no list can be had, with the prices file
// winning over both. A model none of them knows is an *UnknownModelError, but when a list
// is configured and could not be had, such a model is Unchecked rather than refused.
func (c *Catalog) Lookup(ctx context.Context, model string) (Model, error) {
	return c.resolve(model, c.current(ctx))
}

// Peek is Lookup from what the catalog already holds: it never fetches or waits.
func (c *Catalog) Peek(model string) (Model, error) {
	c.mu.Lock()
	l := c.list
	c.mu.Unlock()
	return c.resolve(model, l)
}

// current returns the list to answer from: nil when there is none.
func (c *Catalog) current(ctx context.Context) *modelList {
	c.mu.Lock()
	if !c.loaded {
		c.loaded = true
		if l := c.readCache(); l != nil {
			c.list = l
		}
	}
	l, now := c.list, time.Now()
	if c.cfg.ListURL == "" || c.cfg.Offline || l != nil && now.Sub(l.fetched) < RefreshAfter {
		c.mu.Unlock()
		return l
	}
	f := c.fetching
	if f == nil && now.Sub(c.failed) >= retryAfter {
		f = c.startFetch()
	}
	c.mu.Unlock()
	if f == nil || f.slow.Load() || l != nil && now.Sub(l.fetched) < WaitAfter {
		return l // a stale list answers while the fresh one comes
	}
	select {
	case <-f.done:
		if f.err == nil {
			return f.list
		}
	case <-ctx.Done():
		f.slow.Store(true)
	}
	return l
}

// startFetch starts fetching the list; c.mu is held.
func (c *Catalog) startFetch() *fetch {
	f := &fetch{done: make(chan struct{})}
	c.fetching = f
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		defer cancel()
		data, err := c.download(ctx)
		var l *modelList
		if err == nil {
			l, err = parseList(data, time.Now())
		}
		c.mu.Lock()
		c.fetching = nil
		if err != nil {
			c.failed = time.Now()
			c.log.Warn("cannot fetch the model list: prices and windows come from the cached list or the fallback table", "url", c.cfg.ListURL, "error", err)
		} else {
			c.list = l
			c.writeCache(data, l.fetched)
		}
		c.mu.Unlock()
		f.list, f.err = l, err
		close(f.done)
	}()
	return f
}

// download GETs the list.
func (c *Catalog) download(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.ListURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", c.cfg.ListURL, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxListBytes+1))
	if err == nil && len(data) > maxListBytes {
		err = fmt.Errorf("the model list is more than %d bytes", maxListBytes)
	}
	return data, err
}

// listEntry is the part of a model in OpenRouter's list that the catalog reads: the fields
// OpenRouter documents for GET /models (https://openrouter.ai/docs/models; Model and
// PublicPricing in github.com/OpenRouterTeam/go-sdk models/components).
type listEntry struct {
	ID            string                      `json:"id"`
	ContextLength *int64                      `json:"context_length"`
	Pricing       providers.OpenRouterPricing `json:"pricing"`
	TopProvider   struct {
		ContextLength       *int64 `json:"context_length"`
		MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	} `json:"top_provider"`
	ExpirationDate *string `json:"expiration_date"`
}

// parseList reads a model list fetched at fetched.
func parseList(data []byte, fetched time.Time) (*modelList, error) {
	var doc struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("cannot decode the model list: %w", err)
	}
	if doc.Data == nil {
		return nil, errors.New("the model list has no \"data\"")
	}
	source := "OpenRouter's model list of " + fetched.UTC().Format("2006-01-02 15:04 UTC")
	l := &modelList{models: make(map[string]Model, len(doc.Data)), fetched: fetched}
	for _, raw := range doc.Data {
		var e listEntry
		if json.Unmarshal(raw, &e) != nil || strings.TrimSpace(e.ID) == "" {
			continue // one odd entry does not spoil the list
		}
		m := Model{ID: e.ID, Source: source}
		m.Window = tokens(e.ContextLength, e.TopProvider.ContextLength)
		m.MaxOutput = tokens(e.TopProvider.MaxCompletionTokens)
		if e.ExpirationDate != nil {
			m.Expires, _ = time.Parse(time.DateOnly, strings.TrimSpace(*e.ExpirationDate))
		}
		p, ok, err := e.Pricing.Price()
		switch {
		case err != nil:
			m.BadPrice = err
		case ok:
			p = withTier(e.ID, p)
			p.Source, p.MaxOutput = source, m.MaxOutput
			m.Price = &p
		}
		l.models[strings.ToLower(e.ID)] = m
	}
	return l, nil
}

// tokens is the first positive count of ns, else 0.
func tokens(ns ...*int64) consult.Tokens {
	for _, n := range ns {
		if n != nil && *n > 0 {
			return consult.Tokens(*n)
		}
	}
	return 0
}

// cacheDoc is the list as the disk cache keeps it: the bytes fetched, from where.
type cacheDoc struct {
	URL  string          `json:"url"`
	List json.RawMessage `json:"list"`
}

// readCache reads the disk cache; nil when there is none for this URL.
func (c *Catalog) readCache() *modelList {
	if c.cfg.Cache == nil || c.cfg.ListURL == "" {
		return nil
	}
	data, at, err := c.cfg.Cache.ReadModels()
	if err != nil {
		return nil
	}
	var doc cacheDoc
	if json.Unmarshal(data, &doc) != nil || doc.URL != c.cfg.ListURL {
		return nil
	}
	l, _ := parseList(doc.List, at)
	return l
}

// writeCache keeps what was fetched on disk.
func (c *Catalog) writeCache(data []byte, at time.Time) {
	if c.cfg.Cache == nil {
		return
	}
	doc, err := json.Marshal(cacheDoc{URL: c.cfg.ListURL, List: data})
	if err == nil {
		err = c.cfg.Cache.WriteModels(doc)
	}
	if err != nil {
		c.log.Warn("cannot cache the model list on disk", "error", err)
	}
}

var (
	// dateSuffix is a dated snapshot's suffix ("gpt-4.1-2025-04-14").
	dateSuffix = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)
	// versionSuffix is a pinned version's suffix ("gemini-2.0-flash-001").
	versionSuffix = regexp.MustCompile(`-\d{3}$`)
)

// vendors are the OpenRouter vendors of a provider's own ids; with no provider named (a
// dry run from the command line), both.
func vendors(provider string) []string {
	switch provider {
	case providers.NameOpenAI:
		return []string{"openai/"}
	case providers.NameGemini:
		return []string{"google/"}
	case "":
		return []string{"openai/", "google/"}
	}
	return nil
}

// candidates are the ids model may be known as, most exact first: as given; with the
// provider's OpenRouter vendor; without a routing variant (":nitro") or a dated or pinned
// snapshot's suffix, which are priced as their model.
func (c *Catalog) candidates(model string) []string {
	id := strings.ToLower(strings.TrimSpace(model))
	id = strings.TrimPrefix(id, "models/")
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	bases := []string{id}
	if base, _, ok := strings.Cut(id, ":"); ok {
		bases = append(bases, base)
	}
	for _, b := range bases {
		if s := dateSuffix.ReplaceAllString(b, ""); s != b {
			bases = append(bases, s)
		} else if s := versionSuffix.ReplaceAllString(b, ""); s != b {
			bases = append(bases, s)
		}
	}
	for _, b := range bases {
		if !strings.Contains(b, "/") {
			for _, v := range vendors(c.cfg.Provider) {
				add(v + b)
			}
		}
		add(b)
	}
	return out
}

// resolve answers model from l (or the fallback table when l is nil) and the prices file.
func (c *Catalog) resolve(model string, l *modelList) (Model, error) {
	models := tableModels()
	from := SourceTable
	if l != nil {
		models, from = l.models, fmt.Sprintf("OpenRouter's model list (of %s)", l.fetched.UTC().Format(time.DateOnly))
	}
	cands := c.candidates(model)
	var m Model
	found := false
	for _, id := range cands {
		if e, ok := models[id]; ok {
			m, found = e, true
			break
		}
	}
	if pf := c.cfg.Prices; pf != nil {
		for _, id := range cands {
			if e, ok := pf.models[id]; ok {
				m, found = merge(m, e), true
				break
			}
		}
	}
	if !found && c.cfg.Unlisted != "" {
		return Model{ID: model, Unchecked: c.cfg.Unlisted}, nil
	}
	if !found && l == nil && c.cfg.ListURL != "" {
		// The list that would say whether the model exists could not be had: the table
		// is no authority on that. Nothing is known of the model; it is not refused.
		why := "the model list (" + c.cfg.ListURL + ") could not be had, and no other source knows it"
		if c.cfg.Offline {
			why = "no model list is cached in the results directory (this fetches none), and no other source knows it"
		}
		return Model{ID: model, Unchecked: why}, nil
	}
	if !found {
		known := []string{from}
		if c.cfg.Prices != nil {
			known = append(known, c.cfg.Prices.Path)
		}
		return Model{}, &UnknownModelError{Model: model, Known: known, Closest: c.closest(model, models)}
	}
	return m, nil
}

// merge is base with what over gives in its place (over is the prices file's entry).
func merge(base, over Model) Model {
	if base.ID == "" {
		return over
	}
	m := base
	m.Source = over.Source + " and " + base.Source
	if over.Window > 0 {
		m.Window = over.Window
	}
	if over.MaxOutput > 0 {
		m.MaxOutput = over.MaxOutput
	}
	if !over.Expires.IsZero() {
		m.Expires = over.Expires
	}
	if over.Price != nil {
		p := *over.Price
		if p.MaxOutput == 0 {
			p.MaxOutput = m.MaxOutput
		}
		m.Price, m.BadPrice = &p, nil
	}
	return m
}

// closest are up to three known ids nearest model (by edit distance), in the provider's
// own naming: a provider's vendor prefix is removed, and other vendors' ids are left out
// for OpenAI and Gemini.
func (c *Catalog) closest(model string, models map[string]Model) []string {
	want := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(model), "models/"))
	var v string // the vendor whose ids alone are offered, without its prefix
	if vs := vendors(c.cfg.Provider); len(vs) == 1 {
		v = vs[0]
	}
	type cand struct {
		id string
		d  int
	}
	var cands []cand
	seen := map[string]bool{}
	consider := func(id string) {
		id = strings.ToLower(id)
		if v != "" {
			rest, ok := strings.CutPrefix(id, v)
			if !ok && strings.Contains(id, "/") {
				return
			}
			id = rest
		}
		if !seen[id] {
			seen[id] = true
			cands = append(cands, cand{id, consult.EditDistance(want, id)})
		}
	}
	for id := range models {
		consider(id)
	}
	if pf := c.cfg.Prices; pf != nil {
		for id := range pf.models {
			consider(id)
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.id, b.id)) })
	var out []string
	for _, cd := range cands[:min(3, len(cands))] {
		out = append(out, cd.id)
	}
	return out
}
