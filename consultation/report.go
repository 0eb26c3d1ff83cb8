package consultation

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
)

const (
	// reportTop is how many of the largest files and directories a report lists.
	reportTop = 5
	// maxAnswerReserve is the part of a context window kept free for the answer and any
	// reasoning when deciding whether a request fits: most answers are well under 16k tokens.
	maxAnswerReserve consult.Tokens = 16_000
)

// Entry is one file or directory in a size report.
type Entry struct {
	// Path is relative to the consulted directory; directories end in "/".
	Path string `json:"path"`
	// Files is the number of gathered files under a directory (absent for a file).
	Files int `json:"files,omitempty"`
	// Bytes and Tokens are the sizes of the entry.
	Bytes  consult.Bytes  `json:"bytes"`
	Tokens consult.Tokens `json:"tokens"`
}

// Skipped is one reason files were left out, with how many and a few examples.
type Skipped struct {
	Reason   string   `json:"reason"`
	Count    int      `json:"count"`
	Examples []string `json:"examples"`
}

// Report says what a consultation gathered and how big it is. It is the body of a dry run,
// and of every failure that depends on size (timeouts, a request over the context window).
type Report struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
	Exclude string `json:"exclude_pattern,omitempty"`
	Model   string `json:"model,omitempty"`
	// Files, Bytes and Tokens cover the gathered files' contents.
	Files  int            `json:"files"`
	Bytes  consult.Bytes  `json:"bytes"`
	Tokens consult.Tokens `json:"tokens"`
	// PromptTokens adds the per-file headers and the query: what the model is sent.
	PromptTokens consult.Tokens `json:"prompt_tokens"`
	// Counting says how tokens were counted: the encoding, the same for every model.
	Counting string `json:"token_counting"`
	// ContextWindow is the model's context size, when known.
	ContextWindow consult.Tokens `json:"context_window,omitempty"`
	// Fits says whether PromptTokens plus room for the answer fits ContextWindow (nil: unknown).
	Fits *bool `json:"fits,omitempty"`
	// Refused is set when the provider refused the request as larger than its window, whatever
	// Fits says (the provider counts with its own tokenizer).
	Refused bool `json:"refused_as_too_large,omitempty"`
	// Reserve is the room kept free for the answer when deciding Fits.
	Reserve consult.Tokens `json:"answer_reserve,omitempty"`
	// Cost is the request's price before it is sent, once the model is known.
	Cost         *CostEstimate `json:"cost_estimate,omitempty"`
	LargestFiles []Entry       `json:"largest_files"`
	LargestDirs  []Entry       `json:"largest_directories"`
	Skipped      []Skipped     `json:"skipped"`
	// Withheld lists every file held back because it may hold a secret, with the reason.
	Withheld []files.Withheld `json:"withheld,omitempty"`
	// Redacted lists every file sent with secrets replaced by "[REDACTED <kind>]".
	Redacted []files.Redacted `json:"redacted,omitempty"`
	// Shrink is an exclude_pattern that would bring the request down to the target size,
	// when one is needed; empty otherwise.
	Shrink string `json:"suggested_exclude_pattern,omitempty"`
	// Counted is false when counting did not finish (tokens are then partial).
	Counted bool `json:"counted"`
}

// buildReport sizes the gathered files. tokens[i] belongs to g.Files[i]; it may be shorter
// than g.Files when counting stopped early, and then Counted is false.
func buildReport(req request, g *files.Gathered, tok []consult.Tokens, overhead consult.Tokens) *Report {
	r := &Report{
		Path: req.Path, Pattern: req.Pattern, Exclude: req.Exclude, Model: req.Model.ID,
		LargestFiles: []Entry{}, LargestDirs: []Entry{}, Skipped: []Skipped{},
	}
	if g == nil {
		return r
	}
	r.Files, r.Bytes = len(g.Files), g.Bytes
	r.Counted = len(tok) == len(g.Files)
	for _, s := range g.Skipped {
		r.Skipped = append(r.Skipped, Skipped{Reason: s.Reason.String(), Count: s.Count, Examples: s.Examples})
	}
	r.Withheld = g.Withheld
	for _, f := range g.Files {
		if len(f.Redacted) > 0 {
			r.Redacted = append(r.Redacted, files.Redacted{Path: f.Path, Kinds: f.Redacted})
		}
	}
	entries, dirs, total := sizes(g, tok)
	r.Tokens = total
	r.PromptTokens = r.Tokens + overhead
	r.LargestFiles = top(entries, reportTop)
	dirList := make([]Entry, 0, len(dirs))
	for _, e := range dirs {
		if e.Files < r.Files || len(dirs) == 1 { // a directory holding everything says nothing
			dirList = append(dirList, *e)
		}
	}
	r.LargestDirs = top(dirList, reportTop)
	return r
}

