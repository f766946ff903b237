package jsonschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/grammar"
)

// FuzzToGBNF checks that every schema either gives an error or GBNF that
// compiles.
func FuzzToGBNF(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+(\\d{2}|x)?$"},"b":{"type":"integer","minimum":-7,"maximum":1234}},"required":["a"]}`,
		`{"anyOf":[{"$ref":"#/$defs/x"},{"type":"array","prefixItems":[{"const":[1,{"a":null}]}],"items":false,"minItems":1}],"$defs":{"x":{"enum":["a",1.5,true]}}}`,
		`{"type":"number","exclusiveMinimum":-0.5,"maximum":2.5}`,
		`{"type":["string","null"],"format":"date-time"}`,
		`{"type":"object","additionalProperties":{"type":"array","maxItems":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		text, err := toGBNF(schema)
		if err != nil {
			return
		}
		_, err = grammar.Parse(text)
		var se *grammar.SyntaxError
		if errors.As(err, &se) && !strings.Contains(se.Msg, "reach itself") {
			t.Fatalf("schema %s gives GBNF that does not compile: %v\n%s", schema, err, text)
		}
	})
}
