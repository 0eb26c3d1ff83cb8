package files

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/consultmcp/consult"
)

// Options says what to gather.
type Options struct {
	// Root is the absolute directory to gather from; the caller has checked that it exists.
	Root string
	// Pattern is a doublestar glob relative to Root, slash-separated, braces allowed:
	// "**/*.{go,md}". A leading "./" is ignored; a trailing "/" means everything below
	// ("src/" is "src/**").
	Pattern string
	// Exclude is an optional doublestar glob, relative to Root, of files to leave out.
	Exclude string
	// MaxFileBytes is the per-file cap; 0 means consult.MaxFileBytes.
	MaxFileBytes consult.Bytes
	// MaxTotalBytes is the cap on all gathered bytes; 0 means consult.MaxTotalBytes.
	MaxTotalBytes consult.Bytes
	// MaxFiles is the cap on the number of gathered files; 0 means consult.MaxFiles.
	MaxFiles int
	// Kept, when set, is called with the content of each file kept, in path order, as it
	// is kept: a consultation counts its tokens while the rest are gathered. It must not
	// block, nor modify the content.
	Kept func(content []byte)
	// Digests asks for each file's SHA-256 (File.Digest). With it, a content this process
	// has scanned for secrets before and found clean is not scanned again: the digest
	// names it.
	Digests bool
	// Opened is Root already opened, e.g. beneath the directory the server is allowed to
	// read; when nil, Gather opens Root itself with os.OpenRoot and closes it on return.
	// Every directory and file inside Root is read through it, so that the kernel keeps
	// the reads inside. Gather does not close it.
	Opened *os.Root
}

// File is one gathered file.
type File struct {
	// Path is slash-separated and relative to Root.
	Path string
	// Size is len(Content).
	Size consult.Bytes
	// Content is the whole file, with any high-confidence secret replaced by
	// "[REDACTED <kind>]".
	Content []byte
	// Redacted names the kinds of secret replaced in Content, sorted; nil when none.
	Redacted []string
	// Digest is the SHA-256 of Content, with Options.Digests; zero without.
	Digest [sha256.Size]byte
}

// Redacted is one file sent with secrets replaced.
type Redacted struct {
	// Path is slash-separated and relative to Root.
	Path string `json:"path"`
	// Kinds names what was replaced, e.g. "GitHub token".
	Kinds []string `json:"kinds"`
}

// Gathered is the result of Gather.
type Gathered struct {
	// Files are the gathered files, sorted by Path (byte order).
	Files []File
	// Bytes is the sum of the sizes of Files.
	Bytes consult.Bytes
	// Skipped lists, in Reason order, the reasons something matching the pattern was left
	// out, with counts and examples; reasons with nothing left out are absent.
	Skipped []Skip
	// Withheld lists every file matching the pattern that was held back because it may hold
	// a secret, sorted by path, with the reason: the Secret skips in full.
	Withheld []Withheld
}

// Withheld is one file held back because it may hold a secret.
type Withheld struct {
	// Path is slash-separated and relative to Root (a symbolic link's own path).
	Path string `json:"path"`
	// Why says what gave it away, e.g. "environment file (.env)" or "holds a private key".
	Why string `json:"why"`
}

// window is how many files may be in flight between the walk and the in-order consumer. It
// bounds memory beyond the kept files to window × the per-file cap, and is wide enough that
// one slow file does not idle the readers.
const window = 32

