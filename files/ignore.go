package files

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ignorePattern is one line of an ignore file, with git's semantics. It is matched against
// the exact path only: that a file inside an excluded directory is excluded too follows from
// the walk never entering excluded directories.
//
// (go-git's plumbing/format/gitignore was the first choice, but its patterns also match every
// prefix of a path, so "*" + "!*/" + "!*.go" keeps a/b.txt and "*.txt" + "!docs/" keeps
// docs/a.txt, where git ignores both; its "**" does not backtrack ("a/**/b/c" misses
// a/b/x/b/c) and "foo/**" matches foo itself. Globs here are matched by doublestar, whose
// "*", "?", "[…]", "**" and escapes mean what git's wildmatch means; braces, which git takes
// literally, are escaped.)
type ignorePattern struct {
	domain   string // the ignore file's directory, relative to the work tree top ("" = top)
	glob     string // doublestar pattern, braces escaped
	kind     patternKind
	negate   bool // "!pattern": re-include
	dirOnly  bool // "pattern/": directories only
	anchored bool // contains a "/": matched against the path below domain, else against the name
}

type patternKind uint8

const (
	kindGlob    patternKind = iota
	kindLiteral             // no metacharacter: compare the name
	kindSuffix              // "*.ext" with no other metacharacter: compare the suffix
)

type matchResult uint8

const (
	noMatch matchResult = iota
	exclude
	include
)

