package consult

import (
	"errors"
	"testing"
)

// TestArgErrorNamed: each form words the refusal from its fields with the name given, so a
// caller that knows the argument by another name (a flag) gets it without a sentence edited.
func TestArgErrorNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		err       ArgError
		tool, cli string
	}{
		{"value, rule and fix", ArgError{Arg: "path", Value: `"rel"`, Rule: "is not absolute", Fix: "give the full path"},
			`path "rel" is not absolute: give the full path`, `--path "rel" is not absolute: give the full path`},
		{"a must rule takes the value after it", ArgError{Arg: "timeout", Value: "0", Rule: "must be a number of seconds from 1 to 600"},
			"timeout must be a number of seconds from 1 to 600; got 0", "--timeout must be a number of seconds from 1 to 600; got 0"},
		{"a rule after a colon", ArgError{Arg: "model", Value: `"m|thinking=x"`, Rule: ": the thinking budget must be a whole number"},
			`model "m|thinking=x": the thinking budget must be a whole number`, `--model "m|thinking=x": the thinking budget must be a whole number`},
		{"no value", ArgError{Arg: "query", Rule: "is not valid UTF-8 text", Fix: "send plain text"},
			"query is not valid UTF-8 text: send plain text", "--query is not valid UTF-8 text: send plain text"},
		{"as sent", ArgError{Arg: "query", Rule: "is empty", Fix: "give the question", Form: ArgSent},
			`argument "query" is empty: give the question`, `argument "--query" is empty: give the question`},
		{"missing", ArgError{Arg: "path", Fix: "give the directory", Form: ArgMissing},
			`missing required argument "path": give the directory`, `missing required argument "--path": give the directory`},
		{"unknown", ArgError{Arg: "paht", Value: `"paht", "x"`, Rule: `(did you mean "path"?)`, Fix: "consultation takes path", Form: ArgUnknown},
			`unknown argument "paht", "x" (did you mean "path"?): consultation takes path`, `unknown argument "paht", "x" (did you mean "path"?): consultation takes path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, want := tc.err.Error(), tc.tool; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
			if got, want := tc.err.Named("--"+tc.err.Arg), tc.cli; got != want {
				t.Errorf("Named = %q, want %q", got, want)
			}
			if !errors.Is(&tc.err, ErrInvalidArgument) {
				t.Error("does not wrap ErrInvalidArgument")
			}
		})
	}
}