// sizes returns an entry per gathered file, an entry per directory holding any (sizes summed
// over everything below it), and the total tokens. tok[i] is file i's count; missing counts
// are zero.
func sizes(g *files.Gathered, tok []consult.Tokens) (entries []Entry, dirs map[string]*Entry, total consult.Tokens) {
	entries = make([]Entry, len(g.Files))
	dirs = map[string]*Entry{}
	for i, f := range g.Files {
		var t consult.Tokens
		if i < len(tok) {
			t = tok[i]
		}
		total += t
		entries[i] = Entry{Path: f.Path, Bytes: f.Size, Tokens: t}
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			e := dirs[d]
			if e == nil {
				e = &Entry{Path: d + "/"}
				dirs[d] = e
			}
			e.Files++
			e.Bytes += f.Size
			e.Tokens += t
		}
	}
	return entries, dirs, total
}

// top returns the n largest entries by tokens (then bytes, then path), largest first.
func top(list []Entry, n int) []Entry {
	sorted := append([]Entry(nil), list...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Tokens != b.Tokens {
			return a.Tokens > b.Tokens
		}
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Path < b.Path
	})
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	return sorted
}

// answerReserve is the room kept for the answer in a window: maxAnswerReserve, or a
// tenth of a small window.
func answerReserve(window consult.Tokens) consult.Tokens {
	return min(maxAnswerReserve, window/10)
}

// setWindow records the model's context window and whether the request fits it, and
// suggests an exclude pattern when it does not.
func (r *Report) setWindow(window consult.Tokens, g *files.Gathered, tok []consult.Tokens) {
	if window <= 0 {
		return
	}
	r.ContextWindow = window
	r.Reserve = answerReserve(window)
	fits := r.PromptTokens+r.Reserve <= window
	r.Fits = &fits
	if !fits && r.Counted {
		r.Shrink = shrinkPattern(r.Exclude, g, tok, r.PromptTokens+r.Reserve-window)
	}
}

// shrinkPattern picks the largest directories and files whose removal saves at least need
// tokens, never the whole tree, and returns them as one exclude_pattern (merged with the
// caller's own exclude). It returns "" when need is not positive.
func shrinkPattern(existing string, g *files.Gathered, tok []consult.Tokens, need consult.Tokens) string {
	if need <= 0 || g == nil || len(tok) != len(g.Files) {
		return ""
	}
	cands, dirs, total := sizes(g, tok)
	for _, e := range dirs {
		if e.Tokens < total {
			cands = append(cands, *e)
		}
	}
	cands = top(cands, len(cands))
	var picked []string
	var saved consult.Tokens
	for _, c := range cands {
		if saved >= need {
			break
		}
		if saved+c.Tokens >= total || overlaps(picked, c.Path) {
			continue
		}
		picked = append(picked, c.Path)
		saved += c.Tokens
	}
	if len(picked) == 0 || saved < need {
		return ""
	}
	globs := make([]string, 0, len(picked)+1)
	if existing != "" {
		globs = append(globs, existing)
	}
	for _, p := range picked {
		if strings.HasSuffix(p, "/") {
			p += "**"
		}
		globs = append(globs, p)
	}
	if len(globs) == 1 {
		return globs[0]
	}
	return "{" + strings.Join(globs, ",") + "}"
}

// overlaps reports whether p is inside, or contains, one of the picked paths.
func overlaps(picked []string, p string) bool {
	for _, q := range picked {
		if strings.HasPrefix(p, q) && strings.HasSuffix(q, "/") || strings.HasPrefix(q, p) && strings.HasSuffix(p, "/") {
			return true
		}
	}
	return false
}

// sizeTips says how to make a request smaller: the largest directory to exclude, when there
// is one that is not everything, and a narrower pattern.
func sizeTips(rep *Report, n Names) string {
	var tips []string
	if len(rep.LargestDirs) > 0 {
		tips = append(tips, fmt.Sprintf("exclude the largest directories (e.g. %s %q)", n.of(ArgExclude), rep.LargestDirs[0].Path+"**"))
	}
	return strings.Join(append(tips, "narrow "+n.of(ArgPattern)+" to the files the question is about"), ", ")
}

// overCapCount counts the files a report left out for being over a size cap, with an example.
func overCapCount(rep *Report) (int, string) {
	over, example := 0, ""
	for _, sk := range rep.Skipped {
		switch sk.Reason {
		case files.TooLarge.String():
			over += sk.Count
			if len(sk.Examples) > 0 {
				example = sk.Examples[0]
			}
		case files.OverTotal.String():
			over += sk.Count
		}
	}
	return over, example
}

// Text renders the report in the tool's vocabulary.
func (r *Report) Text() string {
	var b strings.Builder
	r.write(&b, ToolNames)
	return b.String()
}