// Gather walks opt.Root and returns the files matching opt.Pattern, with what was skipped
// and why. A bad pattern gives an error wrapping ErrBadPattern. Problems with single files
// or directories (permissions, links) are skips, not errors; only an unusable Root or the
// end of ctx stop the walk, and ctx's end gives an error wrapping ctx.Err() together with
// what had been kept so far (in path order, skips counted by the readers only).
func Gather(ctx context.Context, opt Options) (*Gathered, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gathering files: %w", err)
	}
	if err := CheckPattern(opt.Pattern); err != nil {
		return nil, err
	}
	g := &gatherer{
		ctx:      ctx,
		pattern:  compileGlob(normalize(opt.Pattern)),
		maxFile:  int64(cmp.Or(max(opt.MaxFileBytes, 0), consult.MaxFileBytes)),
		maxTotal: int64(cmp.Or(max(opt.MaxTotalBytes, 0), consult.MaxTotalBytes)),
		maxFiles: cmp.Or(max(opt.MaxFiles, 0), consult.MaxFiles),
		kept:     opt.Kept,
		digests:  opt.Digests,
	}
	if opt.Exclude != "" {
		if err := CheckExclude(opt.Exclude); err != nil {
			return nil, err
		}
		g.exclude = compileGlob(normalize(opt.Exclude))
	}
	root, err := filepath.Abs(opt.Root)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, fmt.Errorf("gathering files: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("gathering files: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("gathering files: %s is not a directory", opt.Root)
	}
	if seg, ok := VCSDir(root); ok {
		return nil, fmt.Errorf("gathering files: %w: %s is inside a %s directory", ErrVCSDir, opt.Root, seg)
	}
	g.tree = &tree{path: root, pathSep: root}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		g.tree.pathSep += string(filepath.Separator)
	}
	dir := opt.Opened
	if dir == nil {
		if dir, err = os.OpenRoot(root); errors.Is(err, fs.ErrPermission) {
			// Root cannot be listed: reported as the walk reports such a directory.
			var skips skipCounter
			skips.add(Unreadable, dirLabel(""))
			return &Gathered{Skipped: skips.list()}, nil
		} else if err != nil {
			return nil, fmt.Errorf("gathering files: %w", err)
		}
		defer dir.Close()
	}
	g.tree.root = dir
	g.ir.tree = g.tree
	return g.run()
}

type gatherer struct {
	ctx              context.Context
	tree             *tree // Root, its real path, opened: everything inside is read through it
	pattern, exclude *glob // exclude is nil when there is none
	maxFile          int64
	maxTotal         int64
	maxFiles         int
	kept             func([]byte) // Options.Kept, or nil
	digests          bool         // Options.Digests

	// Owned by the walk.
	prefix    string // Root relative to the top of its work tree, "" if it is the top or in none
	walkSkips skipCounter
	withheld  []Withheld
	ir        ignoreReader
	jobs      chan job
	order     chan chan result // each file's result to come, in walk order; window of them at most

	capped atomic.Bool // set by the consumer once a cap is reached: readers stop reading
}

type job struct {
	rel  string        // path relative to Root, for reports
	dir  *dirHandle    // the directory to read name in; nil for Root
	name string        // the file's name in dir, or its path relative to Root in the system's form
	out  chan<- result // buffered: the reader never waits on it
}

// dirHandle is a directory of the walk opened as an *os.Root, shared by the walk and the
// reads of its files, each holding a reference: reading a file is then one open of a name
// in its directory, not of every directory on its path. The last reference closes it.
type dirHandle struct {
	root *os.Root
	refs atomic.Int32
}

// openDir opens name, one name or a path relative to parent, as a dirHandle the caller holds.
func openDir(parent *os.Root, name string) (*dirHandle, error) {
	r, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	h := &dirHandle{root: r}
	h.refs.Store(1)
	return h, nil
}

// hold takes a reference for a read.
func (h *dirHandle) hold() { h.refs.Add(1) }

// release drops a reference, closing the directory with the last.
func (h *dirHandle) release() {
	if h.refs.Add(-1) == 0 {
		h.root.Close()
	}
}

type result struct {
	rel      string
	content  []byte
	redacted []string
	reason   Reason
	digest   [sha256.Size]byte
	why      string // for a Secret: what gave it away
	dropped  bool   // not read: cancelled or over a cap
}

