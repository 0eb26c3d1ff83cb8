package consultation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/leaf/models"
)

// MaxQueryBytes is the longest question accepted: 256 KiB of question is already a
// document; put documents in files and gather them.
const MaxQueryBytes consult.Bytes = 256 << 10

// argErr refuses argument arg: its value as shown ("" when not shown), the rule it breaks and
// the fix ("" when the rule says it).
func argErr(arg, value, rule, fix string) error {
	return &consult.ArgError{Arg: arg, Value: value, Rule: rule, Fix: fix}
}

// Argument names, as the tools declare them: [consult.ArgError.Arg] holds one of them.
const (
	ArgPath       = "path"
	ArgPattern    = "pattern"
	ArgQuery      = "query"
	ArgModel      = "model"
	ArgExclude    = "exclude_pattern"
	ArgTimeout    = "timeout"
	ArgOutputFile = "output_file"
	ArgDryRun     = "dry_run"
	ArgOnTimeout  = "on_timeout"
	ArgMaxCost    = "max_cost_usd"
)

// OnTimeout is what a call does when its timeout passes.
type OnTimeout string

// The values of on_timeout.
const (
	// OnTimeoutFail ends the call at its timeout with an error that says what was collected.
	// It is the default ("" means it too).
	OnTimeoutFail OnTimeout = "fail"
	// OnTimeoutContinue returns "still running" with an id at the timeout and lets the
	// consultation finish in the background, to be collected with consultation_result.
	OnTimeoutContinue OnTimeout = "continue"
)

// Request is a consultation as its caller asks for it, and the consultation tool's arguments:
// its fields and tags are the tool's input schema and the decoding of a call (tooldefs), and
// the README's argument table is checked against them. Consult checks every field before
// anything is read, and refuses a bad one with a *consult.ArgError naming the argument.
type Request struct {
	// Path is the absolute directory to gather from.
	Path string `json:"path" desc:"Absolute directory to gather files from." want:"the absolute directory to gather files from, e.g. \"/home/me/project\""`
	// Pattern is the glob of the files to gather, relative to Path.
	Pattern string `json:"pattern" desc:"Glob relative to path, e.g. \"**/*.py\" or \"src/**/*.{ts,tsx}\"." want:"a glob relative to path, e.g. \"**/*.go\""`
	// Query is the question, non-empty UTF-8 text.
	Query string `json:"query" desc:"The question, self-contained." want:"the question to ask about the files"`
	// Model is the model spec ("id", "id|thinking", "id|thinking=N"); "" is the server's default.
	Model string `json:"model,omitempty" desc:"Model id as the provider names it; server default if omitted. Suffix \"|thinking\" or \"|thinking=N\" turns on reasoning (N: token budget)."`
	// Exclude is a glob of files to leave out; "" leaves none out.
	Exclude string `json:"exclude_pattern,omitempty" desc:"Glob of files to leave out, e.g. \"{**/*_test.go,docs/**}\"."`
	// Timeout is the deadline of the whole call; 0 is the server's default. A timeout the
	// caller gives (non-zero) long enough for clients to give up on the call is warned of.
	Timeout time.Duration `json:"timeout,omitempty" desc:"Seconds for the whole call"`
	// OutputFile is the absolute path of a new file to write the answer to; "" for none.
	OutputFile string `json:"output_file,omitempty" desc:"Absolute path of a new file for the answer; the result then holds its path and the footer."`
	// DryRun asks for gathering and counting only.
	DryRun bool `json:"dry_run,omitempty" desc:"Gather and count only; no model call."`
	// OnTimeout is what happens at Timeout; "" is OnTimeoutFail.
	OnTimeout OnTimeout `json:"on_timeout,omitempty" enum:"fail,continue" desc:"\"fail\" (default): stop at timeout. \"continue\": return an id at timeout and finish in the background."`
	// MaxCostUSD is the most the call may cost, in US dollars: its output limit is sized so
	// that its bound fits, and a call whose prompt and least useful answer cannot fit is
	// refused before anything is sent; 0 is no cap.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty" desc:"Cost cap, USD."`
	// FollowUpOf is the id of an earlier consultation this one follows up: the background
	// engine, which keeps consultations, turns it into the earlier files and thread; the core
	// only carries it.
	FollowUpOf string `json:"follow_up_of,omitempty" desc:"An earlier answer's id: ask about the same files, with that thread as context."`
}

