package jsonschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/grammar"
)

func compile(t *testing.T, schema string) *grammar.Grammar {
	t.Helper()
	text, err := ToGBNF([]byte(schema))
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	g, err := grammar.Parse(text)
	if err != nil {
		t.Fatalf("%s: %v\n%s", schema, err, text)
	}
	return g
}

func TestSchemaGrammars(t *testing.T) {
	cases := []struct {
		schema         string
		accept, reject []string
	}{
		{`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},"required":["name"],"additionalProperties":false}`,
			[]string{`{"name":"a"}`, `{"name":"é\"","age":150}`, `{"name":"","tags":["x","y"]}`, `{ "name": "a", "age": 7, "tags": [] }`},
			[]string{`{}`, `{"age":1}`, `{"name":"a","age":151}`, `{"name":"a","age":-1}`, `{"name":"a","tags":["1","2","3"]}`, `{"age":1,"name":"a"}`, `{"name":"a","x":1}`}},
		{`{"enum":["red","green",3,null,{"a":[1]}]}`, []string{`"red"`, `3`, `null`, `{"a":[1]}`}, []string{`"blue"`, `4`}},
		{`{"const":"x"}`, []string{`"x"`}, []string{`"y"`}},
		{`{"type":"string","pattern":"^[A-Z]{2}-\\d{3}(x|yz)?$"}`, []string{`"AB-123"`, `"QQ-000yz"`}, []string{`"AB-12"`, `"ab-123"`, `"AB-123y"`}},
		{`{"type":"string","format":"date"}`, []string{`"2024-02-28"`, `"2024-12-31"`, `"2024-04-30"`}, []string{`"2024-13-01"`, `"24-01-01"`, `"2023-02-30"`, `"2023-04-31"`}},
		{`{"type":"string","format":"time"}`, []string{`"23:59:59Z"`, `"00:00:00.5+01:00"`}, []string{`"24:00:00Z"`, `"12:00:00"`}},
		{`{"type":"string","format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}},
		{`{"type":"integer","minimum":-12,"exclusiveMaximum":105}`, []string{`-12`, `-1`, `0`, `9`, `99`, `104`}, []string{`-13`, `105`, `-0`, `01`, `1000`}},
		{`{"type":"number","minimum":-2.5,"maximum":3}`, []string{`-2`, `-1.75`, `0`, `2.999`, `3`}, []string{`-3`, `3.5`, `-2.5`, `4`}},
		{`{"type":"number"}`, []string{`0`, `-1.5e+10`, `12345`}, []string{`01`, `.5`, `1.`}},
		{`{"anyOf":[{"type":"boolean"},{"type":"null"},{"$ref":"#/$defs/pt"}],"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}}}`,
			[]string{`true`, `null`, `{"x":1}`}, []string{`{}`, `1`}},
		{`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
			[]string{`{"v":1,"next":null}`, `{"v":1,"next":{"v":2,"next":null}}`}, []string{`{"v":1}`}},
		{`{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3}`, []string{`[1,2]`, `[1, 2, 3]`}, []string{`[1]`, `[1,2,3,4]`}},
		{`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"}}}`, []string{`{}`, `{"a":true}`, `{"b":false}`, `{"a":true,"b":true}`}, []string{`{"b":true,"a":true}`, `{,"b":true}`, `{"a":true,}`}},
		{`{"type":"object","additionalProperties":{"type":"integer"}}`, []string{`{}`, `{"k":1,"j":2}`}, []string{`{"k":"v"}`}},
		{`{"type":["string","null"],"maxLength":3}`, []string{`"abc"`, `null`}, []string{`"abcd"`}},
	}
	for _, tc := range cases {
		g := compile(t, tc.schema)
		for _, s := range tc.accept {
			if !g.Match(s) {
				text, _ := ToGBNF([]byte(tc.schema))
				t.Errorf("%s rejects %s\n%s", tc.schema, s, text)
			}
		}
		for _, s := range tc.reject {
			if g.Match(s) {
				t.Errorf("%s accepts %s", tc.schema, s)
			}
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	cases := []struct{ schema, msg string }{
		{`{"type":"string","minLenght":3,"foo":1}`, "unknown keywords foo, minLenght"},
		{`{"type":"string","pattern":"(?=a)"}`, "lookaround"},
		{`{"type":"string","pattern":"\\bword"}`, "escape \\b"},
		{`{"type":"string","format":"email"}`, "format email"},
		{`{"$ref":"#/$defs/missing"}`, "names no definition"},
		{`{"type":"integer","minimum":5,"maximum":4}`, "no integer"},
		{`{"type":"array","minItems":3,"maxItems":2}`, "maxItems 2 < minItems 3"},
		{`{"type":"object","properties":{"a":{}},"required":["b"]}`, `"b" is not in properties`},
		{`{"type":"object"`, "jsonschema"},
		{`{"anyOf":[{"$ref":"#"}]}`, "reach itself"},
	}
	for _, tc := range cases {
		_, err := ToGBNF([]byte(tc.schema))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error with %q", tc.schema, err, tc.msg)
		}
	}
	if _, err := ToGBNF([]byte(`{"type":"bogus"}`)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown type: %v, want ErrUnsupported", err)
	}
}

func TestSchemaStrings(t *testing.T) {
	g := compile(t, `{"type":"object","properties":{"a<b":{"const":"x&y"}},"required":["a<b"]}`)
	if !g.Match(`{"a<b":"x&y"}`) {
		t.Error("HTML characters are escaped in keys or constants")
	}
	s := compile(t, `{"type":"string"}`)
	for text, want := range map[string]bool{`"\u00e9"`: true, `"\ud83d"`: false, `"\uDFFF"`: false, `"\uE000"`: true, "\"\n\"": false, `"\n"`: true, `"\x"`: false} {
		if s.Match(text) != want {
			t.Errorf("string %s: match %v, want %v", text, !want, want)
		}
	}
}
