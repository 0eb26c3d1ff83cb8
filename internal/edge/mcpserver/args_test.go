package mcpserver

import (
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/tooldefs"
)

// The decodings of each tool's arguments as the handlers make them; timeout is the rule the
// consultation's timeout is checked against (the server's default in it).
func consultationRequest(raw map[string]any, timeout consultation.SecondsRule) (consultation.Request, error) {
	return tooldefs.Decode[consultation.Request](tooldefs.ConsultationName, raw, timeout.Number(), consultation.MaxCost)
}

func resultRequest(raw map[string]any) (background.ResultArgs, error) {
	return tooldefs.Decode[background.ResultArgs](tooldefs.ResultName, raw, background.ResultArgRules...)
}

func cancelRequest(raw map[string]any) (background.CancelArgs, error) {
	return tooldefs.Decode[background.CancelArgs](tooldefs.CancelName, raw)
}

// toolArgs is, for each tool, a valid argument map with every argument given, and the
// decoding of it into the value the use case takes.
func toolArgs(dir string) []struct {
	tool   mcp.Tool
	full   map[string]any
	decode func(map[string]any) (any, error)
} {
	return []struct {
		tool   mcp.Tool
		full   map[string]any
		decode func(map[string]any) (any, error)
	}{
		{tooldefs.Consultation(tooldefs.Server{}), map[string]any{
			"path": dir, "pattern": "**/*.go", "query": "q", "model": "o3|thinking", "exclude_pattern": "vendor/**",
			"timeout": 30.0, "output_file": dir + "/a.md", "dry_run": true, "on_timeout": "continue", "max_cost_usd": 0.5, "follow_up_of": "20260101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa",
		}, func(raw map[string]any) (any, error) {
			return consultationRequest(raw, consultation.SecondsRule{Arg: "timeout", Min: time.Second, Max: 600 * time.Second, Default: 22 * time.Second})
		}},
		{tooldefs.Result(), map[string]any{"id": "20260101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa", "wait": 5.0, "offset": 3.0},
			func(raw map[string]any) (any, error) { return resultRequest(raw) }},
		{tooldefs.Cancel(), map[string]any{"id": "20260101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa"},
			func(raw map[string]any) (any, error) { return cancelRequest(raw) }},
	}
}

// declared are the names of the arguments tool declares, sorted.
func declared(tool mcp.Tool) []string { return slices.Sorted(maps.Keys(tool.InputSchema.Properties)) }

// TestDecodedNamesAreTheSchemas holds the decoding of each tool's arguments to the schema
// the tool declares: each declared argument is read (a wrong type given to it is refused
// under its name) and carried into the request, and a name it does not declare is refused.
func TestDecodedNamesAreTheSchemas(t *testing.T) {
	t.Parallel()
	for _, tc := range toolArgs(t.TempDir()) {
		t.Run(tc.tool.Name, func(t *testing.T) {
			t.Parallel()
			declared := declared(tc.tool)
			if got, want := slices.Sorted(maps.Keys(tc.full)), declared; !slices.Equal(got, want) {
				t.Fatalf("test map gives %q, want every declared argument %q", got, want)
			}
			v, err := tc.decode(tc.full)
			if err != nil {
				t.Fatalf("decoding every argument: %v", err)
			}
			rv := reflect.ValueOf(v)
			for i := range rv.NumField() {
				if rv.Field(i).IsZero() {
					t.Errorf("%s is not carried into the request (%+v)", rv.Type().Field(i).Name, v)
				}
			}
			for _, name := range declared {
				bad := maps.Clone(tc.full)
				bad[name] = []any{"x"}
				_, err := tc.decode(bad)
				var ae *consult.ArgError
				if !errors.As(err, &ae) || ae.Arg != name || !strings.Contains(ae.Error(), "a list") {
					t.Errorf("%s given a list: error %v, want one naming it", name, err)
				}
			}
			bad := maps.Clone(tc.full)
			bad["undeclared"] = true
			if _, err := tc.decode(bad); err == nil || !strings.Contains(err.Error(), `unknown argument "undeclared"`) {
				t.Errorf("an undeclared argument: error %v, want it refused", err)
			}
		})
	}
}