// request is a validated Request: what a call works on.
type request struct {
	// Path is the absolute, cleaned directory to gather from.
	Path string
	// Pattern and Exclude are validated doublestar globs relative to Path (Exclude may be empty).
	Pattern, Exclude string
	// Query is the question, non-empty valid UTF-8.
	Query string
	// Model is the parsed model argument; a zero ID means the server's default.
	Model models.Spec
	// Timeout is the deadline of the whole call.
	Timeout time.Duration
	// OutputFile is an absolute path the answer is written to, or empty.
	OutputFile string
	// output is where OutputFile is created, fixed by the allowed-roots check.
	output outputTarget
	// tree is Path opened (beneath its allowed root when the server has roots), fixed by the
	// allowed-roots check: gathering reads everything through it, so the kernel keeps the
	// reads inside it whatever happens to the path's name meanwhile.
	tree *os.Root
	// DryRun asks for gathering and counting only.
	DryRun bool
	// Continue is on_timeout "continue": at Timeout the call returns an id and the
	// consultation goes on in the background.
	Continue bool
	// Warnings are notes about accepted arguments the caller should see (e.g. a long timeout).
	Warnings []string
	// MaxCostUSD is the call's cap on what it may cost; 0 is none.
	MaxCostUSD float64
}

// Empty is the refusal of the required argument name of a tool whose arguments are In,
// given empty: it says what to give (the field's want tag).
func Empty[In any](name string) error {
	t, want := reflect.TypeFor[In](), ""
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n == name {
			want = t.Field(i).Tag.Get("want")
		}
	}
	return &consult.ArgError{Arg: name, Rule: "is empty", Fix: "give " + want, Form: consult.ArgSent}
}

// validate checks in against every rule and returns the request a call works on; a zero
// Timeout becomes defaultTimeout. It reads no file: it only stats path and output_file's
// parent. Every failure is a *consult.ArgError wrapping consult.ErrInvalidArgument.
func (in Request) validate(defaultTimeout time.Duration) (request, error) {
	req := request{
		Path: in.Path, Pattern: in.Pattern, Exclude: in.Exclude, Query: in.Query,
		Timeout: in.Timeout, OutputFile: in.OutputFile, DryRun: in.DryRun, MaxCostUSD: in.MaxCostUSD,
	}
	for _, a := range []struct{ name, v string }{{ArgPath, in.Path}, {ArgPattern, in.Pattern}, {ArgQuery, in.Query}} {
		if strings.TrimSpace(a.v) == "" {
			return req, Empty[Request](a.name)
		}
	}
	given := in.Timeout != 0
	if !given {
		req.Timeout = defaultTimeout
	} else if err := TimeoutRule(defaultTimeout).Check(in.Timeout); err != nil {
		return req, err
	}
	switch in.OnTimeout {
	case "", OnTimeoutFail:
	case OnTimeoutContinue:
		req.Continue = true
	default:
		return req, argErr(ArgOnTimeout, Shown(string(in.OnTimeout)), fmt.Sprintf("must be %q (the default: stop at timeout and report) or %q (return an id at timeout and finish in the background)", OnTimeoutFail, OnTimeoutContinue), "")
	}
	// A long timeout the caller chose is worth a warning; the server's own default is warned
	// of once at start-up, and a dry run never waits on a model.
	if given && req.Timeout >= consult.TimeoutWarnAt && !req.DryRun {
		fix := "retry with a smaller pattern or a shorter timeout"
		if req.Continue {
			fix = "retry with a timeout under your client's limit: the consultation then continues in the background"
		}
		req.Warnings = append(req.Warnings, LongWaitWarning(ArgTimeout, req.Timeout, fix))
	}

	if err := checkQuery(req.Query); err != nil {
		return req, err
	}
	if in.MaxCostUSD != 0 {
		if err := MaxCost.Check(in.MaxCostUSD); err != nil {
			return req, err
		}
	}
	var err error
	if req.Model, err = models.ParseSpec(in.Model); err != nil {
		return req, argError(err)
	}
	if err := files.CheckPattern(req.Pattern); err != nil {
		return req, argError(err)
	}
	if req.Exclude != "" {
		if err := files.CheckExclude(req.Exclude); err != nil {
			return req, argError(err)
		}
	}
	if req.Path, err = checkDir(req.Path); err != nil {
		return req, err
	}
	if req.OutputFile != "" {
		if req.OutputFile, err = checkOutputFile(req.OutputFile); err != nil {
			return req, err
		}
	}
	return req, nil
}