func (g *gatherer) run() (*Gathered, error) {
	g.jobs = make(chan job, window)
	g.order = make(chan chan result, window-1) // and the one the consumer waits on

	var walkErr error
	walked := make(chan struct{})
	go func() {
		defer close(walked)
		defer close(g.order)
		defer close(g.jobs)
		walkErr = g.walk()
	}()
	var wg sync.WaitGroup
	for range readers() {
		wg.Go(g.read)
	}

	// Take the results in walk order, which is path order. The end of ctx ends the wait at
	// once, whatever the readers and the walk are doing: they stop at their next step.
	var (
		out     Gathered
		skips   skipCounter
		reached bool
	)
	for {
		r, more, stopped := g.next()
		if stopped {
			// What was kept so far, for the report of a call that ran out of time.
			return &Gathered{Files: out.Files, Bytes: out.Bytes, Skipped: skips.list(), Withheld: out.Withheld},
				fmt.Errorf("gathering files: %w", g.ctx.Err())
		}
		if !more {
			break
		}
		switch {
		case reached || r.dropped:
			// Past a cap (or cancelled: the result is discarded below).
			skips.add(OverTotal, r.rel)
		case r.reason != 0:
			skips.add(r.reason, r.rel)
			if r.reason == Secret {
				out.Withheld = append(out.Withheld, Withheld{Path: r.rel, Why: r.why})
			}
		case len(out.Files) >= g.maxFiles || int64(out.Bytes)+int64(len(r.content)) > g.maxTotal:
			reached = true
			g.capped.Store(true)
			skips.add(OverTotal, r.rel)
		default:
			out.Files = append(out.Files, File{Path: r.rel, Size: consult.Bytes(len(r.content)), Content: r.content, Redacted: r.redacted, Digest: r.digest})
			out.Bytes += consult.Bytes(len(r.content))
			if g.kept != nil {
				g.kept(r.content)
			}
		}
	}
	wg.Wait()
	<-walked
	if walkErr != nil && g.ctx.Err() == nil {
		return nil, fmt.Errorf("gathering files: %w", walkErr)
	}
	for _, label := range g.ir.unused {
		g.walkSkips.add(IgnoreFileUnused, label)
	}
	skips.merge(&g.walkSkips)
	out.Skipped = skips.list()
	out.Withheld = append(out.Withheld, g.withheld...)
	slices.SortFunc(out.Withheld, func(a, b Withheld) int { return strings.Compare(a.Path, b.Path) })
	if err := g.ctx.Err(); err != nil {
		return &out, fmt.Errorf("gathering files: %w", err) // what was kept before the end
	}
	return &out, nil
}

// next waits for the next result in walk order: more is false when there is none left,
// stopped true when ctx ended first.
func (g *gatherer) next() (r result, more, stopped bool) {
	select {
	case out, ok := <-g.order:
		if !ok {
			return result{}, false, false
		}
		select {
		case r = <-out:
			return r, true, false
		case <-g.ctx.Done():
		}
	case <-g.ctx.Done():
	}
	return result{}, false, true
}

// readers is the size of the reading pool: reads from the page cache are CPU-bound, reads
// from a disk wait, so a few more readers than CPUs.
func readers() int { return min(max(2*runtime.GOMAXPROCS(0), 4), 16) }

// read reads and classifies the files of the jobs until they run out.
func (g *gatherer) read() {
	scratch := make([]byte, SniffBytes)
	for j := range g.jobs {
		r := result{rel: j.rel}
		dir := g.tree.root
		if j.dir != nil {
			dir = j.dir.root
		}
		if g.ctx.Err() != nil || g.capped.Load() {
			r.dropped = true
		} else {
			var sum *[sha256.Size]byte
			if g.digests {
				sum = &r.digest
			}
			r.content, r.redacted, r.reason = readFile(dir, j.name, g.maxFile, scratch, sum)
			if r.reason == Secret { // why it is held back comes in place of the kinds
				r.why, r.redacted = r.redacted[0], nil
			}
		}
		if j.dir != nil {
			j.dir.release()
		}
		j.out <- r
	}
}