// TestDecodeRefuses checks the refusals decoding makes, with their whole messages: the
// hostile-input battery checks them through a client, this at the lowest layer.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	rule := consultation.SecondsRule{Arg: "timeout", Min: consult.MinTimeout, Max: consult.MaxTimeout, Default: 22 * time.Second}
	ok := map[string]any{"path": "/p", "pattern": "**/*.go", "query": "q"}
	with := func(k string, v any) map[string]any {
		m := maps.Clone(ok)
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	consultationCall := func(raw map[string]any) error { _, err := consultationRequest(raw, rule); return err }
	resultCall := func(raw map[string]any) error { _, err := resultRequest(raw); return err }
	cancelCall := func(raw map[string]any) error { _, err := cancelRequest(raw); return err }
	for _, tc := range []struct {
		name string
		call func(map[string]any) error
		raw  map[string]any
		arg  string
		want string
	}{
		{"missing path", consultationCall, with("path", nil), "path", `missing required argument "path": give the absolute directory to gather files from, e.g. "/home/me/project"`},
		{"missing pattern", consultationCall, with("pattern", nil), "pattern", `missing required argument "pattern": give a glob relative to path, e.g. "**/*.go"`},
		{"null query", consultationCall, map[string]any{"path": "/p", "pattern": "*", "query": nil}, "query", `missing required argument "query": give the question to ask about the files`},
		{"path not a string", consultationCall, with("path", 42.0), "path", `argument "path" must be a string (the absolute directory to gather files from, e.g. "/home/me/project"); got 42`},
		{"model not a string", consultationCall, with("model", true), "model", `argument "model" must be a string; got the boolean true`},
		{"long string shown short", consultationCall, with("exclude_pattern", 1.5), "exclude_pattern", `argument "exclude_pattern" must be a string; got 1.5`},
		{"dry_run a string", consultationCall, with("dry_run", "yes"), "dry_run", `argument "dry_run" must be true or false; got the string "yes"`},
		{"timeout a string", consultationCall, with("timeout", "30"), "timeout", `timeout must be a number of seconds from 1 to 600 (default 22 seconds); got the string "30"`},
		{"timeout an object", consultationCall, with("timeout", map[string]any{"s": 1}), "timeout", `timeout must be a number of seconds from 1 to 600 (default 22 seconds); got an object`},
		{"timeout zero", consultationCall, with("timeout", 0.0), "timeout", `timeout must be a number of seconds from 1 to 600 (default 22 seconds); got 0`},
		{"timeout int zero", consultationCall, with("timeout", 0), "timeout", `timeout must be a number of seconds from 1 to 600 (default 22 seconds); got 0`},
		{"timeout 1e308", consultationCall, with("timeout", 1e308), "timeout", `timeout must be a number of seconds from 1 to 600 (default 22 seconds); got 1e+308`},
		{"timeout smallest denormal", consultationCall, with("timeout", 5e-324), "timeout", `got 5e-324`},
		{"timeout NaN", consultationCall, with("timeout", math.NaN()), "timeout", `got NaN`},
		{"timeout float32", consultationCall, with("timeout", float32(0.1)), "timeout", `got 0.1`},
		{"on_timeout a list", consultationCall, with("on_timeout", []any{"continue"}), "on_timeout", `argument "on_timeout" must be a string; got a list`},
		{"unknown names", consultationCall, with("timeout_seconds", 30.0), "timeout_seconds", `unknown argument "timeout_seconds" (did you mean "timeout"?): consultation takes path, pattern, query, model, exclude_pattern, timeout, output_file, dry_run, on_timeout`},
		{"unknown before missing", consultationCall, map[string]any{"b": 1, "a": 2}, "a", `unknown argument "a", "b": consultation takes`},
		{"result id a number", resultCall, map[string]any{"id": 12}, "id", `argument "id" must be a string; got 12`},
		{"result wait a string", resultCall, map[string]any{"wait": "soon"}, "wait", `wait must be a number of seconds from 1 to 600 (default 20 seconds); got the string "soon"`},
		{"result wait 601", resultCall, map[string]any{"wait": 601}, "wait", `wait must be a number of seconds from 1 to 600 (default 20 seconds); got 601`},
		{"result unknown name", resultCall, map[string]any{"timeout": 5}, "timeout", `unknown argument "timeout": consultation_result takes id, wait`},
		{"cancel without id", cancelCall, map[string]any{}, "id", `missing required argument "id": give the id a consultation returned with "still running"`},
		{"cancel unknown name", cancelCall, map[string]any{"id": "x", "wait": 3}, "wait", `unknown argument "wait": consultation_cancel takes id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.call(tc.raw)
			var ae *consult.ArgError
			if !errors.As(err, &ae) || !errors.Is(err, consult.ErrInvalidArgument) {
				t.Fatalf("error = %v, want an *ArgError", err)
			}
			if got, want := ae.Arg, tc.arg; got != want {
				t.Errorf("names %q, want %q", got, want)
			}
			if got, want := ae.Error(), tc.want; !strings.HasPrefix(got, want) && !strings.HasSuffix(got, want) {
				t.Errorf("message %q, want %q", got, want)
			}
		})
	}
}

// TestDecodeCarries checks what decoding makes of values that are accepted.
func TestDecodeCarries(t *testing.T) {
	t.Parallel()
	rule := consultation.SecondsRule{Arg: "timeout", Min: consult.MinTimeout, Max: consult.MaxTimeout, Default: 22 * time.Second}
	for _, tc := range []struct {
		name string
		raw  map[string]any
		want consultation.Request
	}{
		{"absent optionals", map[string]any{"path": "/p", "pattern": "*", "query": "q"}, consultation.Request{Path: "/p", Pattern: "*", Query: "q"}},
		{"null optionals", map[string]any{"path": "/p", "pattern": "*", "query": "q", "timeout": nil, "model": nil, "dry_run": nil},
			consultation.Request{Path: "/p", Pattern: "*", Query: "q"}},
		{"empty strings are left to the use case", map[string]any{"path": "", "pattern": " ", "query": "q", "on_timeout": ""},
			consultation.Request{Path: "", Pattern: " ", Query: "q"}},
		{"fractional timeout", map[string]any{"path": "/p", "pattern": "*", "query": "q", "timeout": 2.5},
			consultation.Request{Path: "/p", Pattern: "*", Query: "q", Timeout: 2500 * time.Millisecond}},
		{"int timeout", map[string]any{"path": "/p", "pattern": "*", "query": "q", "timeout": int64(600), "on_timeout": "fail"},
			consultation.Request{Path: "/p", Pattern: "*", Query: "q", Timeout: 600 * time.Second, OnTimeout: consultation.OnTimeoutFail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := consultationRequest(tc.raw, rule)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzDecode builds the consultation tool's argument map from fuzzed values, each argument
// of the JSON type the bits of kinds choose (its own, another, null or absent), and checks
// that decoding never panics, that every refusal is an *ArgError naming a declared argument
// or the unknown one sent, and that what it accepts is carried over unchanged. Run with
//
//	go test ./mcpserver -run '^$' -fuzz '^FuzzDecode$' -fuzztime 30s
func FuzzDecode(f *testing.F) {
	f.Add("/p", "q", 30.0, uint8(0), "")
	f.Add("/p", "q", math.NaN(), uint8(0), "")
	f.Add("/p", "q", 1e308, uint8(0), "timeout_seconds")
	f.Add("", "", 0.0, uint8(0xff), "path")
	f.Add("/p", "\xff", 5e-324, uint8(0x55), "x")
	rule := consultation.SecondsRule{Arg: "timeout", Min: consult.MinTimeout, Max: consult.MaxTimeout, Default: 22 * time.Second}
	consultationArgs := declared(tooldefs.Consultation(tooldefs.Server{}))
	f.Fuzz(func(t *testing.T, s, query string, sec float64, kinds uint8, extra string) {
		pick := func(bits uint8, own any) any {
			switch bits & 3 {
			case 0:
				return own
			case 1:
				return sec
			case 2:
				return nil
			}
			return s
		}
		raw := map[string]any{}
		for i, a := range []struct {
			name string
			own  any
		}{{"path", s}, {"query", query}, {"timeout", sec}, {"dry_run", kinds&1 == 0}} {
			if v := pick(kinds>>(2*i), a.own); v != nil || kinds&(1<<i) != 0 {
				raw[a.name] = v
			}
		}
		raw["pattern"] = "*"
		unknown := extra != "" && !slices.Contains(consultationArgs, extra) && !slices.Contains(tooldefs.Injected, extra)
		if extra != "" {
			raw[extra] = s
		}
		req, err := consultationRequest(raw, rule)
		if err != nil {
			var ae *consult.ArgError
			if !errors.As(err, &ae) || strings.TrimSpace(ae.Error()) == "" {
				t.Fatalf("refusal %T %v is not an *ArgError with a message", err, err)
			}
			if unknown && ae.Arg != extra || !unknown && !slices.Contains(consultationArgs, ae.Arg) {
				t.Fatalf("refusal names %q (unknown sent: %q): %s", ae.Arg, extra, ae)
			}
			return
		}
		if unknown {
			t.Fatalf("accepted the unknown argument %q", extra)
		}
		if p, _ := raw["path"].(string); req.Path != p {
			t.Fatalf("path %q became %q", p, req.Path)
		}
		if req.Timeout != 0 && (req.Timeout < consult.MinTimeout || req.Timeout > consult.MaxTimeout) {
			t.Fatalf("accepted timeout %v", req.Timeout)
		}
		if _, given := raw["timeout"]; !given && req.Timeout != 0 {
			t.Fatalf("timeout not given became %v", req.Timeout)
		}
	})
}

// TestInjectedArgumentsAccepted: the arguments clients add to every call on their own
// (Gemini CLI's wait_for_previous) are accepted and ignored by every tool; a misspelt
// argument is still refused, naming the closest one the tool takes.
func TestInjectedArgumentsAccepted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, v := range []any{true, false, "yes"} {
		req, err := consultationRequest(map[string]any{"path": dir, "pattern": "*.go", "query": "q", "wait_for_previous": v}, consultation.SecondsRule{Arg: "timeout", Min: time.Second, Max: time.Minute, Default: time.Second})
		if err != nil || req.Path != dir {
			t.Errorf("consultation with wait_for_previous %v: %v", v, err)
		}
		if _, err := resultRequest(map[string]any{"wait_for_previous": v}); err != nil {
			t.Errorf("consultation_result with wait_for_previous %v: %v", v, err)
		}
		if _, err := cancelRequest(map[string]any{"id": "x", "wait_for_previous": v}); err != nil {
			t.Errorf("consultation_cancel with wait_for_previous %v: %v", v, err)
		}
	}
	_, err := consultationRequest(map[string]any{"paht": dir, "pattern": "*.go", "query": "q"}, consultation.SecondsRule{Arg: "timeout", Min: time.Second, Max: time.Minute})
	if err == nil || !strings.Contains(err.Error(), `did you mean "path"?`) {
		t.Errorf("a misspelt path: %v", err)
	}
}