// argError is the *consult.ArgError a check of another package (files, models) wraps.
func argError(err error) error {
	if ae := (*consult.ArgError)(nil); errors.As(err, &ae) {
		return ae
	}
	return err
}

// A NumberRule is what a number argument may be: its words, which follow "must be", and its
// test. A value that breaks it, or is no number, is refused in those words.
type NumberRule struct {
	// Arg is the argument's name.
	Arg string
	// Must says what the value must be: "a number of seconds from 1 to 600 (default 22 seconds)".
	Must string
	// OK reports whether a number keeps the rule (never NaN).
	OK func(float64) bool
}

// Refuse is the refusal of a value that breaks the rule; got shows it as the caller gave it
// ("0.5", "the string \"30\"").
func (r NumberRule) Refuse(got string) error { return argErr(r.Arg, got, "must be "+r.Must, "") }

// Check refuses v when it breaks the rule.
func (r NumberRule) Check(v float64) error {
	if !r.OK(v) {
		return r.Refuse(fmt.Sprintf("%g", v))
	}
	return nil
}

// SecondsRule is what a duration argument (timeout, wait) may be: a number of seconds from
// Min to Max, Default when not given. A tool declares it in its schema and decodes by it.
type SecondsRule struct {
	// Arg is the argument's name.
	Arg string
	// Min, Max and Default are the bounds and the default.
	Min, Max, Default time.Duration
}

// TimeoutRule is the rule for a consultation's timeout with default def.
func TimeoutRule(def time.Duration) SecondsRule {
	return SecondsRule{Arg: ArgTimeout, Min: consult.MinTimeout, Max: consult.MaxTimeout, Default: def}
}

// Number is the rule as a NumberRule on the number of seconds.
func (r SecondsRule) Number() NumberRule {
	return NumberRule{Arg: r.Arg,
		Must: fmt.Sprintf("a number of seconds from %g to %g (default %s)", r.Min.Seconds(), r.Max.Seconds(), consult.FormatDuration(r.Default)),
		OK:   func(s float64) bool { return s >= r.Min.Seconds() && s <= r.Max.Seconds() }}
}

// Check refuses d when it is not from Min to Max.
func (r SecondsRule) Check(d time.Duration) error { return r.Number().Check(d.Seconds()) }

// LongWaitWarning is the note on a wait (timeout, wait) long enough for clients to give up;
// fix says what to do if the call is cut off.
func LongWaitWarning(arg string, d time.Duration, fix string) string {
	return fmt.Sprintf("%s %s accepted, but many MCP clients give up on a tool call after about 25-60 seconds unless they reset their clock on progress notifications; if this call is cut off, %s",
		arg, consult.FormatDuration(d), fix)
}

func checkQuery(q string) error {
	if !utf8.ValidString(q) {
		return argErr(ArgQuery, "", "is not valid UTF-8 text", "send the question as plain text")
	}
	if n := consult.Bytes(len(q)); n > MaxQueryBytes {
		return argErr(ArgQuery, "", fmt.Sprintf("is %s; the limit is %s", n, MaxQueryBytes), "put long material in a file under path and gather it with pattern instead")
	}
	return nil
}

// pseudoFS are trees that are not source code: their files are generated by the kernel,
// can block or be endless, and reading them can leak machine secrets.
var pseudoFS = []string{"/proc", "/sys", "/dev"}

// Shown quotes a caller's value for a message, cut to a readable length: a message must
// not echo a megabyte back into the agent's context.
func Shown(v string) string {
	const limit = 200
	if len(v) > limit {
		return fmt.Sprintf("%q… (%s bytes)", v[:limit], consult.Thousands(int64(len(v))))
	}
	return fmt.Sprintf("%q", v)
}

// inPseudoFS reports whether a cleaned absolute path is, or is inside, a pseudo-filesystem.
func inPseudoFS(clean string) (string, bool) {
	for _, fs := range pseudoFS {
		if clean == fs || strings.HasPrefix(clean, fs+"/") {
			return fs, true
		}
	}
	return "", false
}

