// Package jsonschema translates a JSON Schema into a GBNF grammar whose
// sentences are JSON texts valid against the schema.
//
// The supported subset: type (one or a list), object properties with
// required, optional and additionalProperties (false, true or a schema;
// without it only the listed properties are generated), array items,
// prefixItems, minItems and maxItems, string enum, const, pattern (a
// common regular-expression subset, see [ErrPattern]), format (date, time,
// date-time, uuid), minLength and maxLength, number and integer minimum,
// maximum, exclusiveMinimum and exclusiveMaximum, boolean, null, anyOf,
// oneOf (generated as anyOf: give it disjoint branches), allOf with one
// branch, and $ref to #/$defs/... or #/definitions/... (recursion allowed).
// Annotations (title, description, default, examples, $schema, $id,
// $comment) are ignored. Any other keyword is an error that lists them.
//
// The grammar generates a subset of the valid documents where the whole
// set is hard to express: properties in the schema's order, February dates
// up to the 28th, no whitespace after the value, at most 16 digits per
// integer or fraction and 2 per exponent (every number fits a float64),
// and for a number with bounds only values m or m.ddd, m an integer, such
// that every fraction stays within the bounds.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/qsf-llm/qsf/grammar"
)

// ErrUnsupported is wrapped by the errors for schemas outside the subset.
var ErrUnsupported = errors.New("jsonschema: unsupported schema")

