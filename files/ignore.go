package files

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/consultmcp/consult"

	"github.com/bmatcuk/doublestar/v4"
)

// ignorePattern is one line of an ignore file, with git's semantics. It is matched against
// the exact path only: that a file inside an excluded directory is excluded too follows from
// the walk never entering excluded directories. Globs are matched by doublestar, whose "*",
// "?", "[…]", "**" and escapes mean what git's wildmatch means; braces, which git takes
// literally, are escaped. (The package documentation says why not go-git's gitignore.)
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
		if s[i] == '{' || s[i] == '}' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
		if s[i] == '\\' && i+1 < len(s) { // an escaped character stays as it is
			i++
			b.WriteByte(s[i])
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

// ignoreRules is the patterns that apply in one directory, as a chain of ignore files with
// the highest precedence first: a deeper file before a shallower one, .ignore before the
// .gitignore of the same directory. A directory adds its files in front of its parent's chain
// without copying it, so a deep tree costs memory for its ignore files once, not once per
// level. nil has no patterns.
type ignoreRules = *ruleSet

// ruleSet is one ignore file's patterns in file order, and the rules of lower precedence.
type ruleSet struct {
	ps   []ignorePattern
	next *ruleSet
}

// excluded reports whether the entry at full (relative to the work tree top), called name,
// is ignored: the last pattern of the file of highest precedence with an opinion wins.
func (r *ruleSet) excluded(full, name string, isDir bool) bool {
	for ; r != nil; r = r.next {
		for i := len(r.ps) - 1; i >= 0; i-- {
			switch r.ps[i].match(full, name, isDir) {
			case exclude:
				return true
			case include:
				return false
			}
		}
	}
	return false
}

// with returns the rules of r with more (of higher precedence) in front; r is not changed.
func (r *ruleSet) with(more []ignorePattern) *ruleSet {
	if len(more) == 0 {
		return r
	}
	return &ruleSet{ps: more, next: r}
}

// parseIgnore parses the contents of an ignore file found in directory domain (relative to
// the work tree top, "" for the top), at most limit patterns plus one (a caller can tell the
// limit was passed; limit < 0 means no limit).
func parseIgnore(data []byte, domain string, limit int) []ignorePattern {
	var ps []ignorePattern
	for line := range bytes.Lines(data) {
		if limit >= 0 && len(ps) > limit {
			break
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
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

// Limits on ignore files: they are read from the tree being gathered, which may be anyone's
// clone, so neither one file nor all of them together may take unbounded memory or time.
const (
	// maxIgnoreFile is the largest ignore file applied: real ones are a few kilobytes; git
	// itself refuses pattern files over 100 MiB.
	maxIgnoreFile = 1 << 20
	// maxIgnorePatterns bounds the patterns of one gathering: every entry of the walk is
	// matched against them, and real trees have a few hundred to a few thousand.
	maxIgnorePatterns = 100_000
)

// ErrIgnoreFiles is wrapped by the error Gather returns when the ignore files of the tree
// hold more patterns than it will apply: gathering stops rather than send files that they
// may exclude.
var ErrIgnoreFiles = errors.New("too many ignore patterns")

// ignoreReader reads the ignore files of one gathering: each one opened without blocking,
// taken only if it is a regular file of at most maxIgnoreFile bytes, and the patterns of all
// of them bounded by maxIgnorePatterns. It is owned by the walk.
type ignoreReader struct {
	tree     *tree // opens the ignore files: through the root, for those inside it
	patterns int
	// unused lists the ignore files that were not applied (a symbolic link, not a regular
	// file, unreadable or over the size cap), by the label under which they are reported.
	unused []string
	err    error // set once the pattern cap is passed; the walk then stops
}

// read returns the patterns of the ignore file at path, found in directory domain (relative
// to the work tree top); label names the file in reports. A missing file contributes nothing;
// a file that cannot be used is noted in unused. follow allows a symbolic link as the last
// element: git does not follow one for .gitignore, but does inside .git.
func (ir *ignoreReader) read(path, label, domain string, follow bool) []ignorePattern {
	if ir.err != nil {
		return nil
	}
	data, err := ir.tree.readSmall(path, follow, maxIgnoreFile)
	if err != nil {
		// A link, a fifo or device, an oversized file or one a link leads to out of the
		// root is worth saying; a missing or unreadable one is as if absent, as for git.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			ir.unused = append(ir.unused, label)
		}
		return nil
	}
	ps := parseIgnore(data, domain, maxIgnorePatterns-ir.patterns)
	ir.patterns += len(ps)
	if ir.patterns > maxIgnorePatterns {
		ir.err = fmt.Errorf("%w: the ignore files up to %s hold more than %s patterns; consult stops rather than send files they may exclude (exclude or narrow the directories that hold them)",
			ErrIgnoreFiles, label, consult.Thousands(maxIgnorePatterns))
		return nil
	}
	return ps
}

// readDir returns the patterns of dir's .gitignore then .ignore, for the given domain; rel
// is dir relative to the root being gathered, for labels.
func (ir *ignoreReader) readDir(dir, rel, domain string, hasGitignore, hasIgnore bool) []ignorePattern {
	var ps []ignorePattern
	if hasGitignore {
		ps = append(ps, ir.read(filepath.Join(dir, ".gitignore"), joinRel(rel, ".gitignore"), domain, false)...)
	}
	if hasIgnore {
		ps = append(ps, ir.read(filepath.Join(dir, ".ignore"), joinRel(rel, ".ignore"), domain, false)...)
	}
	return ps
}

// readInfoExclude returns the patterns of the info/exclude file of the repository whose
// work tree top is dir, which holds a .git directory or a .git file ("gitdir: <path>", used
// by worktrees and submodules; a worktree shares the exclude file of its main repository).
func (ir *ignoreReader) readInfoExclude(dir, rel, domain string) []ignorePattern {
	gitDir := filepath.Join(dir, ".git")
	fi, err := ir.tree.lstat(gitDir)
	if err != nil {
		return nil
	}
	if fi.Mode().IsRegular() {
		data, err := ir.tree.readSmall(gitDir, false, maxGitFile)
		if err != nil {
			ir.unused = append(ir.unused, joinRel(rel, ".git"))
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
		if data, err := ir.tree.readSmall(filepath.Join(gitDir, "commondir"), true, maxGitFile); err == nil {
			common := strings.TrimSpace(string(data))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitDir, common)
			}
			gitDir = common
		}
	} else if !fi.IsDir() {
		return nil
	}
	return ir.read(filepath.Join(gitDir, "info", "exclude"), joinRel(rel, ".git/info/exclude"), domain, true)
}

// maxGitFile bounds the one-line files a .git file and commondir are.
const maxGitFile = 4 << 10

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
func (ir *ignoreReader) outerRules(root string) (ignoreRules, string) {
	top := findWorkTree(root)
	if top == "" {
		return nil, ""
	}
	rules := ignoreRules(nil).with(ir.readInfoExclude(top, top, ""))
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
		rules = rules.with(ir.readDir(dir, dir, domain, true, true))
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
