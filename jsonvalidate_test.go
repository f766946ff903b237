package qsf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// validateJSON parses text as one JSON value and checks it against schema,
// for the keywords grammar/jsonschema supports. It is an independent
// checker: it shares no code with the grammar.
func validateJSON(schema, text string) error {
	var root, value any
	if err := json.Unmarshal([]byte(schema), &root); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&value); err != nil {
		return fmt.Errorf("output is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("output has data after the JSON value")
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("output is not valid UTF-8")
	}
	return validate(root, root, value, "$")
}

func validate(root, schema, v any, path string) error {
	if b, ok := schema.(bool); ok {
		if !b {
			return fmt.Errorf("%s: schema false", path)
		}
		return nil
	}
	s := schema.(map[string]any)
	if ref, ok := s["$ref"].(string); ok {
		target := root
		if ref != "#" {
			parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
			for _, p := range parts {
				target = target.(map[string]any)[p]
			}
		}
		return validate(root, target, v, path)
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		return fmt.Errorf("%s: %v is not the const %v", path, v, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || jsonEqual(x, v)
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum", path, v)
		}
	}
	if list, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, sub := range list {
			if err := validate(root, sub, v, path); err == nil {
				errs = nil
				break
			} else {
				errs = append(errs, err.Error())
			}
		}
		if errs != nil {
			return fmt.Errorf("%s: no anyOf branch matches: %s", path, strings.Join(errs, "; "))
		}
	}
	if list, ok := s["oneOf"].([]any); ok {
		n := 0
		for _, sub := range list {
			if validate(root, sub, v, path) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %d oneOf branches match", path, n)
		}
	}
	if t, ok := s["type"]; ok {
		types, _ := t.([]any)
		if name, ok := t.(string); ok {
			types = []any{name}
		}
		matched := false
		for _, name := range types {
			matched = matched || hasType(v, name.(string))
		}
		if !matched {
			return fmt.Errorf("%s: %v is not of type %v", path, v, t)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := v[r.(string)]; !ok {
				return fmt.Errorf("%s: required %q missing", path, r)
			}
		}
		for k, x := range v {
			sub, ok := props[k]
			if !ok {
				ap, present := s["additionalProperties"]
				if present && ap == false || !present && props != nil {
					// The grammar generates only listed properties unless
					// additionalProperties allows more.
					return fmt.Errorf("%s: property %q not allowed", path, k)
				}
				if present {
					sub = ap
				} else {
					sub = true
				}
			}
			if err := validate(root, sub, x, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if n, ok := intOf(s["minItems"]); ok && len(v) < n {
			return fmt.Errorf("%s: %d items < minItems %d", path, len(v), n)
		}
		if n, ok := intOf(s["maxItems"]); ok && len(v) > n {
			return fmt.Errorf("%s: %d items > maxItems %d", path, len(v), n)
		}
		prefix := asList(s["prefixItems"])
		for i, x := range v {
			sub, ok := s["items"]
			if i < len(prefix) {
				sub, ok = prefix[i], true
			}
			if !ok {
				continue
			}
			if err := validate(root, sub, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case string:
		n := utf8.RuneCountInString(v)
		if m, ok := intOf(s["minLength"]); ok && n < m {
			return fmt.Errorf("%s: %q shorter than %d", path, v, m)
		}
		if m, ok := intOf(s["maxLength"]); ok && n > m {
			return fmt.Errorf("%s: %q longer than %d", path, v, m)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			return fmt.Errorf("%s: %q does not match %s", path, v, p)
		}
		if f, ok := s["format"].(string); ok {
			if err := checkFormat(f, v); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	case json.Number:
		x, _ := new(big.Rat).SetString(string(v))
		bound := func(kw string) (*big.Rat, bool) {
			b, ok := s[kw].(float64)
			if !ok {
				return nil, false
			}
			return new(big.Rat).SetFloat64(b), true
		}
		if b, ok := bound("minimum"); ok && x.Cmp(b) < 0 {
			return fmt.Errorf("%s: %v < minimum", path, v)
		}
		if b, ok := bound("maximum"); ok && x.Cmp(b) > 0 {
			return fmt.Errorf("%s: %v > maximum", path, v)
		}
		if b, ok := bound("exclusiveMinimum"); ok && x.Cmp(b) <= 0 {
			return fmt.Errorf("%s: %v <= exclusiveMinimum", path, v)
		}
		if b, ok := bound("exclusiveMaximum"); ok && x.Cmp(b) >= 0 {
			return fmt.Errorf("%s: %v >= exclusiveMaximum", path, v)
		}
	}
	return nil
}

func asList(x any) []any { l, _ := x.([]any); return l }

func intOf(x any) (int, bool) {
	f, ok := x.(float64)
	return int(f), ok
}

func hasType(v any, name string) bool {
	switch v := v.(type) {
	case map[string]any:
		return name == "object"
	case []any:
		return name == "array"
	case string:
		return name == "string"
	case bool:
		return name == "boolean"
	case nil:
		return name == "null"
	case json.Number:
		if name == "number" {
			return true
		}
		r, ok := new(big.Rat).SetString(string(v))
		return name == "integer" && ok && r.IsInt()
	}
	return false
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func checkFormat(f, v string) error {
	var err error
	switch f {
	case "date":
		_, err = time.Parse("2006-01-02", v)
	case "time":
		_, err = time.Parse("15:04:05.999999999Z07:00", v)
	case "date-time":
		_, err = time.Parse(time.RFC3339Nano, v)
	case "uuid":
		if !uuidRE.MatchString(v) {
			err = fmt.Errorf("%q is not a uuid", v)
		}
	default:
		err = fmt.Errorf("format %s unknown to the test validator", f)
	}
	return err
}

// jsonEqual compares a schema value (float64 numbers) with an output value
// (json.Number) through their canonical encodings.
func jsonEqual(a, b any) bool {
	norm := func(x any) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		var y any
		raw, _ := json.Marshal(x)
		d := json.NewDecoder(bytes.NewReader(raw))
		d.Decode(&y) // numbers become float64 on both sides
		enc.Encode(y)
		return buf.String()
	}
	return norm(a) == norm(b)
}
