package consultation

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/models"
)

// ErrInvalidArgument is wrapped by every error ParseArgs returns: the caller's arguments
// break a rule, and nothing was read or sent.
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

func argErr(arg, format string, a ...any) error {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// Argument names, as the tool declares them.
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
)

// The values of on_timeout.
const (
	// OnTimeoutFail ends the call at its timeout with an error that says what was collected.
	OnTimeoutFail = "fail"
	// OnTimeoutContinue returns "still running" with an id at the timeout and lets the
	// consultation finish in the background, to be collected with consultation_result.
	OnTimeoutContinue = "continue"
)

var knownArgs = []string{ArgPath, ArgPattern, ArgQuery, ArgModel, ArgExclude, ArgTimeout, ArgOutputFile, ArgDryRun, ArgOnTimeout}

// Request is a validated consultation.
type Request struct {
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
	// DryRun asks for gathering and counting only.
	DryRun bool
	// Continue is on_timeout "continue": at Timeout the call returns an id and the
	// consultation goes on in the background.
	Continue bool
	// Warnings are notes about accepted arguments the caller should see (e.g. a long timeout).
	Warnings []string
}

// ParseArgs validates raw tool arguments (as decoded from JSON) and returns the request.
// It reads no file: it only stats path and output_file's parent. Every failure is an
// *ArgError wrapping ErrInvalidArgument whose message names the value and the rule.
func ParseArgs(raw map[string]any, defaultTimeout time.Duration) (Request, error) {
	var req Request
	if err := checkKnown(raw, "consultation", knownArgs); err != nil {
		return req, err
	}

	var err error
	if req.Path, err = requiredString(raw, ArgPath, "the absolute directory to gather files from, e.g. \"/home/me/project\""); err != nil {
		return req, err
	}
	if req.Pattern, err = requiredString(raw, ArgPattern, "a glob relative to path, e.g. \"**/*.go\""); err != nil {
		return req, err
	}
	if req.Query, err = requiredString(raw, ArgQuery, "the question to ask about the files"); err != nil {
		return req, err
	}
	modelRaw, err := optionalString(raw, ArgModel)
	if err != nil {
		return req, err
	}
	if req.Exclude, err = optionalString(raw, ArgExclude); err != nil {
		return req, err
	}
	if req.OutputFile, err = optionalString(raw, ArgOutputFile); err != nil {
		return req, err
	}
	if req.DryRun, err = optionalBool(raw, ArgDryRun); err != nil {
		return req, err
	}
	if req.Timeout, err = parseSeconds(raw, ArgTimeout, defaultTimeout, consult.MinTimeout, consult.MaxTimeout); err != nil {
		return req, err
	}
	onTimeout, err := optionalString(raw, ArgOnTimeout)
	if err != nil {
		return req, err
	}
	switch onTimeout {
	case "", OnTimeoutFail:
	case OnTimeoutContinue:
		req.Continue = true
	default:
		return req, argErr(ArgOnTimeout, "on_timeout must be %q (the default: stop at timeout and report) or %q (return an id at timeout and finish in the background); got %s", OnTimeoutFail, OnTimeoutContinue, shown(onTimeout))
	}
	// A long timeout the caller chose is worth a warning; the server's own default is warned
	// of once at start-up, and a dry run never waits on a model.
	if _, given := raw[ArgTimeout]; given && req.Timeout >= consult.TimeoutWarnAt && !req.DryRun {
		fix := "retry with a smaller pattern or a shorter timeout"
		if req.Continue {
			fix = "retry with a timeout under your client's limit: the consultation then continues in the background"
		}
		req.Warnings = append(req.Warnings, longWaitWarning(ArgTimeout, req.Timeout, fix))
	}

	if err := checkQuery(req.Query); err != nil {
		return req, err
	}
	if req.Model, err = models.ParseSpec(modelRaw); err != nil {
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

// checkKnown refuses arguments the tool does not take, naming the ones it does.
func checkKnown(raw map[string]any, tool string, known []string) error {
	var unknown []string
	for k := range raw {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return argErr(unknown[0], "unknown argument %s: %s takes %s", quoteList(unknown), tool, strings.Join(known, ", "))
}

func requiredString(raw map[string]any, name, what string) (string, error) {
	v, ok := raw[name]
	if !ok || v == nil {
		return "", argErr(name, "missing required argument %q: give %s", name, what)
	}
	s, ok := v.(string)
	if !ok {
		return "", argErr(name, "argument %q must be a string (%s); got %s", name, what, describe(v))
	}
	if strings.TrimSpace(s) == "" {
		return "", argErr(name, "argument %q is empty: give %s", name, what)
	}
	return s, nil
}

func optionalString(raw map[string]any, name string) (string, error) {
	v, ok := raw[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", argErr(name, "argument %q must be a string; got %s", name, describe(v))
	}
	return s, nil
}

func optionalBool(raw map[string]any, name string) (bool, error) {
	v, ok := raw[name]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, argErr(name, "argument %q must be true or false; got %s", name, describe(v))
	}
	return b, nil
}

// longWaitWarning is the note on a wait (timeout, wait) long enough for clients to give up.
func longWaitWarning(arg string, d time.Duration, fix string) string {
	return fmt.Sprintf("%s %s accepted, but many MCP clients give up on a tool call after about 25-60 s unless they reset their clock on progress notifications; if this call is cut off, %s",
		arg, formatSeconds(d), fix)
}

// parseSeconds reads an optional number of seconds in [lo, hi], def when absent.
func parseSeconds(raw map[string]any, name string, def, minD, maxD time.Duration) (time.Duration, error) {
	v, ok := raw[name]
	if !ok || v == nil {
		return def, nil
	}
	lo, hi := minD.Seconds(), maxD.Seconds()
	rule := fmt.Sprintf("%s must be a number of seconds from %g to %g (default %s)", name, lo, hi, formatSeconds(def))
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	default:
		return 0, argErr(name, "%s; got %s", rule, describe(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < lo || f > hi {
		return 0, argErr(name, "%s; got %s", rule, describe(v))
	}
	return time.Duration(f * float64(time.Second)), nil
}

func checkQuery(q string) error {
	if !utf8.ValidString(q) {
		return argErr(ArgQuery, "query is not valid UTF-8 text: send the question as plain text")
	}
	if n := consult.Bytes(len(q)); n > consult.MaxQueryBytes {
		return argErr(ArgQuery, "query is %s; the limit is %s: put long material in a file under path and gather it with pattern instead", n, consult.MaxQueryBytes)
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

// describe renders a JSON-decoded value for an error message: its type and a short form.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case float64:
		return fmt.Sprintf("%g", x)
	case float32, int, int64:
		return fmt.Sprintf("%v", x)
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func formatSeconds(d time.Duration) string {
	return fmt.Sprintf("%g s", d.Seconds())
}
