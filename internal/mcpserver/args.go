package mcpserver

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/background"
	"github.com/consultmcp/consult/tooldefs"
)

// The tools' arguments arrive as a JSON-decoded map from a client that may send anything.
// Decoding it is this package's: names the tool does not take, values of the wrong type,
// required arguments missing, numbers that are not numbers are refused here, each with an
// *consultation.ArgError naming the argument. What the values mean (a path that exists, a
// glob, a timeout in range) the consultation package checks, for every caller alike.

// The argument names each tool takes, in the order it declares them: the json names of its
// argument type, from which its input schema is derived too.
var (
	consultationArgs = argNames[tooldefs.ConsultationArgs]()
	resultArgs       = argNames[tooldefs.ResultArgs]()
	cancelArgs       = argNames[tooldefs.CancelArgs]()
)

// argNames returns the json names of T's fields, in field order.
func argNames[T any]() []string {
	t := reflect.TypeFor[T]()
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && t.Field(i).IsExported() {
			names = append(names, name)
		}
	}
	return names
}

// consultationRequest decodes the consultation tool's arguments into the request they ask
// for; timeout is the rule its timeout is checked against (the server's default in it).
func consultationRequest(raw map[string]any, timeout consultation.SecondsRule) (consultation.Request, error) {
	var in consultation.Request
	var onTimeout string
	d := decoder{raw: raw}
	d.known(tooldefs.ConsultationName, consultationArgs)
	d.required(consultation.ArgPath, &in.Path)
	d.required(consultation.ArgPattern, &in.Pattern)
	d.required(consultation.ArgQuery, &in.Query)
	d.optional(consultation.ArgModel, &in.Model)
	d.optional(consultation.ArgExclude, &in.Exclude)
	d.optional(consultation.ArgOutputFile, &in.OutputFile)
	d.flag(consultation.ArgDryRun, &in.DryRun)
	in.Timeout = d.seconds(timeout)
	d.optional(consultation.ArgOnTimeout, &onTimeout)
	d.optional(background.ArgFollowUpOf, &in.FollowUpOf)
	d.dollars(consultation.ArgMaxCost, &in.MaxCostUSD)
	if d.err != nil {
		return consultation.Request{}, d.err
	}
	in.OnTimeout = consultation.OnTimeout(onTimeout)
	return in, nil
}

// resultRequest decodes consultation_result's arguments: an optional id, the wait (0 when
// not given: the default) and the offset of a page of a long answer (-1 when not given).
func resultRequest(raw map[string]any) (id string, wait time.Duration, offset int, err error) {
	d := decoder{raw: raw}
	d.known(tooldefs.ResultName, resultArgs)
	d.optional(background.ArgID, &id)
	wait = d.seconds(background.WaitRule())
	offset = d.offset(background.ArgOffset)
	if d.err == nil && offset >= 0 && id == "" {
		d.refuse(background.ArgOffset, "offset needs id: it names where the next page of that consultation's answer starts")
	}
	return id, wait, offset, d.err
}

// offset reads a non-negative whole number of bytes; -1 when absent.
func (d *decoder) offset(name string) int {
	v, ok := d.value(name)
	if !ok {
		return -1
	}
	f, isNum := v.(float64)
	if !isNum || f < 0 || f != float64(int64(f)) || f > 1<<40 {
		d.refuse(name, "%s must be a whole number of bytes, 0 or more, as next.arguments.offset of the previous page gave it; got %s", name, describe(v))
		return -1
	}
	return int(f)
}

// cancelRequest decodes consultation_cancel's argument, the id.
func cancelRequest(raw map[string]any) (id string, err error) {
	d := decoder{raw: raw}
	d.known(tooldefs.CancelName, cancelArgs)
	d.required(background.ArgID, &id)
	return id, d.err
}

// decoder reads a tool's arguments one by one; the first refusal is kept and the reads
// after it do nothing.
type decoder struct {
	raw map[string]any
	err error
}

