package files

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/consultmcp/consult"
)

// MaxPatternLength is the longest glob accepted, in bytes: real patterns are tens of
// characters; a longer one is a mistake or an attack on the matcher.
const MaxPatternLength = 1024

// ErrBadPattern is wrapped by every error CheckPattern, CheckExclude and Gather return for a
// pattern they refuse. Test for it with errors.Is.
var ErrBadPattern = errors.New("bad pattern")

// maxAlternatives bounds the brace expansion of a pattern. Real patterns have a handful of
// alternatives; a pattern that expands to more is refused rather than expanded without bound.
const maxAlternatives = 10_000

// CheckPattern validates a user-supplied `pattern` argument: it must be non-empty, at most
// MaxPatternLength bytes, a valid doublestar glob, relative, and it may not leave the
// directory (no ".." segment in any brace alternative). The error wraps ErrBadPattern and a
// *consult.ArgError with the value and the rule it breaks.
func CheckPattern(pattern string) error { return checkPattern("pattern", pattern) }

// CheckExclude is CheckPattern for the `exclude_pattern` argument: same rules, and its
// messages name exclude_pattern. The caller skips it when no exclude was given.
func CheckExclude(exclude string) error { return checkPattern("exclude_pattern", exclude) }

// badPattern is the refusal of the pattern given as argument name: value (quoted, or "" when
// not shown), the rule it breaks and the fix.
func badPattern(name, value, rule, fix string) error {
	return fmt.Errorf("%w: %w", ErrBadPattern, &consult.ArgError{Arg: name, Value: value, Rule: rule, Fix: fix})
}

