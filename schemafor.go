package qsf

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// SchemaFor returns a JSON Schema describing the JSON encoding of v's type,
// for GenerateOptions.JSONSchema. Structs become objects of their exported
// fields under their json tag names, with additionalProperties false; a
// field is required unless its tag says omitempty or omitzero, and "-"
// leaves it out. Strings, bools, integers (unsigned ones with minimum 0),
// floats, slices and arrays ([]byte is a base64 string, left unconstrained
// as a string), maps with string keys and pointers (to their element) map
// as encoding/json encodes them; time.Time is a date-time string; named
// struct types go to $defs, so recursive types work. Interfaces and types
// with their own MarshalJSON/MarshalText accept any JSON value (or any
// string). Channels, functions and complex numbers give an error.
func SchemaFor(v any) ([]byte, error) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, fmt.Errorf("qsf: SchemaFor(nil)")
	}
	g := schemaGen{defs: map[string]any{}, names: map[reflect.Type]string{}}
	s, err := g.schema(t)
	if err != nil {
		return nil, err
	}
	if len(g.defs) > 0 {
		s["$defs"] = g.defs
	}
	return json.Marshal(s)
}

type schemaGen struct {
	defs  map[string]any
	names map[reflect.Type]string
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func (g *schemaGen) schema(t reflect.Type) (map[string]any, error) {
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}, nil
	}
	if t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType) {
		return map[string]any{}, nil
	}
	if t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return map[string]any{"type": "string"}, nil
		}
		items, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		s := map[string]any{"type": "array", "items": items}
		if t.Kind() == reflect.Array {
			s["minItems"], s["maxItems"] = t.Len(), t.Len()
		}
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("qsf: SchemaFor: map key type %v is not a string", t.Key())
		}
		values, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name, ok := g.names[t]
		if !ok {
			name = t.Name()
			for i := 2; g.defs[name] != nil; i++ {
				name = fmt.Sprintf("%s%d", t.Name(), i)
			}
			g.names[t] = name
			g.defs[name] = map[string]any{} // placeholder while recursing
			s, err := g.object(t)
			if err != nil {
				return nil, err
			}
			g.defs[name] = s
		}
		return map[string]any{"$ref": "#/$defs/" + name}, nil
	}
	return nil, fmt.Errorf("qsf: SchemaFor: type %v has no JSON encoding", t)
}

// object describes a struct's fields; fields of embedded structs are
// promoted as encoding/json does (without its conflict rules).
func (g *schemaGen) object(t reflect.Type) (map[string]any, error) {
	props := orderedProps{}
	var required []string
	if err := g.fields(t, &props, &required); err != nil {
		return nil, err
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

func (g *schemaGen) fields(t reflect.Type, props *orderedProps, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := g.fields(ft, props, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s, err := g.schema(f.Type)
		if err != nil {
			return fmt.Errorf("%w (field %s.%s)", err, t.Name(), f.Name)
		}
		if strings.Contains(opts, "string") {
			s = map[string]any{"type": "string"}
		}
		props.add(name, s)
		optional := false
		for _, o := range strings.Split(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		if !optional {
			*required = append(*required, name)
		}
	}
	return nil
}

// orderedProps marshals as a JSON object with its keys in field order,
// which the generated JSON follows.
type orderedProps struct {
	keys []string
	vals []any
}

func (p *orderedProps) add(k string, v any) {
	for i, old := range p.keys {
		if old == k {
			p.vals[i] = v
			return
		}
	}
	p.keys = append(p.keys, k)
	p.vals = append(p.vals, v)
}

func (p orderedProps) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range p.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(p.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
