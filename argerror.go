package consult

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidArgument is wrapped by every refusal of a caller's arguments (see ArgError):
// they break a rule, and nothing was read or sent.
var ErrInvalidArgument = errors.New("invalid argument")

// ArgError is a refused argument as data: the argument, the value given, the rule it breaks
// and the fix. Error words it with the argument's own name, Named with the name a caller
// knows it by (the command line's flag), so that no caller edits a finished sentence.
type ArgError struct {
	// Arg is the argument, as the tool declares it.
	Arg string `json:"arg"`
	// Value is the value given as the words show it (`"rel"`, `the boolean true`); "" when
	// they do not show it.
	Value string `json:"value,omitempty"`
	// Rule is what is wrong, said of the argument: "is not absolute", "must be a string". A
	// rule that says what the value must be ("must ...") is followed by the value given; one
	// that starts with a colon follows the value without a space.
	Rule string `json:"rule,omitempty"`
	// Fix says what to do, when the rule does not.
	Fix string `json:"fix,omitempty"`
	// Form is how the words present the argument.
	Form ArgForm `json:"form,omitempty"`
}

// ArgForm is how an ArgError's words present the argument: by its value (ArgValue: `path
// "rel" is not absolute: give …`, `timeout must be …; got 0`), as sent (ArgSent, of another
// JSON type or empty: `argument "path" is empty: give …`), missing (ArgMissing: `missing
// required argument "path": give …`), or as names the tool does not take, listed in Value
// (ArgUnknown: `unknown argument "paht" (did you mean "path"?): consultation takes …`).
type ArgForm string

// The forms.
const (
	ArgValue   ArgForm = ""
	ArgSent    ArgForm = "sent"
	ArgMissing ArgForm = "missing"
	ArgUnknown ArgForm = "unknown"
)

func (e *ArgError) Error() string { return e.Named(e.Arg) }

// Unwrap lets errors.Is(err, ErrInvalidArgument) hold.
func (e *ArgError) Unwrap() error { return ErrInvalidArgument }

// Named words the refusal with the argument called name.
func (e *ArgError) Named(name string) string {
	var b strings.Builder
	must := strings.HasPrefix(e.Rule, "must ")
	switch e.Form {
	case ArgUnknown:
		b.WriteString("unknown argument " + e.Value)
	case ArgMissing:
		fmt.Fprintf(&b, "missing required argument %q", name)
	case ArgSent:
		fmt.Fprintf(&b, "argument %q", name)
	default:
		b.WriteString(name)
		if e.Value != "" && !must {
			b.WriteString(" " + e.Value)
		}
	}
	if e.Rule != "" && !strings.HasPrefix(e.Rule, ":") {
		b.WriteByte(' ')
	}
	b.WriteString(e.Rule)
	if must {
		b.WriteString("; got " + e.Value)
	}
	if e.Fix != "" {
		b.WriteString(": " + e.Fix)
	}
	return b.String()
}