func (d *decoder) refuse(name, format string, a ...any) {
	d.err = &consultation.ArgError{Arg: name, Msg: fmt.Sprintf(format, a...)}
}

// Injected are the arguments supported clients add to every tool call on their own, which
// consult accepts and ignores: Gemini CLI adds wait_for_previous (and tells its models to
// set it on a call that depends on an earlier one, such as consultation_result).
var Injected = []string{"wait_for_previous"}

// known refuses arguments the tool does not take, naming the closest one it does and all of
// them; the arguments clients inject (Injected) are accepted and ignored.
func (d *decoder) known(tool string, names []string) {
	var unknown []string
	for k := range d.raw {
		if !slices.Contains(names, k) && !slices.Contains(Injected, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 || d.err != nil {
		return
	}
	sort.Strings(unknown)
	hint := ""
	if near := closest(unknown[0], names); near != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", near)
	}
	d.refuse(unknown[0], "unknown argument %s%s: %s takes %s", quoteList(unknown), hint, tool, strings.Join(names, ", "))
}

// closest is the name in names nearest to s by edit distance, when it is near enough to be a
// likely slip (about a third of its length away or less), else "".
func closest(s string, names []string) string {
	if len(s) > 64 {
		return ""
	}
	ls := strings.ToLower(s)
	for _, n := range names { // "timeout_seconds", "query_text": a known name inside
		if len(n) >= 4 && strings.Contains(ls, n) {
			return n
		}
	}
	best, bestD := "", len(s)/3+2
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// value returns the argument name, or false when it is absent or null.
func (d *decoder) value(name string) (any, bool) {
	if d.err != nil {
		return nil, false
	}
	v, ok := d.raw[name]
	return v, ok && v != nil
}

// typed reads the argument name into dst when it is a T, and refuses it, saying it must be
// must, when it is not; it reports whether dst was set.
func typed[T any](d *decoder, name, must string, dst *T) bool {
	v, ok := d.value(name)
	if !ok {
		return false
	}
	t, ok := v.(T)
	if !ok {
		d.refuse(name, "argument %q must be %s; got %s", name, must, describe(v))
		return false
	}
	*dst = t
	return true
}

// required reads a string the tool cannot do without. An empty one is the consultation
// package's to refuse, with what the argument is for.
func (d *decoder) required(name string, dst *string) {
	if _, ok := d.value(name); !ok && d.err == nil {
		d.refuse(name, "missing required argument %q: give %s", name, consultation.Wanted(name))
	}
	typed(d, name, "a string ("+consultation.Wanted(name)+")", dst)
}

// optional reads a string that may be absent.
func (d *decoder) optional(name string, dst *string) { typed(d, name, "a string", dst) }

// flag reads a boolean that may be absent.
func (d *decoder) flag(name string, dst *bool) { typed(d, name, "true or false", dst) }

// dollars reads a price in US dollars that may be absent; one given is checked by
// consultation.CheckMaxCost (so 0, which would mean no cap, is refused when given).
func (d *decoder) dollars(name string, dst *float64) {
	var f float64
	if !typed(d, name, "a number of US dollars, e.g. 0.50", &f) {
		return
	}
	if err := consultation.CheckMaxCost(f); err != nil {
		d.err = err
		return
	}
	*dst = f
}

// seconds reads a number of seconds that may be absent, and returns it as a duration
// checked against rule (0 when absent: the default applies).
func (d *decoder) seconds(rule consultation.SecondsRule) time.Duration {
	v, ok := d.value(rule.Arg)
	if !ok {
		return 0
	}
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
		d.err = rule.Refuse(describe(v))
		return 0
	}
	dur, err := rule.FromSeconds(f)
	if err != nil {
		d.err = rule.Refuse(describe(v)) // the value as given, not as converted
		return 0
	}
	return dur
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
