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
)

// The tools' input and output schemas are derived from Go types, so that the declaration a
// client reads and the values the server decodes or returns cannot drift apart. A field
// declares a property through its tags:
//
//	json:"name[,omitempty]"  the property's name; a field without one, or with "-", is not declared
//	desc:"..."               the property's description (none when absent: tokens cost)
//	enum:"a,b|c"             the values allowed; those after "|" only in a listing
//	schema:"required"        the argument must be given
//	schema:"list"            declared only by consultation_result, whose answer may be a listing
//	schema:"undeclared"      returned but not declared (the declaration has a token budget)
//
// Numbers' bounds and defaults are not tags: they are the limits the arguments are checked
// against and the server's configuration, set by the tool that declares them (see seconds).

// property is one derived property: its name, its schema and whether it is required.
type property struct {
	name     string
	schema   map[string]any
	required bool
}

// derive returns the properties T declares, in field order. listing includes the fields
// tagged schema:"list".
func derive[T any](listing bool) []property {
	t := reflect.TypeFor[T]()
	var props []property
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
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
		props = append(props, property{name: name, schema: s, required: slices.Contains(flags, "required")})
	}
	return props
}

// jsonType is the JSON schema type of Go values of type t, as encoding/json writes them.
func jsonType(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "string"
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

// input is the input schema of a tool whose arguments are T; adjust may complete a
// property's schema (bounds, defaults, descriptions built from limits).
func input[T any](adjust func(name string, schema map[string]any)) mcp.ToolOption {
	return func(tool *mcp.Tool) {
		s := mcp.ToolInputSchema{Type: "object", Properties: map[string]any{}}
		for _, p := range derive[T](false) {
			if adjust != nil {
				adjust(p.name, p.schema)
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
