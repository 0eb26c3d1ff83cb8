package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/internal/testkit/fake"
	"github.com/consultmcp/consult/internal/testkit/goroutines"
	"github.com/consultmcp/consult/providers"
)

// The hostile-input battery (issue 5, item 3): every bad argument gets a clear isError
// result naming what is wrong, sends no completion request upstream, writes no file, and
// leaves the server answering the next call. Positive controls (spaces, unicode, symlinked
// roots, an existing output_file) must succeed as dry runs, so that a validator that refuses
// everything cannot pass.

// completionsPath is the upstream endpoint a consultation sends its prompt to. GET /models
// (the context-window look-up) is allowed: it sends nothing of the caller's.
const completionsPath = "/chat/completions"

// hostileEnv is a server with a real OpenRouter client pointed at a fake upstream, and a
// fixture tree. Everything a call could write lives under root or the working directory.
type hostileEnv struct {
	c    *client.Client
	srv  *fake.Server
	root string // fixture tree
	proj string // a small Go project under root
	out  string // a directory for output_file targets
	jobs *background.Engine
}

// newHostileEnv builds a hostileEnv for t. No goroutine outlives t: once the client (its own
// goroutines), the fake upstream and the idle keep-alive connections are closed, every
// goroutine t started winds down.
func newHostileEnv(t *testing.T) *hostileEnv {
	t.Helper()
	e := &hostileEnv{root: t.TempDir()}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	goroutines.Check(t, tr.CloseIdleConnections)
	e.proj = filepath.Join(e.root, "proj")
	e.out = filepath.Join(e.root, "out")
	for name, content := range map[string]string{
		"proj/main.go":                 "package main\n\nfunc main() {}\n",
		"proj/util/u.go":               "package util\n",
		"with spaces/a b.go":           "package a\n",
		"ünïcødé 日本/файл.go":           "package u\n",
		"emoji 🎉 dir/x.go":             "package x\n",
		"a file.txt":                   "not a directory\n",
		"out/existing.md":              "an earlier answer\n",
		"bracket[dir]/{brace}/b.go":    "package b\n",
		"quote\"and'apostrophe/q.go":   "package q\n",
		"newline\nin name/n.go":        "package n\n",
		"proj/sub dir with space/s.go": "package s\n",
	} {
		p := filepath.Join(e.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"loop-a":       "loop-b",
		"loop-b":       "loop-a",
		"self-loop":    "self-loop",
		"dangling":     filepath.Join(e.root, "does-not-exist"),
		"to-proj":      "proj",
		"to-proc":      "/proc",
		"to-sys":       "/sys",
		"to-dev":       "/dev",
		"to-root":      "/",
		"to-file":      "a file.txt",
		"out-loop":     "out-loop",
		"out/link.md":  "../a file.txt",
		"proj/escape":  "../..",
		"proj/outside": "/etc",
	} {
		if err := os.Symlink(target, filepath.Join(e.root, link)); err != nil {
			t.Fatal(err)
		}
	}

	e.srv = fake.New(t, fake.OpenRouter)
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-hostile", BaseURL: e.srv.BaseURL(),
		HTTPClient: &http.Client{Transport: providers.ActivityTransport(tr)}})
	if err != nil {
		t.Fatal(err)
	}
	// Background jobs save under root, so a hostile call that wrongly started one and saved
	// anything shows in the snapshot.
	svc := &consultation.Service{Counter: tokens.NewCounter(), Model: p,
		DefaultModel: "google/gemini-2.5-pro", Heartbeat: 100 * time.Millisecond,
		Catalog: catalog.New(catalog.Config{Provider: providers.NameOpenRouter, ListURL: e.srv.BaseURL() + "/models"})}
	e.jobs = background.New(background.Config{Service: svc, Store: results.Open(filepath.Join(e.root, "results"), 0, 0, 0)})
	t.Cleanup(e.jobs.Wait)
	s := New(Config{Service: svc, Background: e.jobs})
	e.c, _ = inProcess(t, s, clientOpts{})
	return e
}

// call sends a consultation with arbitrary arguments, bounded so that a hung server fails
// the test instead of hanging it.
func (e *hostileEnv) call(t *testing.T, args any) *mcp.CallToolResult {
	t.Helper()
	return e.callTool(t, "consultation", args)
}

// callTool is call for any of the server's tools.
func (e *hostileEnv) callTool(t *testing.T, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := e.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("CallTool: %v (the server must answer every call with a result)", err)
	}
	return res
}

// control runs a dry run that must succeed: the server is still answering.
func (e *hostileEnv) control(t *testing.T) {
	t.Helper()
	res := e.call(t, map[string]any{"path": e.proj, "pattern": "**/*.go", "query": "still there?", "dry_run": true})
	if res.IsError || !strings.Contains(text(res), "Dry run") {
		t.Fatalf("control dry run after a hostile call failed: %s", text(res))
	}
}

// snapshot lists every entry under the fixture tree and the working directory (where a
// relative output_file would land), with its type, size and modification time.
func (e *hostileEnv) snapshot(t *testing.T) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			snap[p] = "error: " + err.Error()
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		snap[p] = fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		snap["cwd:"+d.Name()] = d.Type().String()
	}
	return snap
}