// ErrVCSDir is wrapped by the error Gather returns for a root inside a version-control
// directory (.git, .hg, …): repository internals hold credentials (remote URLs with tokens),
// and are never gathered.
var ErrVCSDir = errors.New("inside a version-control directory")

// errStop ends the walk early; it is never returned to the caller (the cause is ctx's).
var errStop = errors.New("walk stopped")

// walk lists the directories from the pattern's base down, sending each candidate file to
// the readers in path order.
func (g *gatherer) walk() error {
	rules, prefix := g.ir.outerRules(g.tree.path)
	g.prefix = prefix
	dir, rel := g.tree.path, ""
	var comps []string
	// Descend through the literal base of the pattern ("src/pkg" for "src/pkg/**/*.go"): it
	// is named explicitly, so it is entered even if default-excluded, but not if ignored,
	// excluded, missing or a symbolic link.
	for _, name := range splitBase(g.pattern.raw) {
		if err := g.ctx.Err(); err != nil {
			return err
		}
		if dir != g.tree.path {
			rules = rules.with(g.ir.readInfoExclude(dir, rel, g.full(rel)))
		}
		rules = rules.with(g.ir.readDir(dir, rel, g.full(rel), true, true))
		if g.ir.err != nil {
			return g.ir.err
		}
		childRel, child := joinRel(rel, name), joinAbs(dir, name)
		fi, err := g.tree.root.Lstat(osRel(childRel))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			g.walkSkips.add(Unreadable, childRel+"/")
			return nil
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := filepath.EvalSymlinks(child); err == nil && !g.inside(target) {
				g.walkSkips.add(Outside, childRel+"/")
			}
			return nil // symbolic links to directories are not followed
		case !fi.IsDir():
			return nil
		case rules.excluded(g.full(childRel), name, true):
			g.walkSkips.add(Ignored, childRel+"/")
			return nil
		case vcsDirs[name]:
			g.walkSkips.add(DefaultExcluded, childRel+"/")
			return nil
		case g.exclude != nil && g.exclude.coversSubtree(childRel):
			g.walkSkips.add(ExcludedByPattern, childRel+"/")
			return nil
		}
		dir, rel, comps = child, childRel, append(comps, name)
	}
	err := g.walkDir(g.tree.root, osRel(rel), dir, rel, comps, rules, true)
	if errors.Is(err, errStop) {
		return g.ctx.Err()
	}
	return err
}

// full returns the path of rel (relative to Root) relative to the top of the work tree.
func (g *gatherer) full(rel string) string {
	switch {
	case g.prefix == "":
		return rel
	case rel == "":
		return g.prefix
	}
	return g.prefix + "/" + rel
}

func (g *gatherer) inside(path string) bool {
	_, ok := g.tree.rel(path)
	return ok
}

