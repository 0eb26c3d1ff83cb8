package tooldefs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/consultation"
)

// The tools' input and output schemas are derived from Go types, and a call's arguments are
// decoded by the same derivation (Decode), so that the declaration a client reads and the
// values the server decodes or returns cannot drift apart. A field declares a property
// through its tags:
//
//	json:"name[,omitempty]"  the property's name; a field without one, or with "-", is not
//	                         declared; an argument without omitempty is required
//	desc:"..."               the property's description (none when absent: tokens cost)
//	want:"..."               what a required argument holds, for the refusals that ask for it
//	enum:"a,b|c"             the values allowed; those after "|" only in a listing
//	schema:"list"            declared only by consultation_result, whose answer may be a listing
//	schema:"undeclared"      returned but not declared (the declaration has a token budget)
//
// Numbers' bounds and defaults are not tags: they are the rules the arguments are checked by,
// with the server's configuration, given to the tool that declares them and to Decode. A
// time.Duration is a number of seconds: its description is followed by its rule's bounds,
// which it declares with the rule's default.

// durationType is the type of arguments given in seconds.
var durationType = reflect.TypeFor[time.Duration]()

// property is one derived property: its name, its schema, whether it is required, and for
// decoding its field (index, type) and what it holds (want).
type property struct {
	name     string
	schema   map[string]any
	required bool
	index    int
	typ      reflect.Type
	want     string
}

// derive returns the properties T declares, in field order. listing includes the fields
// tagged schema:"list".
func derive[T any](listing bool) []property {
	t := reflect.TypeFor[T]()
	var props []property
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		flags := strings.Split(f.Tag.Get("schema"), ",")
		if slices.Contains(flags, "undeclared") || slices.Contains(flags, "list") && !listing {
			continue
		}
		s := map[string]any{"type": jsonType(f.Type)}
		if d := f.Tag.Get("desc"); d != "" {
			s["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			all, more, _ := strings.Cut(e, "|")
			if listing && more != "" {
				all += "," + more
			}
			s["enum"] = strings.Split(all, ",")
		}
		if s["type"] == "array" {
			// An array's description describes its items.
			items := map[string]any{"type": jsonType(f.Type.Elem())}
			if d, ok := s["description"]; ok {
				items["description"] = d
				delete(s, "description")
			}
			s["items"] = items
		}
		props = append(props, property{name: name, schema: s, required: !slices.Contains(strings.Split(opts, ","), "omitempty"),
			index: i, typ: f.Type, want: f.Tag.Get("want")})
	}
	return props
}

// jsonType is the JSON schema type of Go values of type t, as encoding/json writes them.
func jsonType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Time]():
		return "string"
	case durationType:
		return "number"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	panic(fmt.Sprintf("tooldefs: no JSON schema type for %s", t))
}

// input is the input schema of a tool whose arguments are T; seconds are the rules of its
// arguments given in seconds.
func input[T any](seconds ...consultation.SecondsRule) mcp.ToolOption {
	return func(tool *mcp.Tool) {
		s := mcp.ToolInputSchema{Type: "object", Properties: map[string]any{}}
		for _, p := range derive[T](false) {
			if p.typ == durationType {
				r := ruleOf(seconds, p.name, func(r consultation.SecondsRule) string { return r.Arg })
				p.schema["description"] = fmt.Sprintf("%s, %g-%g.", p.schema["description"], r.Min.Seconds(), r.Max.Seconds())
				p.schema["minimum"], p.schema["maximum"], p.schema["default"] = r.Min.Seconds(), r.Max.Seconds(), r.Default.Seconds()
			}
			s.Properties[p.name] = p.schema
			if p.required {
				s.Required = append(s.Required, p.name)
			}
		}
		tool.InputSchema = s
	}
}

// output is the output schema of a tool whose structured results are T: properties in
// field order, kind required, kept compact (agents pay for it on every turn).
func output[T any](listing bool) mcp.ToolOption {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, p := range derive[T](listing) {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(p.name)
		b.Write(name)
		b.WriteByte(':')
		schema, err := json.Marshal(order(p.schema))
		if err != nil {
			panic(err) // strings and string slices only
		}
		b.Write(schema)
	}
	b.WriteString(`},"required":["kind"]}`)
	return mcp.WithRawOutputSchema(json.RawMessage(b.Bytes()))
}

// ordered is a property's schema with its keys in a fixed, readable order.
type ordered struct {
	Type        any      `json:"type"`
	Enum        any      `json:"enum,omitempty"`
	Items       *ordered `json:"items,omitempty"`
	Description any      `json:"description,omitempty"`
}

// order puts a derived property's schema in that order.
func order(s map[string]any) *ordered {
	o := &ordered{Type: s["type"], Enum: s["enum"], Description: s["description"]}
	if items, ok := s["items"].(map[string]any); ok {
		o.Items = order(items)
	}
	return o
}

// ruleOf is the rule among rules for the argument name (its name given by arg); a number
// argument without one is a mistake in its tool's definition.
func ruleOf[R any](rules []R, name string, arg func(R) string) R {
	i := slices.IndexFunc(rules, func(r R) bool { return arg(r) == name })
	if i < 0 {
		panic("tooldefs: no rule for the number argument " + name)
	}
	return rules[i]
}