// parsePattern parses one ignore-file line (already stripped of comments, blank lines and
// unescaped trailing spaces) found in directory domain; ok is false for a line that matches
// nothing.
func parsePattern(line, domain string) (p ignorePattern, ok bool) {
	p.domain = domain
	if strings.HasPrefix(line, "!") {
		p.negate, line = true, line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if strings.Contains(line, "/") {
		p.anchored = true
		line = strings.TrimPrefix(line, "/")
		// git's "a/**" is everything inside a, not a itself; doublestar's matches a too.
		if strings.HasSuffix(line, "/**") && !strings.HasSuffix(line, `\/**`) {
			line = line[:len(line)-3] + "/*/**"
		}
	}
	if line == "" {
		return p, false
	}
	p.glob = escapeBraces(line)
	switch {
	case p.anchored:
	case !hasMeta(p.glob):
		p.kind, p.glob = kindLiteral, unescape(p.glob)
	case strings.HasPrefix(p.glob, "*") && !hasMeta(p.glob[1:]) && !strings.Contains(p.glob, `\`):
		p.kind, p.glob = kindSuffix, p.glob[1:]
	}
	return p, true
}

// escapeBraces escapes "{" and "}", which doublestar treats as alternatives and git as
// ordinary characters.
func escapeBraces(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteByte(c)
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '{', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// match tests the entry whose path relative to the work tree top is full and whose last
// segment is name.
func (p *ignorePattern) match(full, name string, isDir bool) matchResult {
	if p.dirOnly && !isDir {
		return noMatch
	}
	rel := full
	if p.domain != "" {
		if len(full) <= len(p.domain) || full[len(p.domain)] != '/' || full[:len(p.domain)] != p.domain {
			return noMatch
		}
		rel = full[len(p.domain)+1:]
	}
	var ok bool
	switch {
	case p.anchored:
		ok = doublestar.MatchUnvalidated(p.glob, rel)
	case p.kind == kindLiteral:
		ok = name == p.glob
	case p.kind == kindSuffix:
		ok = strings.HasSuffix(name, p.glob)
	default:
		ok = doublestar.MatchUnvalidated(p.glob, name)
	}
	switch {
	case !ok:
		return noMatch
	case p.negate:
		return include
	}
	return exclude
}

// ignoreRules is the ordered list of patterns that apply in one directory: lowest
// precedence first, so the last pattern that matches a path decides.
type ignoreRules []ignorePattern

// excluded reports whether the entry at full (relative to the work tree top), called name,
// is ignored: the last pattern with an opinion wins.
func (r ignoreRules) excluded(full, name string, isDir bool) bool {
	for i := len(r) - 1; i >= 0; i-- {
		switch r[i].match(full, name, isDir) {
		case exclude:
			return true
		case include:
			return false
		}
	}
	return false
}

// with returns r followed by more, never sharing r's backing array.
func (r ignoreRules) with(more []ignorePattern) ignoreRules {
	if len(more) == 0 {
		return r
	}
	out := make(ignoreRules, 0, len(r)+len(more))
	return append(append(out, r...), more...)
}

// parseIgnore parses the contents of an ignore file found in directory domain (relative to
// the work tree top, "" for the top).
func parseIgnore(data []byte, domain string) []ignorePattern {
	var ps []ignorePattern
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		s := strings.TrimSuffix(string(line), "\r")
		s = trimTrailingSpaces(s)
		if s == "" || s[0] == '#' {
			continue
		}
		if p, ok := parsePattern(s, domain); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// trimTrailingSpaces removes trailing spaces unless escaped with a backslash, as git does.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		// count the backslashes before this space
		n := 0
		for j := end - 2; j >= 0 && s[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			break
		}
		end--
	}
	return s[:end]
}

// readIgnoreFiles returns the patterns of dir's .gitignore then .ignore, for the given domain.
// Missing or unreadable files contribute nothing.
func readIgnoreFiles(dir string, domain string, hasGitignore, hasIgnore bool) []ignorePattern {
	var ps []ignorePattern
	if hasGitignore {
		if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
			ps = append(ps, parseIgnore(data, domain)...)
		}
	}
	if hasIgnore {
		if data, err := os.ReadFile(filepath.Join(dir, ".ignore")); err == nil {
			ps = append(ps, parseIgnore(data, domain)...)
		}
	}
	return ps
}

// readInfoExclude returns the patterns of the info/exclude file of the repository whose
// work tree top is dir, which holds a .git directory or a .git file ("gitdir: <path>", used
// by worktrees and submodules; a worktree shares the exclude file of its main repository).
func readInfoExclude(dir string, domain string) []ignorePattern {
	gitDir := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return nil
	}
	if fi.Mode().IsRegular() {
		data, err := os.ReadFile(gitDir)
		if err != nil {
			return nil
		}
		s := strings.TrimSpace(string(data))
		if !strings.HasPrefix(s, "gitdir:") {
			return nil
		}
		gitDir = strings.TrimSpace(strings.TrimPrefix(s, "gitdir:"))
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(dir, gitDir)
		}
		if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
			common := strings.TrimSpace(string(data))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitDir, common)
			}
			gitDir = common
		}
	} else if !fi.IsDir() {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "info", "exclude"))
	if err != nil {
		return nil
	}
	return parseIgnore(data, domain)
}

// findWorkTree returns the nearest ancestor of dir (dir included) holding a .git entry, or "".
func findWorkTree(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// outerRules returns the rules that apply at root from outside it, and root's path relative
// to the top of its work tree ("" when root is the top or not in a work tree): the prefix of
// every path the rules are matched with.
func outerRules(root string) (ignoreRules, string) {
	top := findWorkTree(root)
	if top == "" {
		return nil, ""
	}
	rules := ignoreRules(readInfoExclude(top, ""))
	if top == root {
		return rules, ""
	}
	rel, err := filepath.Rel(top, root)
	if err != nil {
		return nil, ""
	}
	prefix := filepath.ToSlash(rel)
	dir, domain := top, ""
	for _, name := range strings.Split(prefix, "/") {
		rules = rules.with(readIgnoreFiles(dir, domain, true, true))
		domain = joinRel(domain, name)
		if rules.excluded(domain, name, true) {
			return nil, "" // Root is inside an ignored directory: the caller chose it anyway
		}
		dir = filepath.Join(dir, name)
	}
	return rules, prefix
}

// joinRel joins a slash-separated relative directory ("" for the top) and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