func (r *Report) write(b *strings.Builder, n Names) {
	if r == nil {
		return
	}
	tokens := r.PromptTokens.String() + " tokens"
	switch {
	case !r.Counted && r.Tokens == 0:
		tokens = "tokens not counted yet"
	case !r.Counted:
		tokens = "at least " + tokens + " (counting did not finish)"
	}
	fmt.Fprintf(b, "Gathered %s %s from %s matching %q", consult.Thousands(int64(r.Files)), plural(r.Files, "file", "files"), consult.Printable(r.Path), r.Pattern)
	if r.Exclude != "" {
		fmt.Fprintf(b, " excluding %q", r.Exclude)
	}
	fmt.Fprintf(b, ": %s, %s with headers and query; token count %s.\n", r.Bytes, tokens, r.Counting)
	model := consult.Printable(r.Model)
	switch {
	case r.Refused:
		fmt.Fprintf(b, "Model %s: the provider refused this request as larger than its context window%s; by consult's count it is %s tokens (the provider counts with its own tokenizer).\n",
			model, windowNote(r.ContextWindow), r.PromptTokens)
	case r.ContextWindow > 0 && r.Fits != nil && *r.Fits:
		fmt.Fprintf(b, "Model %s: context window %s tokens; this request uses %s of it and fits with room for the answer.\n",
			model, r.ContextWindow, share(r.PromptTokens, r.ContextWindow))
	case r.ContextWindow > 0 && r.Fits != nil:
		fmt.Fprintf(b, "Model %s: context window %s tokens; this request needs %s plus about %s for the answer, so it does NOT fit.\n",
			model, r.ContextWindow, r.PromptTokens, r.Reserve)
	case r.Model != "":
		fmt.Fprintf(b, "Model %s: context window unknown, so whether the request fits cannot be checked.\n", model)
	}
	r.Cost.write(b)
	if len(r.LargestFiles) > 0 && r.Files > 1 {
		b.WriteString("Largest files:\n")
		for _, e := range r.LargestFiles {
			fmt.Fprintf(b, "  %10s tokens  %9s  %s\n", e.Tokens, e.Bytes, consult.Printable(e.Path))
		}
	}
	if len(r.LargestDirs) > 0 {
		b.WriteString("Largest directories:\n")
		for _, e := range r.LargestDirs {
			fmt.Fprintf(b, "  %10s tokens  %9s  %s (%s %s)\n", e.Tokens, e.Bytes, consult.Printable(e.Path), consult.Thousands(int64(e.Files)), plural(e.Files, "file", "files"))
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("Left out:\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(b, "  %s: %s", s.Reason, consult.Thousands(int64(s.Count)))
			for i, ex := range s.Examples {
				sep := ", "
				if i == 0 {
					sep = " (e.g. "
				}
				b.WriteString(sep + consult.Printable(ex))
			}
			if len(s.Examples) > 0 {
				b.WriteByte(')')
			}
			b.WriteByte('\n')
		}
	}
	writeSecrets(b, r.Withheld, r.Redacted)
	if r.Shrink != "" {
		fmt.Fprintf(b, "To fit, pass %s %q, or narrow %s to the directories the question is about.\n", n.of(ArgExclude), r.Shrink, n.of(ArgPattern))
	}
}

// secretsListed bounds the held-back and redacted files a text lists one by one; the
// structured report lists them all.
const secretsListed = 50

// writeSecrets lists the files held back as possible secrets and the files sent with secrets
// redacted, each with the reason: the user must be able to see what was not sent as it is.
func writeSecrets(b *strings.Builder, withheld []files.Withheld, redacted []files.Redacted) {
	writeListed(b, "Held back, may hold secrets", "withheld", len(withheld), func(i int) (string, string) {
		return withheld[i].Path, withheld[i].Why
	})
	writeListed(b, "Sent with secrets replaced by [REDACTED <kind>]", "redacted", len(redacted), func(i int) (string, string) {
		return redacted[i].Path, strings.Join(redacted[i].Kinds, ", ")
	})
}

// writeListed writes a titled list of n paths with their reasons, at most secretsListed of
// them; field names the structured report's list that holds them all.
func writeListed(b *strings.Builder, title, field string, n int, entry func(int) (path, why string)) {
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%s):\n", title, consult.Thousands(int64(n)))
	for i := range min(n, secretsListed) {
		p, why := entry(i)
		fmt.Fprintf(b, "  %s (%s)\n", consult.Printable(p), consult.Printable(why))
	}
	if n > secretsListed {
		fmt.Fprintf(b, "  … and %s more (all are listed in the structured report's %s)\n", consult.Thousands(int64(n-secretsListed)), field)
	}
}

// windowNote is " (N tokens)" for a known window, "" otherwise.
func windowNote(w consult.Tokens) string {
	if w <= 0 {
		return ""
	}
	return " (" + w.String() + " tokens)"
}

func percent(part, whole consult.Tokens) int64 {
	if whole <= 0 {
		return 0
	}
	return int64((part*100 + whole - 1) / whole)
}

// share is part's share of whole in words: "under 1%" below one percent, else the
// percentage rounded up ("12%").
func share(part, whole consult.Tokens) string {
	if part > 0 && part*100 < whole {
		return "under 1%"
	}
	return strconv.FormatInt(percent(part, whole), 10) + "%"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// tokensWord is "1 reasoning token", "1,200 reasoning tokens".
func tokensWord(n consult.Tokens, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return n.String() + " " + one + "s"
}