func checkDir(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", argErr(ArgPath, Shown(p), "contains a NUL byte", "give an absolute directory")
	}
	if !filepath.IsAbs(p) {
		hint := ""
		if strings.HasPrefix(p, "~") {
			hint = " (\"~\" is not expanded: write the home directory out)"
		}
		return "", argErr(ArgPath, Shown(p), "is not absolute"+hint, `give the full directory path, e.g. "/home/me/project"`)
	}
	clean := filepath.Clean(p)
	info, err := os.Stat(clean)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", argErr(ArgPath, Shown(p), "does not exist", "give an existing directory")
	case errors.Is(err, os.ErrPermission):
		return "", argErr(ArgPath, Shown(p), "cannot be read (permission denied)", "")
	case err != nil:
		return "", argErr(ArgPath, Shown(p), fmt.Sprintf("cannot be used: %v", unwrapPathError(err)), "")
	case !info.IsDir():
		return "", argErr(ArgPath, Shown(p), "is a file, not a directory", fmt.Sprintf("give its directory %s and a pattern that matches %s", Shown(filepath.Dir(clean)), Shown(filepath.Base(clean))))
	}
	// Judge where the path really leads: a link to / or /proc is refused like / or /proc.
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", argErr(ArgPath, Shown(p), fmt.Sprintf("cannot be resolved: %v", unwrapPathError(err)), "")
	}
	via := ""
	if real != clean {
		via = fmt.Sprintf(" (it leads to %s)", Shown(real))
	}
	if real == string(filepath.Separator) || clean == string(filepath.Separator) {
		return "", argErr(ArgPath, Shown(p), "is the filesystem root"+via, "give the project directory to gather from")
	}
	for _, c := range []string{clean, real} {
		if fs, ok := inPseudoFS(c); ok {
			return "", argErr(ArgPath, Shown(p), fmt.Sprintf("is inside %s%s, a system pseudo-filesystem, not source code", fs, via), "give a project directory")
		}
		if vcs, ok := files.VCSDir(c); ok {
			return "", argErr(ArgPath, Shown(p), fmt.Sprintf("is inside a %s directory%s", vcs, via), "repository internals hold credentials and are never gathered; give the work tree above it")
		}
	}
	return clean, nil
}

func checkOutputFile(p string) (string, error) {
	if strings.ContainsRune(p, 0) || !filepath.IsAbs(p) {
		return "", argErr(ArgOutputFile, Shown(p), "is not an absolute path", `give the full path of a new file, e.g. "/tmp/answer.md"`)
	}
	clean := filepath.Clean(p)
	if info, err := os.Stat(clean); err == nil {
		if info.IsDir() {
			return "", argErr(ArgOutputFile, Shown(p), "is a directory", "give a file path inside it, e.g. "+Shown(filepath.Join(clean, "answer.md")))
		}
		if !info.Mode().IsRegular() {
			return "", argErr(ArgOutputFile, Shown(p), "is a device, pipe or socket, not a file", "give the path of a new file")
		}
	}
	dir := filepath.Dir(clean)
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return "", argErr(ArgOutputFile, Shown(p), fmt.Sprintf(": its directory %s does not exist; create it first or choose another place", Shown(dir)), "")
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", argErr(ArgOutputFile, Shown(p), fmt.Sprintf(": its directory cannot be resolved: %v", unwrapPathError(err)), "")
	}
	for _, c := range []string{dir, realDir} {
		if fs, ok := inPseudoFS(c); ok {
			return "", argErr(ArgOutputFile, Shown(p), fmt.Sprintf("is inside %s, a system pseudo-filesystem", fs), "give a path in a normal directory")
		}
	}
	return clean, nil
}

// maxCostLimit bounds max_cost_usd: a cap above it is a mistake (cents typed as dollars).
const maxCostLimit = 10_000

// MaxCost is the rule for max_cost_usd: a number of dollars above 0 (so 0, which would mean
// no cap, is refused when given) and at most 10,000.
var MaxCost = NumberRule{Arg: ArgMaxCost,
	Must: fmt.Sprintf("a price in US dollars above 0 and at most %d, e.g. 0.50", maxCostLimit),
	OK:   func(v float64) bool { return v > 0 && v <= maxCostLimit }}

// close releases what a validated request holds open: the gathered tree and output_file's
// directory; the call is over.
func (r *request) close() {
	if r.tree != nil {
		r.tree.Close()
		r.tree = nil
	}
	r.output.close()
}

// Names map the tools' argument names to what the caller calls them, for the words that
// tell it what to change: a caller such as the command line names its flags; an argument
// it does not map keeps the tool's name.
type Names map[string]string

// ToolNames are the tools' own argument names.
var ToolNames Names

// of is what the caller calls argument arg.
func (n Names) of(arg string) string {
	if name, ok := n[arg]; ok {
		return name
	}
	return arg
}