// Compile translates the JSON Schema text schema into a grammar.
func Compile(schema []byte) (*grammar.Grammar, error) {
	text, err := toGBNF(schema)
	if err != nil {
		return nil, err
	}
	g, err := grammar.Parse(text)
	if err != nil {
		// The converter writes valid GBNF; what the grammar can reject is
		// a schema that refers to itself before any JSON text, such as
		// {"anyOf":[{"$ref":"#"}]}, or one too large.
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return g, nil
}

// ToGBNF translates the JSON Schema text schema into GBNF text.
func ToGBNF(schema []byte) (string, error) {
	text, err := toGBNF(schema)
	if err != nil {
		return "", err
	}
	if _, err := grammar.Parse(text); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return text, nil
}

func toGBNF(schema []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	root, err := decodeOrdered(dec, 0)
	if err != nil {
		return "", fmt.Errorf("jsonschema: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("jsonschema: data after the schema")
	}
	c := &converter{root: root, rules: map[string]string{}, refs: map[string]string{}}
	body, err := c.visit(root, "#")
	if err != nil {
		return "", err
	}
	c.add("root", body)
	return c.text(), nil
}

type converter struct {
	root  any
	rules map[string]string // rule name → body
	order []string
	refs  map[string]string // $ref → rule name
	n     int
}

// add defines a rule, reusing an existing rule with the same body.
func (c *converter) add(name, body string) string {
	if _, ok := c.rules[name]; !ok {
		c.order = append(c.order, name)
	}
	c.rules[name] = body
	return name
}

// rule defines a new rule named after hint and returns its name.
func (c *converter) rule(hint, body string) string {
	for _, name := range c.order { // identical bodies share a rule
		if c.rules[name] == body && strings.HasPrefix(name, hint) {
			return name
		}
	}
	c.n++
	return c.add(fmt.Sprintf("%s-%d", hint, c.n), body)
}

func (c *converter) text() string {
	var b strings.Builder
	names := slices.Clone(c.order)
	// root first, the rest in creation order.
	sort.SliceStable(names, func(i, j int) bool { return names[i] == "root" && names[j] != "root" })
	for _, name := range names {
		fmt.Fprintf(&b, "%s ::= %s\n", name, c.rules[name])
	}
	used := b.String()
	var prims []string
	for name := range primitives {
		prims = append(prims, name)
	}
	sort.Strings(prims)
	// Primitive rules refer to each other; add them until nothing new.
	for changed := true; changed; {
		changed = false
		for _, name := range prims {
			if !c.defined(name) && refersTo(used, name) {
				c.add(name, primitives[name])
				fmt.Fprintf(&b, "%s ::= %s\n", name, primitives[name])
				used += primitives[name] + "\n"
				changed = true
			}
		}
	}
	return b.String()
}

func (c *converter) defined(name string) bool { _, ok := c.rules[name]; return ok }

// refersTo reports whether GBNF text mentions the rule name as a whole word.
func refersTo(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		before := j == 0 || !isWordByte(text[j-1])
		after := end == len(text) || !isWordByte(text[end])
		if before && after && !inLiteral(text, j) {
			return true
		}
		i = end
	}
}

// inLiteral reports whether offset i of a GBNF line is inside a string
// literal or a character class (rough: counts unescaped quotes on the line).
func inLiteral(text string, i int) bool {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	in := false
	for k := start; k < i; k++ {
		switch text[k] {
		case '\\':
			k++
		case '"':
			in = !in
		}
	}
	return in
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// primitives are the shared rules of JSON values.
var primitives = map[string]string{
	"ws":            `| " " | "\n" [ \t]{0,20}`,
	"value":         `object | array | string | number | boolean | null`,
	"object":        `"{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? "}"`,
	"array":         `"[" ws ( value ( "," ws value )* )? "]"`,
	"string":        `"\"" char* "\""`,
	"char":          `[^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-CeEfF] hex{3} | [dD] [0-7] hex{2} ) )`,
	"number":        `"-"? integral-part ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?`,
	"integer":       `"-"? integral-part`,
	"integral-part": `"0" | [1-9] [0-9]{0,15}`,
	"boolean":       `"true" | "false"`,
	"null":          `"null"`,
	"date":          `[0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( day-28 | "29" | "3" [01] ) | ( "0" [469] | "11" ) "-" ( day-28 | "29" | "30" ) | "02-" day-28 )`,
	"day-28":        `"0" [1-9] | "1" [0-9] | "2" [0-8]`,
	"time":          `( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`,
	"uuid":          `hex{8} "-" hex{4} "-" hex{4} "-" hex{4} "-" hex{12}`,
	"hex":           `[0-9a-fA-F]`,
}

// keywords the converter understands, by kind; annotations are ignored.
var (
	known = map[string]bool{
		"type": true, "properties": true, "required": true, "additionalProperties": true,
		"items": true, "prefixItems": true, "minItems": true, "maxItems": true,
		"enum": true, "const": true, "pattern": true, "format": true, "minLength": true, "maxLength": true,
		"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
		"anyOf": true, "oneOf": true, "allOf": true, "$ref": true, "$defs": true, "definitions": true,
	}
	annotations = map[string]bool{
		"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
		"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	}
)

func unsupported(path, format string, args ...any) error {
	return fmt.Errorf("%w at %s: %s", ErrUnsupported, path, fmt.Sprintf(format, args...))
}

// visit returns a GBNF expression for the schema s found at path.
func (c *converter) visit(s any, path string) (string, error) {
	switch s := s.(type) {
	case bool:
		if s {
			return "value", nil
		}
		return "", unsupported(path, "the schema false matches nothing")
	case map[string]any:
		return c.object(s, path)
	}
	return "", unsupported(path, "a schema must be an object or a boolean, not %T", s)
}

func (c *converter) object(s map[string]any, path string) (string, error) {
	var unknown []string
	for k := range s {
		if k != orderKey && !known[k] && !annotations[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return "", unsupported(path, "unknown keywords %s", strings.Join(unknown, ", "))
	}
	if ref, ok := s["$ref"]; ok {
		r, ok := ref.(string)
		if !ok {
			return "", unsupported(path, "$ref must be a string")
		}
		if len(s) > 1 && !onlyAnnotations(s, "$ref", "$defs", "definitions") {
			return "", unsupported(path, "$ref beside other keywords")
		}
		return c.ref(r, path)
	}
	if v, ok := s["const"]; ok {
		return jsonLiteral(v)
	}
	if v, ok := s["enum"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return "", unsupported(path, "enum must be a non-empty array")
		}
		var alts []string
		for _, item := range list {
			lit, err := jsonLiteral(item)
			if err != nil {
				return "", err
			}
			alts = append(alts, lit)
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		v, ok := s[kw]
		if !ok {
			continue
		}
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return "", unsupported(path, "%s must be a non-empty array", kw)
		}
		if kw == "allOf" && len(list) != 1 {
			return "", unsupported(path, "allOf with more than one schema")
		}
		var alts []string
		for i, sub := range list {
			e, err := c.visit(sub, fmt.Sprintf("%s/%s/%d", path, kw, i))
			if err != nil {
				return "", err
			}
			alts = append(alts, e)
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
	var types []string
	switch t := s["type"].(type) {
	case nil:
		switch {
		case s["properties"] != nil || s["additionalProperties"] != nil:
			types = []string{"object"}
		case s["items"] != nil || s["prefixItems"] != nil:
			types = []string{"array"}
		case s["pattern"] != nil || s["format"] != nil || s["minLength"] != nil || s["maxLength"] != nil:
			types = []string{"string"}
		default:
			return "value", nil
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return "", unsupported(path, "type list holds %v", x)
			}
			types = append(types, name)
		}
	default:
		return "", unsupported(path, "type must be a string or a list")
	}
	var alts []string
	for _, t := range types {
		e, err := c.typed(t, s, path)
		if err != nil {
			return "", err
		}
		alts = append(alts, e)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return "( " + strings.Join(alts, " | ") + " )", nil
}

func onlyAnnotations(s map[string]any, allowed ...string) bool {
	for k := range s {
		if k != orderKey && !annotations[k] && !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}

func (c *converter) typed(t string, s map[string]any, path string) (string, error) {
	switch t {
	case "object":
		return c.objectType(s, path)
	case "array":
		return c.arrayType(s, path)
	case "string":
		return c.stringType(s, path)
	case "number", "integer":
		return numberType(t == "integer", s, path)
	case "boolean":
		return "boolean", nil
	case "null":
		return "null", nil
	}
	return "", unsupported(path, "unknown type %q", t)
}

func (c *converter) ref(r, path string) (string, error) {
	if name, ok := c.refs[r]; ok {
		return name, nil
	}
	var target any
	switch {
	case strings.HasPrefix(r, "#/$defs/"), strings.HasPrefix(r, "#/definitions/"):
		defs, _ := c.root.(map[string]any)
		parts := strings.SplitN(r[2:], "/", 2)
		m, _ := defs[parts[0]].(map[string]any)
		var ok bool
		if target, ok = m[unescapePointer(parts[1])]; !ok {
			return "", unsupported(path, "$ref %q names no definition", r)
		}
	case r == "#":
		target = c.root
	default:
		return "", unsupported(path, "$ref %q: only #, #/$defs/NAME and #/definitions/NAME are supported", r)
	}
	c.n++
	name := fmt.Sprintf("ref-%s-%d", ruleWord(r[strings.LastIndexByte(r, '/')+1:]), c.n)
	c.refs[r] = name
	c.add(name, "") // reserve the name first: the definition may be recursive
	body, err := c.visit(target, r)
	if err != nil {
		return "", err
	}
	c.rules[name] = body
	return name, nil
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// ruleWord turns s into characters allowed in a GBNF rule name.
func ruleWord(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 24; i++ {
		if isWordByte(s[i]) {
			b.WriteByte(s[i])
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

func (c *converter) objectType(s map[string]any, path string) (string, error) {
	props, _ := s["properties"].(map[string]any)
	if s["properties"] != nil && props == nil {
		return "", unsupported(path, "properties must be an object")
	}
	required := map[string]bool{}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return "", unsupported(path, "required must be an array")
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return "", unsupported(path, "required holds %v", x)
			}
			if _, ok := props[name]; !ok {
				return "", unsupported(path, "required property %q is not in properties", name)
			}
			required[name] = true
		}
	}
	// Properties in the order of the schema text.
	names, _ := props[orderKey].([]string)
	kvs := make([]string, len(names))
	for i, name := range names {
		key := jsonString(name)
		v, err := c.visit(props[name], path+"/properties/"+name)
		if err != nil {
			return "", err
		}
		kvs[i] = c.rule(ruleWord(name)+"-kv", gbnfString(key)+` ":" ws `+v)
	}
	var extra string
	switch ap := s["additionalProperties"].(type) {
	case nil:
	case bool:
		if ap {
			extra = "string \":\" ws value"
		}
	case map[string]any:
		v, err := c.visit(ap, path+"/additionalProperties")
		if err != nil {
			return "", err
		}
		extra = "string \":\" ws " + v
	default:
		return "", unsupported(path, "additionalProperties must be a boolean or a schema")
	}
	// first(i): properties i.. with none before; rest(i): with one before.
	rest := ""
	if extra != "" {
		rest = `( "," ws ` + extra + ` )*`
	}
	first := ""
	if extra != "" {
		first = `( ` + extra + ` ( "," ws ` + extra + ` )* )?`
	}
	for i := len(names) - 1; i >= 0; i-- {
		kv := kvs[i]
		restI := `"," ws ` + kv + " " + rest
		firstI := kv + " " + rest
		if !required[names[i]] {
			restI = `( "," ws ` + kv + ` )? ` + rest
			firstI = `( ` + kv + " " + rest + ` | ` + orEmpty(first) + ` )`
		}
		rest = c.rule("rest", strings.TrimSpace(restI))
		first = c.rule("props", strings.TrimSpace(firstI))
	}
	return `"{" ws ` + first + ` ws "}"`, nil
}

func orEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func (c *converter) arrayType(s map[string]any, path string) (string, error) {
	minItems, err := intKeyword(s, "minItems", 0, path)
	if err != nil {
		return "", err
	}
	maxItems, err := intKeyword(s, "maxItems", -1, path)
	if err != nil {
		return "", err
	}
	if maxItems >= 0 && maxItems < minItems {
		return "", unsupported(path, "maxItems %d < minItems %d", maxItems, minItems)
	}
	if maxItems > 4096 || minItems > 4096 {
		return "", unsupported(path, "minItems/maxItems above 4096")
	}
	var prefix []string
	if p, ok := s["prefixItems"]; ok {
		list, ok := p.([]any)
		if !ok {
			return "", unsupported(path, "prefixItems must be an array")
		}
		for i, sub := range list {
			e, err := c.visit(sub, fmt.Sprintf("%s/prefixItems/%d", path, i))
			if err != nil {
				return "", err
			}
			prefix = append(prefix, e)
		}
	}
	item := "value"
	if it, ok := s["items"]; ok {
		if it == false {
			item = ""
		} else if item, err = c.visit(it, path+"/items"); err != nil {
			return "", err
		}
	}
	if len(prefix) > 0 {
		if minItems < len(prefix) || item == "" && maxItems != len(prefix) && maxItems >= 0 {
			return "", unsupported(path, "prefixItems need minItems ≥ their count")
		}
		body := strings.Join(prefix, ` "," ws `)
		n := len(prefix)
		tail := ""
		if item != "" && maxItems != n {
			more := -1
			if maxItems >= 0 {
				more = maxItems - n
			}
			tail = ` ( "," ws ` + item + ` )` + repeat(minItems-n, more)
		}
		return `"[" ws ` + body + tail + ` ws "]"`, nil
	}
	if item == "" {
		if minItems > 0 {
			return "", unsupported(path, "items false with minItems %d", minItems)
		}
		return `"[" ws "]"`, nil
	}
	more := -1
	if maxItems >= 0 {
		more = maxItems - 1
	}
	switch {
	case maxItems == 0:
		return `"[" ws "]"`, nil
	case minItems == 0:
		return `"[" ws ( ` + item + ` ( "," ws ` + item + ` )` + repeat(0, more) + ` )? ws "]"`, nil
	}
	return `"[" ws ` + item + ` ( "," ws ` + item + ` )` + repeat(minItems-1, more) + ` ws "]"`, nil
}

// repeat formats the GBNF repetition {lo,hi}; hi < 0 means unbounded.
func repeat(lo, hi int) string {
	switch {
	case hi < 0 && lo == 0:
		return "*"
	case hi < 0 && lo == 1:
		return "+"
	case hi < 0:
		return fmt.Sprintf("{%d,}", lo)
	case lo == hi:
		return fmt.Sprintf("{%d}", lo)
	case lo == 0 && hi == 1:
		return "?"
	}
	return fmt.Sprintf("{%d,%d}", lo, hi)
}

func intKeyword(s map[string]any, kw string, def int, path string) (int, error) {
	v, ok := s[kw]
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, unsupported(path, "%s must be a number", kw)
	}
	i, err := strconv.Atoi(string(n))
	if err != nil || i < 0 {
		return 0, unsupported(path, "%s must be a non-negative integer", kw)
	}
	return i, nil
}

func (c *converter) stringType(s map[string]any, path string) (string, error) {
	if p, ok := s["pattern"]; ok {
		re, ok := p.(string)
		if !ok {
			return "", unsupported(path, "pattern must be a string")
		}
		if s["minLength"] != nil || s["maxLength"] != nil || s["format"] != nil {
			return "", unsupported(path, "pattern with minLength, maxLength or format")
		}
		e, err := patternToGBNF(re)
		if err != nil {
			return "", fmt.Errorf("%w at %s: %w", ErrUnsupported, path, err)
		}
		return `"\"" ` + e + ` "\""`, nil
	}
	if f, ok := s["format"]; ok {
		name, _ := f.(string)
		switch name {
		case "date", "time", "uuid":
			return `"\"" ` + name + ` "\""`, nil
		case "date-time":
			return `"\"" date "T" time "\""`, nil
		}
		return "", unsupported(path, "format %v (supported: date, time, date-time, uuid)", f)
	}
	lo, err := intKeyword(s, "minLength", 0, path)
	if err != nil {
		return "", err
	}
	hi, err := intKeyword(s, "maxLength", -1, path)
	if err != nil {
		return "", err
	}
	if hi >= 0 && hi < lo || hi > 4096 || lo > 4096 {
		return "", unsupported(path, "minLength %d, maxLength %d", lo, hi)
	}
	if lo == 0 && hi < 0 {
		return "string", nil
	}
	return `"\"" char` + repeat(lo, hi) + ` "\""`, nil
}

// jsonLiteral returns a GBNF literal matching the compact JSON text of v.
func jsonLiteral(v any) (string, error) {
	var b strings.Builder
	if err := compactJSON(&b, v); err != nil {
		return "", err
	}
	return gbnfString(b.String()), nil
}

// compactJSON writes v as compact JSON, objects in their keys' order.
func compactJSON(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		keys, _ := v[orderKey].([]string)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(k))
			b.WriteByte(':')
			if err := compactJSON(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := compactJSON(b, x); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case string:
		b.WriteString(jsonString(v))
	default:
		out, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("jsonschema: %w", err)
		}
		b.Write(out)
	}
	return nil
}

// jsonString encodes s as a JSON string without encoding/json's HTML
// escapes (a model writes "<", not "\u003c").
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// gbnfString quotes s as a GBNF string literal.
func gbnfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7F:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// numberType handles number and integer with their bounds.
func numberType(integer bool, s map[string]any, path string) (string, error) {
	lo, hi := math.Inf(-1), math.Inf(1)
	loExcl, hiExcl := false, false
	for _, kw := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, ok := s[kw]
		if !ok {
			continue
		}
		n, ok := v.(json.Number)
		if !ok {
			return "", unsupported(path, "%s must be a number", kw)
		}
		f, err := n.Float64()
		if err != nil {
			return "", unsupported(path, "%s: %v", kw, err)
		}
		switch kw {
		case "minimum":
			if f > lo || f == lo && loExcl {
				lo, loExcl = f, false
			}
		case "exclusiveMinimum":
			if f >= lo {
				lo, loExcl = f, true
			}
		case "maximum":
			if f < hi || f == hi && hiExcl {
				hi, hiExcl = f, false
			}
		case "exclusiveMaximum":
			if f <= hi {
				hi, hiExcl = f, true
			}
		}
	}
	if math.IsInf(lo, -1) && math.IsInf(hi, 1) {
		if integer {
			return "integer", nil
		}
		return "number", nil
	}
	// The integers m allowed as values: [L, H].
	const limit = 1e15
	L, H := math.Ceil(lo), math.Floor(hi)
	if loExcl && L == lo {
		L++
	}
	if hiExcl && H == hi {
		H--
	}
	if math.Abs(lo) > limit && !math.IsInf(lo, 0) || math.Abs(hi) > limit && !math.IsInf(hi, 0) {
		return "", unsupported(path, "bounds beyond ±1e15")
	}
	if L > H {
		return "", unsupported(path, "no integer lies within the bounds [%v, %v] (bounded numbers are generated as integers, optionally with a fraction)", lo, hi)
	}
	li, hiI := int64(math.MinInt64), int64(math.MaxInt64)
	if !math.IsInf(L, 0) {
		li = int64(L)
	}
	if !math.IsInf(H, 0) {
		hiI = int64(H)
	}
	ints := intRange(li, hiI)
	if integer {
		return ints, nil
	}
	// m.ddd lies in (m-1, m] for m < 0 and [m, m+1) for m ≥ 0, so it is
	// within [L, H] when m-1 ≥ L (m < 0) or m+1 ≤ H (m ≥ 0); -0.ddd is
	// never generated.
	var fracs []string
	if li < 0 && (li == math.MinInt64 || li+1 <= min(hiI, -1)) {
		lo := li
		if lo != math.MinInt64 {
			lo++
		}
		fracs = append(fracs, intRange(lo, min(hiI, -1)))
	}
	if hiI > 0 || hiI == math.MaxInt64 {
		top := hiI
		if top != math.MaxInt64 {
			top--
		}
		if top >= max(li, 0) {
			fracs = append(fracs, intRange(max(li, 0), top))
		}
	}
	if len(fracs) == 0 {
		return ints, nil
	}
	return `( ` + ints + ` | ( ` + strings.Join(fracs, " | ") + ` ) "." [0-9]{1,6} )`, nil
}

// orderKey holds, in every decoded object, its keys in the order of the
// text (JSON Schema generators list properties in the order users expect).
const orderKey = "\x00keys"

// maxNesting bounds the depth of the schema document.
const maxNesting = 1000

// decodeOrdered decodes one JSON value like json.Decoder.Decode into any,
// recording each object's key order under orderKey.
func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > maxNesting {
		return nil, errors.New("nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		var keys []string
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k]; !dup {
				keys = append(keys, k)
			}
			m[k] = v
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		m[orderKey] = keys
		return m, nil
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return list, nil
	}
	return tok, nil
}