// walkDir walks the directory dir, name in parent (one name, or a path relative to
// Root), whose path relative to Root is rel and whose segments are comps, under rules.
// named says the pattern names it, which overrides default exclusion. The directory is
// opened through parent, and its files read through it.
func (g *gatherer) walkDir(parent *os.Root, name, dir, rel string, comps []string, rules ignoreRules, named bool) error {
	if g.ctx.Err() != nil {
		return errStop
	}
	h, err := openDir(parent, name)
	if err != nil {
		g.walkSkips.add(Unreadable, dirLabel(rel))
		return nil
	}
	defer h.release()
	f, err := h.root.Open(".")
	if err != nil {
		g.walkSkips.add(Unreadable, dirLabel(rel))
		return nil
	}
	ents, err := listDir(f)
	f.Close()
	if err != nil && len(ents) == 0 {
		g.walkSkips.add(Unreadable, dirLabel(rel))
		return nil
	}

	var markers map[string]bool
	for _, e := range ents {
		if name := e.Name(); markerNames[name] {
			if markers == nil {
				markers = map[string]bool{}
			}
			markers[name] = true
		}
	}
	if !named && (markers["pyvenv.cfg"] || markers["conda-meta"]) {
		g.walkSkips.add(DefaultExcluded, dirLabel(rel))
		return nil
	}
	if markers[".git"] && dir != g.tree.path {
		rules = rules.with(g.ir.readInfoExclude(dir, rel, g.full(rel))) // a nested repository
	}
	if markers[".gitignore"] || markers[".ignore"] {
		rules = rules.with(g.ir.readDir(dir, rel, g.full(rel), markers[".gitignore"], markers[".ignore"]))
	}
	if g.ir.err != nil {
		return g.ir.err
	}

	// Sort as whole paths sort: a directory's name is followed by "/", so "a.txt" (0x2e)
	// comes before everything in "a/" (0x2f). Walking in this order visits files in path order.
	slices.SortFunc(ents, func(a, b fs.DirEntry) int {
		return compareEntries(a.Name(), a.IsDir(), b.Name(), b.IsDir())
	})

	for _, e := range ents {
		if g.ctx.Err() != nil { // every entry: with many ignore patterns one entry takes a while
			return errStop
		}
		name := e.Name()
		childRel := joinRel(rel, name)
		child := joinAbs(dir, name)
		var err error
		switch t := e.Type(); {
		case t.IsDir():
			err = g.visitDir(h, child, childRel, name, append(comps, name), rules, markers)
		case t&fs.ModeSymlink != 0:
			err = g.visitLink(child, childRel, name, append(comps, name), rules)
		case t.IsRegular():
			if g.pattern.match(childRel) {
				if r, why := g.fileRule(childRel, name, child, rules); r != 0 {
					g.skip(r, childRel, why)
				} else {
					err = g.emit(childRel, h, name)
				}
			}
		default: // fifo, socket, device: never opened
			if g.pattern.match(childRel) {
				r, why := g.fileRule(childRel, name, child, rules)
				g.skip(cmp.Or(r, Unreadable), childRel, why)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *gatherer) visitDir(parent *dirHandle, dir, rel, name string, comps []string, rules ignoreRules, siblings map[string]bool) error {
	switch {
	case !g.pattern.couldContain(comps):
		return nil
	case rules.excluded(g.full(rel), name, true):
		g.walkSkips.add(Ignored, rel+"/")
		return nil
	case g.exclude != nil && g.exclude.coversSubtree(rel):
		g.walkSkips.add(ExcludedByPattern, rel+"/")
		return nil
	case vcsDirs[name]: // never entered, even when named: .git/config holds remote credentials
		g.walkSkips.add(DefaultExcluded, rel+"/")
		return nil
	}
	named := g.pattern.literals[name]
	if !named && isDefaultExcludedDir(name, siblings) {
		g.walkSkips.add(DefaultExcluded, rel+"/")
		return nil
	}
	return g.walkDir(parent.root, name, dir, rel, comps, rules, named)
}

// visitLink handles a symbolic link: one to a regular file inside Root is read under the
// link's path; one leading out of Root is Outside; one to a directory is never followed.
func (g *gatherer) visitLink(link, rel, name string, comps []string, rules ignoreRules) error {
	isMatch, could := g.pattern.match(rel), g.pattern.couldContain(comps)
	if !isMatch && !could {
		return nil
	}
	// Ignore rules and exclusions see a link as a file, as git does.
	rule, why := g.fileRule(rel, name, link, rules)
	target, err := filepath.EvalSymlinks(link)
	var fi fs.FileInfo
	if err == nil {
		fi, err = os.Stat(target)
	}
	switch {
	case err == nil && fi.IsDir():
		switch {
		case !could:
		case rule == Ignored || rule == ExcludedByPattern:
			g.walkSkips.add(rule, rel+"/")
		case !g.inside(target):
			g.walkSkips.add(Outside, rel+"/")
		}
		return nil
	case !isMatch:
		return nil
	case rule != 0:
		g.skip(rule, rel, why)
	case err != nil: // dangling, looping or inaccessible
		g.walkSkips.add(Unreadable, rel)
	case !g.inside(target):
		g.walkSkips.add(Outside, rel)
	case !fi.Mode().IsRegular():
		g.walkSkips.add(Unreadable, rel)
	default:
		// A link is judged by where it leads too: "notes.txt" -> ".env" is an environment
		// file, and one into .git/ reaches the repository's internals.
		orel, _ := g.tree.rel(target)
		trel := filepath.ToSlash(orel)
		if why := targetSecret(trel, target); why != "" {
			g.skip(Secret, rel, "link to "+trel+": "+why)
			return nil
		}
		return g.emit(rel, nil, orel)
	}
	return nil
}

// targetSecret says why the file a link leads to, at trel relative to Root (abs in full),
// may hold a secret, or "".
func targetSecret(trel, abs string) string {
	for _, seg := range strings.Split(path.Dir(trel), "/") {
		if vcsDirs[seg] {
			return "inside " + seg + "/, the repository's internals"
		}
	}
	if why := secretName(trel, path.Base(trel)); why != "" {
		return why
	}
	return systemSecret(abs)
}

// skip counts a file left out for r; a Secret is also listed in full with why.
func (g *gatherer) skip(r Reason, rel, why string) {
	g.walkSkips.add(r, rel)
	if r == Secret {
		g.withheld = append(g.withheld, Withheld{Path: rel, Why: why})
	}
}

// fileRule returns why the file at rel, called name, whose absolute path is abs, is left out
// without being read, or 0; for a Secret, why says what gave it away.
func (g *gatherer) fileRule(rel, name, abs string, rules ignoreRules) (r Reason, why string) {
	switch {
	case rules.excluded(g.full(rel), name, false):
		return Ignored, ""
	case g.exclude != nil && g.exclude.match(rel):
		return ExcludedByPattern, ""
	case name == ".git": // the .git file of a worktree or submodule
		return DefaultExcluded, ""
	case isLockFile(name):
		return LockFile, ""
	}
	if why := secretName(rel, name); why != "" {
		return Secret, why
	}
	if why := systemSecret(abs); why != "" {
		return Secret, why
	}
	return 0, ""
}

// osRel is rel, slash-separated and relative to Root ("" for Root itself), in the form
// *os.Root takes.
func osRel(rel string) string {
	if rel == "" {
		return "."
	}
	return filepath.FromSlash(rel)
}

// emit hands the file name in dir (nil for Root) to the readers, waiting while the window
// is full. Once a cap is reached every file after it is over the cap, read or not, so the
// walk counts it so itself and only lists on.
func (g *gatherer) emit(rel string, dir *dirHandle, name string) error {
	if g.capped.Load() {
		g.walkSkips.add(OverTotal, rel)
		return nil
	}
	out := make(chan result, 1)
	select {
	case g.order <- out:
	case <-g.ctx.Done():
		return errStop
	}
	if dir != nil {
		dir.hold()
	}
	g.jobs <- job{rel: rel, dir: dir, name: name, out: out} // never blocks: as many slots as order
	return nil
}

// joinAbs joins an absolute directory and a name; unlike filepath.Join it does not clean.
func joinAbs(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

func dirLabel(rel string) string {
	if rel == "" {
		return "./"
	}
	return rel + "/"
}

// compareEntries orders directory entries as their full paths order: a directory name as
// if followed by "/".
func compareEntries(a string, aDir bool, b string, bDir bool) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	return cmp.Compare(keyAt(a, n, aDir), keyAt(b, n, bDir))
}

// keyAt is the byte at i of name, "/" just past a directory's name, -1 past a file's.
func keyAt(name string, i int, isDir bool) int {
	switch {
	case i < len(name):
		return int(name[i])
	case isDir:
		return '/'
	}
	return -1
}