func diffSnapshots(before, after map[string]string) []string {
	var diff []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			diff = append(diff, "created "+k)
		} else if w != v {
			diff = append(diff, "changed "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, "removed "+k)
		}
	}
	sort.Strings(diff)
	return diff
}

// hostileCase is one entry of the battery.
type hostileCase struct {
	name string
	args any
	// want are substrings the message must contain: the argument's name and/or the value.
	want []string
	// ok marks a positive control: the call must succeed (a dry run).
	ok bool
	// bug names the production bug this case once caught (fixed); a failure says which
	// one has come back.
	bug string
	// skip, when set, says why the case cannot run here.
	skip string
}

// absent deletes an argument in hostileArgs.
type absentArg struct{}

var absent any = absentArg{}

func TestHostileInputs(t *testing.T) {
	t.Parallel()
	e := newHostileEnv(t)

	// args are valid, non-dry-run arguments with the given changes: a validator that let a
	// bad value through would send a completion request, which the battery detects.
	args := func(kv ...any) map[string]any {
		m := map[string]any{"path": e.proj, "pattern": "**/*.go", "query": "What does main do?"}
		for i := 0; i+1 < len(kv); i += 2 {
			k := kv[i].(string)
			if kv[i+1] == absent {
				delete(m, k)
			} else {
				m[k] = kv[i+1]
			}
		}
		return m
	}
	// dry is args with dry_run set: for controls, and for targets that must never be
	// written even if a validator wrongly let them through.
	dry := func(kv ...any) map[string]any { return args(append(kv, "dry_run", true)...) }
	in := func(name string) string { return filepath.Join(e.root, name) }
	// noMatch is a pattern whose literal base does not exist: a wrongly accepted special
	// path fails fast with "No files matched" (which the wants reject) instead of walking it.
	const noMatch = "no-such-dir-7f3a/*.go"

	unreadable := ""
	if os.Geteuid() == 0 {
		unreadable = "running as root, which reads through permission bits; files/gather_unix_test.go covers unreadable trees by dropping to nobody"
	}
	locked := filepath.Join(e.root, "locked")
	if unreadable == "" {
		if err := os.MkdirAll(filepath.Join(locked, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
	}

	const symlinkBypass = "validation checks path for /, /proc, /sys and /dev lexically, but Gather resolves symlinks: a symlink to one of them is accepted and walked (see report)"
	const outputPseudo = "checkOutputFile does not refuse pseudo-filesystems or non-regular files: the answer is fetched, then the write fails (or lands in /dev) (see report)"

	cases := []hostileCase{
		// path
		{name: "path/relative", args: args("path", "proj"), want: []string{`path "proj"`, "not absolute"}},
		{name: "path/dot-relative", args: args("path", "./proj"), want: []string{`path "./proj"`, "not absolute"}},
		{name: "path/tilde", args: args("path", "~/proj"), want: []string{`"~/proj"`, "not expanded"}},
		{name: "path/empty", args: args("path", ""), want: []string{`"path"`, "empty"}},
		{name: "path/whitespace", args: args("path", "  \t "), want: []string{`"path"`, "empty"}},
		{name: "path/missing", args: args("path", absent), want: []string{`missing required argument "path"`}},
		{name: "path/null", args: args("path", nil), want: []string{`"path"`}},
		{name: "path/number", args: args("path", 42), want: []string{`"path"`, "must be a string", "42"}},
		{name: "path/object", args: args("path", map[string]any{"dir": "/"}), want: []string{`"path"`, "an object"}},
		{name: "path/list", args: args("path", []any{e.proj}), want: []string{`"path"`, "a list"}},
		{name: "path/does not exist", args: args("path", in("nope/deeper")), want: []string{in("nope/deeper"), "does not exist"}},
		{name: "path/a file", args: args("path", in("a file.txt")), want: []string{in("a file.txt"), "is a file"}},
		{name: "path/through a file", args: args("path", in("a file.txt/sub")), want: []string{in("a file.txt/sub")}},
		{name: "path/symlink to a file", args: args("path", in("to-file")), want: []string{in("to-file"), "is a file"}},
		{name: "path/NUL byte", args: args("path", e.proj+"\x00/etc"), want: []string{`path "`, "NUL byte"}},
		{name: "path/root", args: args("path", "/"), want: []string{`"/"`, "filesystem root"}},
		{name: "path/double slash root", args: args("path", "//"), want: []string{`"//"`, "filesystem root"}},
		{name: "path/root dot-dot", args: args("path", "/../.."), want: []string{`"/../.."`, "filesystem root"}},
		{name: "path/proc", args: args("path", "/proc"), want: []string{`"/proc"`, "pseudo-filesystem"}},
		{name: "path/proc self", args: args("path", "/proc/self"), want: []string{`"/proc/self"`, "pseudo-filesystem"}},
		{name: "path/proc self cwd", args: args("path", "/proc/self/cwd"), want: []string{"/proc/self/cwd", "pseudo-filesystem"}},
		{name: "path/proc via dot-dot", args: args("path", e.root+"/../../../../../../proc"), want: []string{"pseudo-filesystem"}},
		{name: "path/sys", args: args("path", "/sys"), want: []string{`"/sys"`, "pseudo-filesystem"}},
		{name: "path/dev", args: args("path", "/dev"), want: []string{`"/dev"`, "pseudo-filesystem"}},
		{name: "path/dev shm", args: args("path", "/dev/shm"), want: []string{`"/dev/shm"`, "pseudo-filesystem"}},
		{name: "path/symlink loop", args: args("path", in("loop-a")), want: []string{in("loop-a"), "symbolic links"}},
		{name: "path/self-referencing symlink", args: args("path", in("self-loop")), want: []string{in("self-loop"), "symbolic links"}},
		{name: "path/dangling symlink", args: args("path", in("dangling")), want: []string{in("dangling"), "does not exist"}},
		{name: "path/symlink escape to proc", args: dry("path", in("to-proc"), "pattern", noMatch, "timeout", 2), want: []string{in("to-proc"), "pseudo-filesystem"}, bug: symlinkBypass},
		{name: "path/symlink escape to sys", args: dry("path", in("to-sys"), "pattern", noMatch, "timeout", 2), want: []string{in("to-sys"), "pseudo-filesystem"}, bug: symlinkBypass},
		{name: "path/symlink escape to dev", args: dry("path", in("to-dev"), "pattern", noMatch, "timeout", 2), want: []string{in("to-dev"), "pseudo-filesystem"}, bug: symlinkBypass},
		{name: "path/symlink escape to root", args: dry("path", in("to-root"), "pattern", noMatch, "timeout", 2), want: []string{in("to-root"), "filesystem root"}, bug: symlinkBypass},
		{name: "path/unreadable parent", args: args("path", filepath.Join(locked, "inner")), want: []string{filepath.Join(locked, "inner"), "permission denied"}, skip: unreadable},
		{name: "path/unreadable directory", args: args("path", locked), want: []string{"No files matched", "unreadable"}, skip: unreadable},

		// path: positive controls
		{name: "path ok/spaces", args: dry("path", in("with spaces")), ok: true},
		{name: "path ok/unicode", args: dry("path", in("ünïcødé 日本")), ok: true},
		{name: "path ok/emoji", args: dry("path", in("emoji 🎉 dir")), ok: true},
		{name: "path ok/glob metacharacters in the directory", args: dry("path", in("bracket[dir]")), ok: true},
		{name: "path ok/quotes in the directory", args: dry("path", in("quote\"and'apostrophe")), ok: true},
		{name: "path ok/newline in the directory", args: dry("path", in("newline\nin name")), ok: true},
		{name: "path ok/symlink to a project", args: dry("path", in("to-proj")), ok: true},
		{name: "path ok/trailing slash and dot", args: dry("path", e.proj+"/./"), ok: true},
		{name: "path ok/inner symlinks escaping are skipped", args: dry("pattern", "**"), ok: true},

		// pattern
		{name: "pattern/empty", args: args("pattern", ""), want: []string{`"pattern"`, "empty"}},
		{name: "pattern/whitespace", args: args("pattern", "   "), want: []string{`"pattern"`, "empty"}},
		{name: "pattern/missing", args: args("pattern", absent), want: []string{`"pattern"`}},
		{name: "pattern/number", args: args("pattern", 7), want: []string{`"pattern"`, "must be a string"}},
		{name: "pattern/unclosed class", args: args("pattern", "src/[a-"), want: []string{`pattern "src/[a-"`, "not a valid glob"}},
		{name: "pattern/unclosed brace", args: args("pattern", "{a,b"), want: []string{`pattern "{a,b"`, "not a valid glob"}},
		{name: "pattern/trailing backslash", args: args("pattern", `*.go\`), want: []string{"pattern", "not a valid glob"}},
		{name: "pattern/absolute", args: args("pattern", "/etc/*"), want: []string{`pattern "/etc/*"`, "absolute"}},
		{name: "pattern/absolute doublestar", args: args("pattern", "/**"), want: []string{`pattern "/**"`, "absolute"}},
		{name: "pattern/windows drive", args: args("pattern", "C:/Windows/**"), want: []string{`"C:/Windows/**"`, "absolute"}},
		{name: "pattern/UNC", args: args("pattern", `\\server\share\*`), want: []string{"pattern", "absolute"}},
		{name: "pattern/tilde", args: args("pattern", "~/.ssh/*"), want: []string{`"~/.ssh/*"`, "~"}},
		{name: "pattern/dot-dot", args: args("pattern", "../*.go"), want: []string{`pattern "../*.go"`, ".."}},
		{name: "pattern/deep dot-dot", args: args("pattern", "a/../../x/*"), want: []string{`"a/../../x/*"`, ".."}},
		{name: "pattern/doublestar dot-dot", args: args("pattern", "**/../*"), want: []string{`"**/../*"`, ".."}},
		{name: "pattern/dot-slash dot-dot", args: args("pattern", "./../x"), want: []string{`"./../x"`, ".."}},
		{name: "pattern/harmless dot-dot is still refused", args: args("pattern", "a/../b.go"), want: []string{`"a/../b.go"`, ".."}},
		{name: "pattern/brace escape", args: args("pattern", "{../x,y}"), want: []string{`pattern "{../x,y}"`, ".."}},
		{name: "pattern/brace escape second", args: args("pattern", "{y,../../etc/passwd}"), want: []string{`"{y,../../etc/passwd}"`, ".."}},
		{name: "pattern/nested brace escape", args: args("pattern", "{a,{b,../c}}/*"), want: []string{`"{a,{b,../c}}/*"`, ".."}},
		{name: "pattern/brace absolute", args: args("pattern", "{src/*,/etc/passwd}"), want: []string{`"{src/*,/etc/passwd}"`, "absolute"}},
		{name: "pattern/10000 characters", args: args("pattern", strings.Repeat("a", 10_000)), want: []string{"pattern", "10,000", "limit"}},
		{name: "pattern/10000 characters of wildcards", args: args("pattern", strings.Repeat("**/", 3333)+"*"), want: []string{"pattern", "10,000", "limit"}},
		{name: "pattern/brace bomb", args: args("pattern", strings.Repeat("{a,b}", 14)), want: []string{"pattern", "brace alternatives"}},
		{name: "pattern ok/unicode", args: dry("path", e.root, "pattern", "ünïcødé 日本/*.go"), ok: true},
		{name: "pattern ok/escaped metacharacters", args: dry("path", e.root, "pattern", `bracket\[dir\]/\{brace\}/*.go`), ok: true},

		// exclude_pattern
		{name: "exclude/dot-dot", args: args("exclude_pattern", "../**"), want: []string{`exclude_pattern "../**"`, ".."}},
		{name: "exclude/absolute", args: args("exclude_pattern", "/tmp/**"), want: []string{`exclude_pattern "/tmp/**"`, "absolute"}},
		{name: "exclude/malformed", args: args("exclude_pattern", "[z-"), want: []string{`exclude_pattern "[z-"`}},
		{name: "exclude/brace escape", args: args("exclude_pattern", "{../x,y}"), want: []string{`exclude_pattern "{../x,y}"`}},
		{name: "exclude/not a string", args: args("exclude_pattern", true), want: []string{`"exclude_pattern"`, "must be a string"}},

		// timeout
		{name: "timeout/zero", args: args("timeout", 0), want: []string{"timeout", "from 1 to 600", "got 0"}},
		{name: "timeout/negative", args: args("timeout", -1), want: []string{"timeout", "from 1 to 600", "got -1"}},
		{name: "timeout/just below one", args: args("timeout", 0.999), want: []string{"timeout", "got 0.999"}},
		{name: "timeout/601", args: args("timeout", 601), want: []string{"timeout", "from 1 to 600", "got 601"}},
		{name: "timeout/1e308", args: args("timeout", 1e308), want: []string{"timeout", "got 1e+308"}},
		{name: "timeout/-1e308", args: args("timeout", -1e308), want: []string{"timeout", "got -1e+308"}},
		{name: "timeout/smallest denormal", args: args("timeout", 5e-324), want: []string{"timeout", "got 5e-324"}},
		{name: "timeout/string", args: args("timeout", "30"), want: []string{"timeout", `the string "30"`}},
		{name: "timeout/string NaN", args: args("timeout", "NaN"), want: []string{"timeout", `the string "NaN"`}},
		{name: "timeout/boolean", args: args("timeout", true), want: []string{"timeout", "boolean true"}},
		{name: "timeout/object", args: args("timeout", map[string]any{"seconds": 30}), want: []string{"timeout", "an object"}},
		{name: "timeout/list", args: args("timeout", []any{30}), want: []string{"timeout", "a list"}},
		{name: "timeout ok/null is the default", args: dry("timeout", nil), ok: true},
		{name: "timeout ok/one", args: dry("timeout", 1), ok: true},
		{name: "timeout ok/600 on a dry run (no model to wait for: no warning)", args: dry("timeout", 600), ok: true},

		// on_timeout
		{name: "on_timeout/upper case", args: args("on_timeout", "CONTINUE"), want: []string{"on_timeout", `"CONTINUE"`, `"continue"`}},
		{name: "on_timeout/trailing space", args: args("on_timeout", "continue "), want: []string{"on_timeout", `"continue "`}},
		{name: "on_timeout/other word", args: args("on_timeout", "background"), want: []string{"on_timeout", `"background"`}},
		{name: "follow_up_of/path", args: args("follow_up_of", "../../etc/passwd"), want: []string{"follow_up_of", "not a consultation id"}},
		{name: "follow_up_of/unknown id", args: args("follow_up_of", "20260101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa"), want: []string{"20260101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa", "Run the consultation again"}},
		{name: "follow_up_of/megabyte", args: args("follow_up_of", strings.Repeat("9", 1<<20)), want: []string{"follow_up_of", "not a consultation id"}},
		{name: "on_timeout/boolean", args: args("on_timeout", true), want: []string{"on_timeout", "boolean true"}},
		{name: "on_timeout/list", args: args("on_timeout", []any{"continue"}), want: []string{"on_timeout", "a list"}},
		{name: "on_timeout/continue with a bad timeout", args: args("on_timeout", "continue", "timeout", 0), want: []string{"timeout", "got 0"}},
		{name: "on_timeout/continue with a bad path", args: args("on_timeout", "continue", "path", "proj"), want: []string{"not absolute"}},
		{name: "on_timeout ok/fail", args: dry("on_timeout", "fail"), ok: true},
		{name: "on_timeout ok/empty is the default", args: dry("on_timeout", ""), ok: true},
		{name: "on_timeout ok/continue on a dry run", args: dry("on_timeout", "continue"), ok: true},

		// query
		{name: "query/empty", args: args("query", ""), want: []string{`"query"`, "empty"}},
		{name: "query/whitespace", args: args("query", " \n\t\r "), want: []string{`"query"`, "empty"}},
		{name: "query/missing", args: args("query", absent), want: []string{`"query"`, "missing"}},
		{name: "query/number", args: args("query", 1), want: []string{`"query"`, "must be a string"}},
		{name: "query/2 MB", args: args("query", strings.Repeat("why? ", 400_000)), want: []string{"query", "1.9 MiB", "limit"}},
		{name: "query/just over the limit", args: args("query", strings.Repeat("q", 256<<10+1)), want: []string{"query", "limit"}},
		{name: "query ok/NUL and control characters", args: dry("query", "what\x00is\x1b[31mthis?"), ok: true},
		{name: "query ok/unicode", args: dry("query", "Qu'est-ce que c'est ? 这是什么？ 🤔 \u202eRTL"), ok: true},

		// model
		{name: "model/thinking without an id", args: args("model", "|thinking"), want: []string{`model "|thinking"`, "no id"}},
		{name: "model/thinking budget not a number", args: args("model", "openai/gpt-4o|thinking=abc"), want: []string{`"openai/gpt-4o|thinking=abc"`, "thinking budget", `"abc"`}},
		{name: "model/thinking budget zero", args: args("model", "openai/gpt-4o|thinking=0"), want: []string{`"openai/gpt-4o|thinking=0"`, "thinking budget"}},
		{name: "model/thinking budget negative", args: args("model", "openai/gpt-4o|thinking=-5"), want: []string{"thinking budget", `"-5"`}},
		{name: "model/thinking budget too large", args: args("model", "openai/gpt-4o|thinking=99999999999"), want: []string{"thinking budget", `"99999999999"`}},
		{name: "model/thinking budget empty", args: args("model", "openai/gpt-4o|thinking="), want: []string{"thinking budget"}},
		{name: "model/unknown suffix", args: args("model", "openai/gpt-4o|fast"), want: []string{`"openai/gpt-4o|fast"`, `"|fast"`}},
		{name: "model/double suffix", args: args("model", "openai/gpt-4o|thinking|thinking"), want: []string{`"openai/gpt-4o|thinking|thinking"`}},
		{name: "model/500 characters", args: args("model", strings.Repeat("m", 500)), want: []string{"model", "500 characters"}},
		{name: "model/space inside", args: args("model", "openai/gpt 4o"), want: []string{`model "openai/gpt 4o"`, "spaces"}},
		{name: "model/newline inside", args: args("model", "openai/gpt\n-4o"), want: []string{`model "openai/gpt\n-4o"`, `'\n'`}},
		{name: "model/control character", args: args("model", "openai/\x07gpt-4o"), want: []string{"model", "control"}},
		{name: "model/only whitespace", args: args("model", "   "), want: []string{"model", "no id"}},
		{name: "model/not a string", args: args("model", 4), want: []string{`"model"`, "must be a string"}},
		{name: "model/unknown but well formed", args: args("model", "acme/does-not-exist"), want: []string{`"acme/does-not-exist"`, "not available"}},
		{name: "model/unknown with thinking", args: args("model", "acme/nope|thinking=1000"), want: []string{`"acme/nope"`, "not available"}},

		// output_file
		{name: "output_file/relative", args: args("output_file", "answer.md"), want: []string{`output_file "answer.md"`, "absolute"}},
		{name: "output_file/dot relative", args: args("output_file", "./out/answer.md"), want: []string{`output_file "./out/answer.md"`, "absolute"}},
		{name: "output_file/a directory", args: args("output_file", e.out), want: []string{e.out, "is a directory"}},
		{name: "output_file/a directory with slash", args: args("output_file", e.out+"/"), want: []string{e.out, "is a directory"}},
		{name: "output_file/symlink loop", args: args("output_file", in("out-loop")+"/a.md"), want: []string{"output_file", in("out-loop")}},
		{name: "output_file/missing parent", args: args("output_file", in("no/such/dir/a.md")), want: []string{in("no/such/dir/a.md"), "does not exist"}},
		{name: "output_file/parent is a file", args: args("output_file", in("a file.txt/a.md")), want: []string{in("a file.txt/a.md"), "does not exist"}},
		{name: "output_file/NUL byte", args: args("output_file", e.out+"/a\x00.md"), want: []string{"output_file"}},
		{name: "output_file/empty string is no output file", args: dry("output_file", ""), ok: true},
		{name: "output_file/not a string", args: args("output_file", 1), want: []string{`"output_file"`, "must be a string"}},
		{name: "output_file/proc", args: dry("output_file", "/proc/x"), want: []string{`output_file "/proc/x"`}, bug: outputPseudo},
		{name: "output_file/sys", args: dry("output_file", "/sys/x"), want: []string{`output_file "/sys/x"`}, bug: outputPseudo},
		{name: "output_file/dev null", args: dry("output_file", "/dev/null"), want: []string{`output_file "/dev/null"`}, bug: outputPseudo},
		{name: "output_file ok/existing file", args: dry("output_file", filepath.Join(e.out, "existing.md")), ok: true},
		{name: "output_file ok/new file with unicode name", args: dry("output_file", filepath.Join(e.out, "réponse 答案.md")), ok: true},

		// dry_run
		{name: "dry_run/string", args: args("dry_run", "true"), want: []string{`"dry_run"`, "true or false"}},
		{name: "dry_run/number", args: args("dry_run", 1), want: []string{`"dry_run"`, "true or false"}},

		// argument names and shape
		{name: "arguments/unknown name", args: args("paht", e.proj), want: []string{`unknown argument "paht"`}},
		{name: "arguments/wrong case", args: args("Path", e.proj), want: []string{`"Path"`}},
		{name: "arguments/prototype pollution", args: args("__proto__", map[string]any{"dry_run": true}), want: []string{`"__proto__"`}},
		{name: "arguments/legacy name", args: args("timeout_seconds", 30), want: []string{`"timeout_seconds"`}},
		{name: "arguments/a list", args: []any{e.proj, "**/*.go", "q"}, want: []string{"JSON object"}},
		{name: "arguments/a string", args: "path=/tmp", want: []string{"JSON object"}},
		{name: "arguments/a number", args: 42, want: []string{"JSON object"}},
		{name: "arguments/absent", args: nil, want: []string{`"path"`}},
		{name: "arguments/empty object", args: map[string]any{}, want: []string{`"path"`}},
	}

	start := time.Now()
	errorsSeen := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			before := e.snapshot(t)
			res := e.call(t, tc.args)
			msg := text(res)

			// Enforced for every case, known bug or not.
			if n := e.srv.Count(completionsPath); n != 0 {
				t.Fatalf("%d completion request(s) reached the upstream; result: %s", n, msg)
			}
			if d := diffSnapshots(before, e.snapshot(t)); len(d) > 0 {
				t.Fatalf("the call changed the file system: %v", d)
			}
			defer e.control(t)

			var problems []string
			switch {
			case tc.ok && res.IsError:
				problems = append(problems, "want success (positive control), got isError")
			case tc.ok && !strings.HasPrefix(msg, "Dry run"):
				problems = append(problems, "want a dry-run report")
			case !tc.ok && !res.IsError:
				problems = append(problems, "want isError, got success")
			}
			if strings.TrimSpace(msg) == "" {
				problems = append(problems, "message is empty")
			}
			if !tc.ok {
				if class := errorClass(res); class != "invalid_argument" && class != "not_found" && class != "permission_denied" {
					problems = append(problems, fmt.Sprintf("structuredContent.error.class = %q, want the argument's fault (invalid_argument, not_found or permission_denied)", class))
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					problems = append(problems, fmt.Sprintf("message lacks %q", w))
				}
			}
			if !tc.ok && len(msg) > 4000 {
				problems = append(problems, fmt.Sprintf("message is %d bytes: it must not echo a huge value back", len(msg)))
			}
			if len(problems) == 0 {
				if !tc.ok {
					errorsSeen++
				}
				return
			}
			report := fmt.Sprintf("%s\nresult (isError=%v): %s", strings.Join(problems, "; "), res.IsError, shorten(msg, 600))
			if tc.bug != "" {
				report += "\n(regression of: " + tc.bug + ")"
			}
			t.Error(report)
		})
	}
	if errorsSeen < 40 {
		t.Errorf("only %d hostile cases were refused as expected; the battery needs at least 40", errorsSeen)
	}
	t.Logf("%d cases (%d refused as expected) in %v", len(cases), errorsSeen, time.Since(start).Round(time.Millisecond))

	// After the battery: an existing output_file is not an error, the answer goes to a new
	// name; this is the only call that reaches the upstream.
	existing := filepath.Join(e.out, "existing.md")
	res := e.call(t, map[string]any{"path": e.proj, "pattern": "**/*.go", "query": "q", "output_file": existing})
	if res.IsError {
		t.Fatalf("answer to an existing output_file: %s", text(res))
	}
	if got, _ := os.ReadFile(existing); string(got) != "an earlier answer\n" {
		t.Errorf("existing output_file was overwritten: %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(e.out, "existing-1.md")); err != nil || string(got) != "ok" {
		t.Errorf("answer should be in existing-1.md: %q, %v (result %s)", got, err, text(res))
	}
	if n := e.srv.Count(completionsPath); n != 1 {
		t.Errorf("completion requests = %d, want exactly 1 (the final call)", n)
	}
}

// TestHostileCollectAndCancel sends consultation_result and consultation_cancel arguments a
// careless or hostile caller might: each is refused with a message naming the argument, no
// file appears, nothing reaches the upstream, and the server keeps answering.
func TestHostileCollectAndCancel(t *testing.T) {
	t.Parallel()
	e := newHostileEnv(t)
	fresh := results.NewID(time.Now())
	cases := []struct {
		tool string
		name string
		args any
		want []string
	}{
		{"consultation_result", "id/traversal", map[string]any{"id": "../../../etc/passwd"}, []string{`id "../../../etc/passwd" is not a consultation id`}},
		{"consultation_result", "id/absolute path", map[string]any{"id": "/etc/passwd"}, []string{"is not a consultation id"}},
		{"consultation_result", "id/with .json", map[string]any{"id": fresh + ".json"}, []string{"is not a consultation id"}},
		{"consultation_result", "id/with a slash", map[string]any{"id": fresh[:8] + "/" + fresh[9:]}, []string{"is not a consultation id"}},
		{"consultation_result", "id/NUL byte", map[string]any{"id": fresh + "\x00"}, []string{"is not a consultation id"}},
		{"consultation_result", "id/upper case", map[string]any{"id": strings.ToUpper(fresh[:16]) + "ABCDEF12"}, []string{"is not a consultation id"}},
		{"consultation_result", "id/number", map[string]any{"id": 20261123}, []string{`"id" must be a string`}},
		{"consultation_result", "id/object", map[string]any{"id": map[string]any{"id": fresh}}, []string{`"id"`, "an object"}},
		{"consultation_result", "id/unknown", map[string]any{"id": fresh}, []string{"Unknown id", fresh}},
		{"consultation_result", "id/too old", map[string]any{"id": "20000101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa"}, []string{"has expired"}},
		{"consultation_result", "wait/zero", map[string]any{"id": fresh, "wait": 0}, []string{"wait", "from 1 to 600", "got 0"}},
		{"consultation_result", "wait/negative", map[string]any{"id": fresh, "wait": -5}, []string{"wait", "got -5"}},
		{"consultation_result", "wait/601", map[string]any{"id": fresh, "wait": 601}, []string{"wait", "got 601"}},
		{"consultation_result", "wait/1e308", map[string]any{"id": fresh, "wait": 1e308}, []string{"wait", "got 1e+308"}},
		{"consultation_result", "wait/string", map[string]any{"id": fresh, "wait": "20"}, []string{"wait", `the string "20"`}},
		{"consultation_result", "wait/boolean", map[string]any{"id": fresh, "wait": true}, []string{"wait", "boolean true"}},
		{"consultation_result", "unknown argument", map[string]any{"id": fresh, "path": "/"}, []string{`unknown argument "path"`}},
		{"consultation_result", "arguments not an object", []any{fresh}, []string{"arguments must be a JSON object"}},
		{"consultation_result", "offset without id", map[string]any{"offset": 0}, []string{"offset needs id"}},
		{"consultation_cancel", "id/missing", map[string]any{}, []string{`missing required argument "id"`}},
		{"consultation_cancel", "id/empty", map[string]any{"id": ""}, []string{`"id"`, "empty"}},
		{"consultation_cancel", "id/traversal", map[string]any{"id": "../results"}, []string{"is not a consultation id"}},
		{"consultation_cancel", "id/list", map[string]any{"id": []any{fresh}}, []string{`"id"`, "a list"}},
		{"consultation_cancel", "id/unknown", map[string]any{"id": fresh}, []string{"Unknown id"}},
		{"consultation_cancel", "unknown argument", map[string]any{"id": fresh, "wait": 3}, []string{`unknown argument "wait": consultation_cancel takes id`}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+"/"+tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.callTool(t, tc.tool, tc.args)
			msg := text(res)
			if !res.IsError {
				t.Errorf("want isError, got: %s", shorten(msg, 300))
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q: %s", w, shorten(msg, 300))
				}
			}
			if len(msg) > 4000 {
				t.Errorf("message is %d bytes: it must not echo a huge value back", len(msg))
			}
			if d := diffSnapshots(before, e.snapshot(t)); len(d) > 0 {
				t.Errorf("the call changed the file system: %v", d)
			}
			if n := e.srv.Count(completionsPath); n != 0 {
				t.Fatalf("%d completion request(s) reached the upstream", n)
			}
			e.control(t)
		})
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// TestHostileInputsDirect calls the tools' handlers on the argument map, with the same
// upstream wiring, for what JSON cannot carry through an MCP client: NaN and infinite numbers
// (encoding/json refuses them) and invalid UTF-8 (the encoder replaces it with U+FFFD); and
// for values of 1 MB, whose message must not echo them back (the battery sends one such
// value, query/2 MB, through the client: the rest would only time encoding/json, which takes
// seconds for each under -race).
func TestHostileInputsDirect(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	p, err := providers.NewOpenRouter(providers.Config{APIKey: "k-hostile", BaseURL: srv.BaseURL(),
		HTTPClient: &http.Client{Transport: providers.ActivityTransport(tr)}})
	if err != nil {
		t.Fatal(err)
	}
	svc := &consultation.Service{Counter: tokens.NewCounter(), Model: p, DefaultModel: "google/gemini-2.5-pro",
		Catalog: catalog.New(catalog.Config{Provider: providers.NameOpenRouter, ListURL: srv.BaseURL() + "/models"})}
	eng := background.New(background.Config{Service: svc, Store: results.Open(t.TempDir(), 0, 0, 0)})
	h := &handler{svc: svc, bg: eng, log: slog.New(slog.DiscardHandler)}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(math.NaN()); err == nil {
		t.Fatal("encoding/json now encodes NaN: move the NaN cases into TestHostileInputs")
	}
	args := func(k string, v any) map[string]any {
		m := map[string]any{"path": dir, "pattern": "**/*.go", "query": "What does main do?"}
		m[k] = v
		return m
	}
	const echoes = "path and output_file messages quoted the value in full (%q, no length cap): a 1 MB value made a 1 MB error result"
	big := strings.Repeat("9", 1<<20)
	consult, result, cancel := h.consultCall, h.resultCall, h.cancelCall
	for _, tc := range []struct {
		name string
		call func(context.Context, map[string]any, consultation.Reporter) consultation.Result
		args map[string]any
		want []string
		bug  string // as in hostileCase
	}{
		{"timeout NaN", consult, args("timeout", math.NaN()), []string{"timeout", "got NaN"}, ""},
		{"timeout +Inf", consult, args("timeout", math.Inf(1)), []string{"timeout", "got +Inf"}, ""},
		{"timeout -Inf", consult, args("timeout", math.Inf(-1)), []string{"timeout", "got -Inf"}, ""},
		{"timeout int 0", consult, args("timeout", 0), []string{"timeout", "got 0"}, ""},
		{"timeout int64 601", consult, args("timeout", int64(601)), []string{"timeout", "got 601"}, ""},
		{"timeout float32 NaN", consult, args("timeout", float32(math.NaN())), []string{"timeout", "NaN"}, ""},
		{"timeout json.Number", consult, args("timeout", json.Number("30")), []string{"timeout"}, ""},
		{"query invalid UTF-8", consult, args("query", "why\xff\xfe?"), []string{"query", "UTF-8"}, ""},
		{"query lone continuation byte", consult, args("query", "\x80"), []string{"query", "UTF-8"}, ""},
		{"query overlong encoding", consult, args("query", "\xc0\xaf"), []string{"query", "UTF-8"}, ""},
		{"query surrogate half", consult, args("query", "\xed\xa0\x80"), []string{"query", "UTF-8"}, ""},
		{"path invalid UTF-8", consult, args("path", dir+"/\xff"), []string{"path", "does not exist"}, ""},
		{"model invalid UTF-8", consult, args("model", "acme/\xffmodel"), []string{"model"}, ""},
		{"path 1 MB relative", consult, args("path", strings.Repeat("a/", 500_000)), []string{`path "a/a/`, "not absolute"}, echoes},
		{"path 1 MB absolute", consult, args("path", strings.Repeat("/abc", 250_000)), []string{`path "/abc/abc`}, echoes},
		{"on_timeout 1 MB", consult, args("on_timeout", strings.Repeat("c", 1<<20)), []string{"on_timeout", "1,048,576 bytes"}, ""},
		{"output_file 1 MB relative", consult, args("output_file", strings.Repeat("o/", 500_000)), []string{`output_file "o/o/`, "absolute"}, echoes},
		{"consultation_result id 1 MB", result, map[string]any{"id": big}, []string{"is not a consultation id", "1,048,576 bytes"}, ""},
		{"consultation_cancel id 1 MB", cancel, map[string]any{"id": big}, []string{"1,048,576 bytes"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.call(context.Background(), tc.args, nil)
			if !res.IsError {
				t.Fatalf("want isError, got %s", shorten(res.Text(), 300))
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Text(), w) {
					t.Errorf("message %q lacks %q", shorten(res.Text(), 300), w)
				}
			}
			if len(res.Text()) > 4000 {
				t.Errorf("message is %d bytes: it must not echo a huge value back", len(res.Text()))
			}
			if class := errorClass(toMCP(res)); class != "invalid_argument" && class != "not_found" {
				t.Errorf("structuredContent.error.class = %q, want the argument's fault (invalid_argument or not_found)", class)
			}
			if t.Failed() && tc.bug != "" {
				t.Log("regression of: " + tc.bug)
			}
			if n := srv.Count(completionsPath); n != 0 {
				t.Fatalf("%d completion request(s) reached the upstream", n)
			}
		})
	}
	if res := h.consultCall(context.Background(), map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "dry_run": true}, nil); res.IsError {
		t.Errorf("control dry run failed: %s", res.Text())
	}
}

// errorClass is structuredContent.error.class of a tool result, "" when it has none.
func errorClass(res *mcp.CallToolResult) string {
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return ""
	}
	var sc struct {
		Error struct {
			Class string `json:"class"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &sc) != nil {
		return ""
	}
	return sc.Error.Class
}
