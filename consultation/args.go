package consultation

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/models"
)

// MaxQueryBytes is the longest question accepted: 256 KiB of question is already a
// document; put documents in files and gather them.
const MaxQueryBytes consult.Bytes = 256 << 10

// ErrInvalidArgument is wrapped by every refusal of a caller's arguments (see ArgError):
// they break a rule, and nothing was read or sent.
var ErrInvalidArgument = errors.New("invalid argument")

// ArgError names the argument at fault and says what is wrong and how to fix it.
type ArgError struct {
	// Arg is the argument's name as the tool declares it.
	Arg string
	// Msg is a complete human sentence: the value given, the rule, the fix.
	Msg string
}

func (e *ArgError) Error() string { return e.Msg }

// Unwrap lets errors.Is(err, ErrInvalidArgument) hold.
func (e *ArgError) Unwrap() error { return ErrInvalidArgument }

// NewArgError is an *ArgError for argument arg, its message formatted from format and a.
func NewArgError(arg, format string, a ...any) error { return argErr(arg, format, a...) }

// Shown quotes a caller's value for a message, cut to a readable length.
func Shown(v string) string { return shown(v) }

func argErr(arg, format string, a ...any) error {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// Argument names, as the tools declare them: [ArgError.Arg] holds one of them.
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

// Request is a consultation as its caller asks for it. Consult checks every field before
// anything is read, and refuses a bad one with an *ArgError naming the tool's argument.
type Request struct {
	// Path is the absolute directory to gather from.
	Path string
	// Pattern is the glob of the files to gather, relative to Path.
	Pattern string
	// Exclude is a glob of files to leave out; "" leaves none out.
	Exclude string
	// Query is the question, non-empty UTF-8 text.
	Query string
	// Model is the model spec ("id", "id|thinking", "id|thinking=N"); "" is the server's default.
	Model string
	// Timeout is the deadline of the whole call; 0 is the server's default. A timeout the
	// caller gives (non-zero) long enough for clients to give up on the call is warned of.
	Timeout time.Duration
	// OutputFile is the absolute path of a new file to write the answer to; "" for none.
	OutputFile string
	// DryRun asks for gathering and counting only.
	DryRun bool
	// OnTimeout is what happens at Timeout; "" is OnTimeoutFail.
	OnTimeout OnTimeout
	// MaxCostUSD is the most the call may cost, in US dollars: its output limit is sized so
	// that its bound fits, and a call whose prompt and least useful answer cannot fit is
	// refused before anything is sent; 0 is no cap.
	MaxCostUSD float64
	// FollowUpOf is the id of an earlier consultation this one follows up: the background
	// engine, which keeps consultations, turns it into the earlier files and thread; the core
	// only carries it.
	FollowUpOf string
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

// wanted says what each required argument holds, as the messages that ask for it put it.
var wanted = map[string]string{
	ArgPath:    "the absolute directory to gather files from, e.g. \"/home/me/project\"",
	ArgPattern: "a glob relative to path, e.g. \"**/*.go\"",
	ArgQuery:   "the question to ask about the files",
	"id":       `the id a consultation returned with "still running"`,
}

// Wanted says what the required argument name holds, for a message that asks for it
// (e.g. "give the question to ask about the files"); "" for an optional argument.
func Wanted(name string) string { return wanted[name] }

// validate checks in against every rule and returns the request a call works on; a zero
// Timeout becomes defaultTimeout. It reads no file: it only stats path and output_file's
// parent. Every failure is an *ArgError wrapping ErrInvalidArgument whose message names the
// value and the rule.
func (in Request) validate(defaultTimeout time.Duration) (request, error) {
	req := request{
		Path: in.Path, Pattern: in.Pattern, Exclude: in.Exclude, Query: in.Query,
		Timeout: in.Timeout, OutputFile: in.OutputFile, DryRun: in.DryRun, MaxCostUSD: in.MaxCostUSD,
	}
	for _, a := range []struct{ name, v string }{{ArgPath, in.Path}, {ArgPattern, in.Pattern}, {ArgQuery, in.Query}} {
		if err := notEmpty(a.name, a.v); err != nil {
			return req, err
		}
	}
	given := in.Timeout != 0
	if !given {
		req.Timeout = defaultTimeout
	} else if err := timeoutRule(defaultTimeout).check(in.Timeout); err != nil {
		return req, err
	}
	switch in.OnTimeout {
	case "", OnTimeoutFail:
	case OnTimeoutContinue:
		req.Continue = true
	default:
		return req, argErr(ArgOnTimeout, "on_timeout must be %q (the default: stop at timeout and report) or %q (return an id at timeout and finish in the background); got %s", OnTimeoutFail, OnTimeoutContinue, shown(string(in.OnTimeout)))
	}
	// A long timeout the caller chose is worth a warning; the server's own default is warned
	// of once at start-up, and a dry run never waits on a model.
	if given && req.Timeout >= consult.TimeoutWarnAt && !req.DryRun {
		fix := "retry with a smaller pattern or a shorter timeout"
		if req.Continue {
			fix = "retry with a timeout under your client's limit: the consultation then continues in the background"
		}
		req.Warnings = append(req.Warnings, longWaitWarning(ArgTimeout, req.Timeout, fix))
	}

	if err := checkQuery(req.Query); err != nil {
		return req, err
	}
	if in.MaxCostUSD != 0 {
		if err := CheckMaxCost(in.MaxCostUSD); err != nil {
			return req, err
		}
	}
	var err error
	if req.Model, err = models.ParseSpec(in.Model); err != nil {
		return req, argErr(ArgModel, "%s", strings.TrimPrefix(err.Error(), models.ErrBadModel.Error()+": "))
	}
	if err := files.CheckPattern(req.Pattern); err != nil {
		return req, argErr(ArgPattern, "%s", err)
	}
	if req.Exclude != "" {
		if err := files.CheckExclude(req.Exclude); err != nil {
			return req, argErr(ArgExclude, "%s", err)
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

// notEmpty refuses a required argument that is empty or only white space.
func notEmpty(name, v string) error {
	if strings.TrimSpace(v) == "" {
		return argErr(name, "argument %q is empty: give %s", name, Wanted(name))
	}
	return nil
}

// SecondsRule is what a duration argument (timeout, wait) may be: a number of seconds from
// Min to Max, Default when not given.
type SecondsRule struct {
	// Arg is the argument's name.
	Arg string
	// Min, Max and Default are the bounds and the default.
	Min, Max, Default time.Duration
}

// TimeoutRule is the rule for a consultation's timeout on this service.
func (s *Service) TimeoutRule() SecondsRule { return timeoutRule(s.defaultTimeout()) }

// timeoutRule is the rule for a consultation's timeout with default def.
func timeoutRule(def time.Duration) SecondsRule {
	return SecondsRule{Arg: ArgTimeout, Min: consult.MinTimeout, Max: consult.MaxTimeout, Default: def}
}

// Refuse is the error for a value that breaks the rule (out of range, or not a number);
// got describes the value as the caller gave it ("0.5", "the string \"30\"").
func (r SecondsRule) Refuse(got string) error {
	return argErr(r.Arg, "%s must be a number of seconds from %g to %g (default %s); got %s",
		r.Arg, r.Min.Seconds(), r.Max.Seconds(), consult.FormatDuration(r.Default), got)
}

// FromSeconds is the duration of sec seconds, refused (NaN and infinities too) when it
// is not from Min to Max.
func (r SecondsRule) FromSeconds(sec float64) (time.Duration, error) {
	if math.IsNaN(sec) || sec < r.Min.Seconds() || sec > r.Max.Seconds() {
		return 0, r.Refuse(fmt.Sprintf("%g", sec))
	}
	return time.Duration(sec * float64(time.Second)), nil
}

// Check refuses d when it is not from Min to Max.
func (r SecondsRule) Check(d time.Duration) error { return r.check(d) }

func (r SecondsRule) check(d time.Duration) error {
	if d < r.Min || d > r.Max {
		return r.Refuse(fmt.Sprintf("%g", d.Seconds()))
	}
	return nil
}

// LongWaitWarning is the note on a wait (timeout, wait) long enough for clients to give up;
// fix says what to do if the call is cut off.
func LongWaitWarning(arg string, d time.Duration, fix string) string {
	return longWaitWarning(arg, d, fix)
}

func longWaitWarning(arg string, d time.Duration, fix string) string {
	return fmt.Sprintf("%s %s accepted, but many MCP clients give up on a tool call after about 25-60 seconds unless they reset their clock on progress notifications; if this call is cut off, %s",
		arg, consult.FormatDuration(d), fix)
}

func checkQuery(q string) error {
	if !utf8.ValidString(q) {
		return argErr(ArgQuery, "query is not valid UTF-8 text: send the question as plain text")
	}
	if n := consult.Bytes(len(q)); n > MaxQueryBytes {
		return argErr(ArgQuery, "query is %s; the limit is %s: put long material in a file under path and gather it with pattern instead", n, MaxQueryBytes)
	}
	return nil
}

// pseudoFS are trees that are not source code: their files are generated by the kernel,
// can block or be endless, and reading them can leak machine secrets.
var pseudoFS = []string{"/proc", "/sys", "/dev"}

// shown quotes a caller's value for a message, cut to a readable length: a message must
// not echo a megabyte back into the agent's context.
func shown(v string) string {
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
		return "", argErr(ArgPath, "path %s contains a NUL byte: give an absolute directory", shown(p))
	}
	if !filepath.IsAbs(p) {
		hint := ""
		if strings.HasPrefix(p, "~") {
			hint = " (\"~\" is not expanded: write the home directory out)"
		}
		return "", argErr(ArgPath, "path %s is not absolute%s: give the full directory path, e.g. \"/home/me/project\"", shown(p), hint)
	}
	clean := filepath.Clean(p)
	info, err := os.Stat(clean)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", argErr(ArgPath, "path %s does not exist: give an existing directory", shown(p))
	case errors.Is(err, os.ErrPermission):
		return "", argErr(ArgPath, "path %s cannot be read (permission denied)", shown(p))
	case err != nil:
		return "", argErr(ArgPath, "path %s cannot be used: %v", shown(p), unwrapPathError(err))
	case !info.IsDir():
		return "", argErr(ArgPath, "path %s is a file, not a directory: give its directory %s and a pattern that matches %s", shown(p), shown(filepath.Dir(clean)), shown(filepath.Base(clean)))
	}
	// Judge where the path really leads: a link to / or /proc is refused like / or /proc.
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", argErr(ArgPath, "path %s cannot be resolved: %v", shown(p), unwrapPathError(err))
	}
	via := ""
	if real != clean {
		via = fmt.Sprintf(" (it leads to %s)", shown(real))
	}
	if real == string(filepath.Separator) || clean == string(filepath.Separator) {
		return "", argErr(ArgPath, "path %s is the filesystem root%s: give the project directory to gather from", shown(p), via)
	}
	for _, c := range []string{clean, real} {
		if fs, ok := inPseudoFS(c); ok {
			return "", argErr(ArgPath, "path %s is inside %s%s, a system pseudo-filesystem, not source code: give a project directory", shown(p), fs, via)
		}
		if vcs, ok := files.VCSDir(c); ok {
			return "", argErr(ArgPath, "path %s is inside a %s directory%s: repository internals hold credentials and are never gathered; give the work tree above it", shown(p), vcs, via)
		}
	}
	return clean, nil
}

func checkOutputFile(p string) (string, error) {
	if strings.ContainsRune(p, 0) || !filepath.IsAbs(p) {
		return "", argErr(ArgOutputFile, "output_file %s is not an absolute path: give the full path of a new file, e.g. \"/tmp/answer.md\"", shown(p))
	}
	clean := filepath.Clean(p)
	if info, err := os.Stat(clean); err == nil {
		if info.IsDir() {
			return "", argErr(ArgOutputFile, "output_file %s is a directory: give a file path inside it, e.g. %s", shown(p), shown(filepath.Join(clean, "answer.md")))
		}
		if !info.Mode().IsRegular() {
			return "", argErr(ArgOutputFile, "output_file %s is a device, pipe or socket, not a file: give the path of a new file", shown(p))
		}
	}
	dir := filepath.Dir(clean)
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return "", argErr(ArgOutputFile, "output_file %s: its directory %s does not exist; create it first or choose another place", shown(p), shown(dir))
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", argErr(ArgOutputFile, "output_file %s: its directory cannot be resolved: %v", shown(p), unwrapPathError(err))
	}
	for _, c := range []string{dir, realDir} {
		if fs, ok := inPseudoFS(c); ok {
			return "", argErr(ArgOutputFile, "output_file %s is inside %s, a system pseudo-filesystem: give a path in a normal directory", shown(p), fs)
		}
	}
	return clean, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// maxCostLimit bounds max_cost_usd: a cap above it is a mistake (cents typed as dollars).
const maxCostLimit = 10_000

// CheckMaxCost refuses a max_cost_usd that is not a number of dollars above 0 and at most
// 10,000.
func CheckMaxCost(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > maxCostLimit {
		return argErr(ArgMaxCost, "max_cost_usd must be a price in US dollars above 0 and at most %d, e.g. 0.50; got %v", maxCostLimit, v)
	}
	return nil
}
