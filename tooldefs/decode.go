package tooldefs

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
)

// Injected are the arguments supported clients add to every tool call on their own, which
// consult accepts and ignores: Gemini CLI adds wait_for_previous (and tells its models to
// set it on a call that depends on an earlier one, such as consultation_result).
var Injected = []string{"wait_for_previous"}

// Decode reads the arguments of a call of tool, a JSON-decoded map from a client that may
// send anything, into an In by the properties In declares (see derive). It refuses, each with
// a *consult.ArgError naming the argument: a name In does not declare (with the closest one
// it does), a required argument missing, a value not of its field's JSON type, and a number
// its rule (among rules, by argument) does not keep; a number of seconds becomes a
// time.Duration. An argument absent or null leaves its field zero (a pointer nil). What a
// string means (a path that exists, a glob) is the use case's to check, for every caller
// alike. The arguments clients inject (Injected) are ignored.
func Decode[In any](tool string, raw map[string]any, rules ...consultation.NumberRule) (In, error) {
	var in In
	props := derive[In](false)
	if err := known(tool, props, raw); err != nil {
		return in, err
	}
	fields := reflect.ValueOf(&in).Elem()
	for _, p := range props {
		switch v := raw[p.name]; {
		case v == nil && p.required: // absent or null
			return in, &consult.ArgError{Arg: p.name, Fix: "give " + p.want, Form: consult.ArgMissing}
		case v != nil:
			if err := p.decode(fields.Field(p.index), v, rules); err != nil {
				return in, err
			}
		}
	}
	return in, nil
}

// decode stores v, given for p, in its field f.
func (p property) decode(f reflect.Value, v any, rules []consultation.NumberRule) error {
	if f.Kind() == reflect.Pointer {
		f.Set(reflect.New(f.Type().Elem()))
		f = f.Elem()
	}
	sent := func(must string) error {
		return &consult.ArgError{Arg: p.name, Value: describe(v), Rule: "must be " + must, Form: consult.ArgSent}
	}
	switch f.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok && p.want != "" {
			return sent("a string (" + p.want + ")")
		} else if !ok {
			return sent("a string")
		}
		f.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return sent("true or false")
		}
		f.SetBool(b)
	default: // a number: JSON's float64, or a Go number from a caller in the same process
		rule := ruleOf(rules, p.name, func(r consultation.NumberRule) string { return r.Arg })
		var n float64
		switch x := reflect.ValueOf(v); {
		case x.CanFloat():
			n = x.Float()
		case x.CanInt():
			n = float64(x.Int())
		default:
			return rule.Refuse(describe(v))
		}
		if !rule.OK(n) {
			return rule.Refuse(describe(v)) // the value as given, not as converted
		}
		switch {
		case p.typ == durationType:
			f.SetInt(int64(n * float64(time.Second)))
		case f.CanFloat():
			f.SetFloat(n)
		default:
			f.SetInt(int64(n))
		}
	}
	return nil
}

// known refuses arguments the tool does not take, naming the closest one it does and all of
// them; the arguments clients inject (Injected) are accepted and ignored.
func known(tool string, props []property, raw map[string]any) error {
	var names, unknown []string
	for _, p := range props {
		names = append(names, p.name)
	}
	for k := range raw {
		if !slices.Contains(names, k) && !slices.Contains(Injected, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	hint := ""
	if near := closest(unknown[0], names); near != "" {
		hint = fmt.Sprintf("(did you mean %q?)", near)
	}
	return &consult.ArgError{Arg: unknown[0], Value: quoteList(unknown), Rule: hint,
		Fix: tool + " takes " + strings.Join(names, ", "), Form: consult.ArgUnknown}
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
		if d := consult.EditDistance(ls, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
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
	case float64, float32, int, int64:
		return fmt.Sprint(x) // a float as %g
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