func checkPattern(name, p string) error {
	switch {
	case p == "":
		return badPattern(name, "", "is empty", `give a glob relative to path, such as "**/*.go"`)
	case len(p) > MaxPatternLength:
		return badPattern(name, "", fmt.Sprintf("is %s bytes long", consult.Thousands(int64(len(p)))),
			fmt.Sprintf("the limit is %s bytes", consult.Thousands(MaxPatternLength)))
	case !doublestar.ValidatePattern(p):
		return badPattern(name, fmt.Sprintf("%q", p), "is not a valid glob", `check that every [ and { is closed and that it does not end in a lone \`)
	case isAbsolute(p):
		return badPattern(name, fmt.Sprintf("%q", p), "is absolute", fmt.Sprintf("patterns are relative to path; drop the leading %q", absPrefix(p)))
	case strings.HasPrefix(p, "~"):
		return badPattern(name, fmt.Sprintf("%q", p), `starts with "~"`, `patterns are relative to path and "~" is not expanded`)
	}
	alts, ok := expandBraces(p, maxAlternatives)
	if !ok {
		return badPattern(name, fmt.Sprintf("%q", truncate(p, 80)),
			fmt.Sprintf("expands to more than %s brace alternatives", consult.Thousands(maxAlternatives)), "simplify it")
	}
	for _, a := range alts {
		if isAbsolute(a) {
			return badPattern(name, fmt.Sprintf("%q", p), fmt.Sprintf("has an absolute alternative %q", a), "patterns are relative to path")
		}
		depth, dots := 0, false
		for _, seg := range splitSegments(a) {
			switch unescape(seg) { // `\.\.` is ".." too
			case "..":
				dots, depth = true, depth-1
				if depth < 0 {
					return badPattern(name, fmt.Sprintf("%q", p), "leaves the directory", `patterns are relative to path and may not use ".."`)
				}
			case "", ".", "**": // "**" may match no directory at all
			default:
				depth++
			}
		}
		if dots {
			return badPattern(name, fmt.Sprintf("%q", p), `uses ".."`, `patterns are relative to path and may not use ".."; write the path without it`)
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// isAbsolute reports a Unix absolute path, a Windows drive path ("C:\x", "C:/x", "C:x") or a
// UNC path ("\\server\x").
func isAbsolute(p string) bool { return absPrefix(p) != "" }

func absPrefix(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return "/"
	case strings.HasPrefix(p, `\\`):
		return `\\`
	case len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z'):
		return p[:2]
	}
	return ""
}

// normalize removes leading "./" segments, which doublestar would otherwise try to match
// literally against clean relative paths, and turns a trailing "/" (a directory, which
// would match no file) into "/**".
func normalize(p string) string {
	for strings.HasPrefix(p, "./") {
		p = strings.TrimLeft(p[2:], "/")
	}
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(p, `\/`) {
		p += "**"
	}
	return cmp.Or(p, "**")
}

// glob is a validated doublestar pattern with the facts the walk needs precomputed.
type glob struct {
	raw string
	// alts holds each brace alternative split into path segments; nil when the pattern
	// expanded to too many alternatives, in which case every directory may hold a match.
	alts [][]string
	// literals are the segments of any alternative that contain no glob metacharacter,
	// unescaped: the directory names the pattern spells out.
	literals map[string]bool
	// subtrees are the alternatives ending in "/**" with that suffix removed: a directory
	// matching one of them has its whole subtree matched. all is set for a bare "**".
	subtrees []string
	all      bool
	// name is set for "**/" and one segment ("**/*.go", the usual pattern): a path matches
	// when its last segment does. suffix is set when that segment is "*" and a literal: a
	// path matches when it ends in the literal. Both give what matching the whole would.
	name, suffix string
}

func compileGlob(p string) *glob {
	g := &glob{raw: p, literals: map[string]bool{}}
	if name, ok := strings.CutPrefix(p, "**/"); ok && !strings.Contains(name, "/") && !strings.Contains(name, "**") {
		g.name = name
		if lit, ok := strings.CutPrefix(name, "*"); ok && !hasMeta(lit) && !strings.Contains(lit, `\`) {
			g.suffix = lit
		}
	}
	alts, ok := expandBraces(p, maxAlternatives)
	if !ok {
		return g
	}
	for _, a := range alts {
		segs := splitSegments(a)
		g.alts = append(g.alts, segs)
		for _, s := range segs {
			if s != "" && !hasMeta(s) {
				g.literals[unescape(s)] = true
			}
		}
		switch {
		case a == "**":
			g.all = true
		case strings.HasSuffix(a, "/**"):
			g.subtrees = append(g.subtrees, a[:len(a)-3])
		}
	}
	return g
}

// match reports whether the slash-separated relative path rel matches the whole pattern.
func (g *glob) match(rel string) bool {
	switch {
	case g.suffix != "":
		return strings.HasSuffix(rel, g.suffix)
	case g.name != "":
		return doublestar.MatchUnvalidated(g.name, rel[strings.LastIndexByte(rel, '/')+1:])
	}
	return doublestar.MatchUnvalidated(g.raw, rel)
}

// couldContain reports whether a file somewhere below the directory whose path segments are
// dir could match the pattern. It errs on the side of true.
func (g *glob) couldContain(dir []string) bool {
	if g.alts == nil {
		return true
	}
	for _, segs := range g.alts {
		if altCouldContain(segs, dir) {
			return true
		}
	}
	return false
}

func altCouldContain(segs, dir []string) bool {
	for i, d := range dir {
		if i >= len(segs) {
			return false
		}
		s := segs[i]
		if s == "**" {
			return true
		}
		if !doublestar.MatchUnvalidated(s, d) {
			return false
		}
	}
	return len(segs) > len(dir)
}

// coversSubtree reports whether every path below directory rel matches the pattern (used for
// the exclude pattern, to prune instead of walking).
func (g *glob) coversSubtree(rel string) bool {
	if g.all {
		return true
	}
	for _, s := range g.subtrees {
		if doublestar.MatchUnvalidated(s, rel) {
			return true
		}
	}
	return false
}

// expandBraces returns the brace alternatives of p ("a/{b,c/d}" -> "a/b", "a/c/d"), or false
// when there would be more than max of them. Escapes and character classes are respected.
func expandBraces(p string, max int) ([]string, bool) {
	var out []string
	var rec func(s string) bool
	rec = func(s string) bool {
		open, end, commas := findGroup(s)
		if open < 0 {
			if len(out) >= max {
				return false
			}
			out = append(out, s)
			return true
		}
		pre, post := s[:open], s[end+1:]
		start := open + 1
		for _, c := range append(commas, end) {
			if !rec(pre + s[start:c] + post) {
				return false
			}
			start = c + 1
		}
		return true
	}
	ok := rec(p)
	return out, ok
}

// findGroup finds the first top-level brace group of s: the index of "{", of its matching
// "}", and of the commas directly inside it. open is -1 when there is none.
func findGroup(s string) (open, end int, commas []int) {
	open, depth := -1, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			i = skipClass(s, i)
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth == 0 {
				return open, i, commas
			}
		}
	}
	return -1, -1, nil
}

// skipClass returns the index of the "]" closing the class that starts at s[i] == '['.
func skipClass(s string, i int) int {
	j := i + 1
	if j < len(s) && (s[j] == '^' || s[j] == '!') {
		j++
	}
	for ; j < len(s); j++ { // as doublestar reads it: "[]" is an (invalid) empty class
		switch s[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return len(s)
}

// splitSegments splits a brace-free pattern at the slashes outside character classes.
func splitSegments(p string) []string {
	var segs []string
	start := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) && p[i+1] == '/' { // doublestar reads an escaped "/" as a separator
				segs = append(segs, p[start:i])
				start = i + 2
			}
			i++
		case '[':
			i = skipClass(p, i)
		case '/':
			segs = append(segs, p[start:i])
			start = i + 1
		}
	}
	return append(segs, p[start:])
}

func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[', '{':
			return true
		}
	}
	return false
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// splitBase returns the literal directory prefix of p as clean path segments (none for ".").
func splitBase(p string) []string {
	base, _ := doublestar.SplitPattern(p)
	base = path.Clean(base)
	if base == "." || base == "/" {
		return nil
	}
	return strings.Split(base, "/")
}
