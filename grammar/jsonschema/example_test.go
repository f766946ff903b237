package jsonschema_test

import (
	"fmt"
	"log"

	"github.com/qsf-llm/qsf/grammar/jsonschema"
)

func ExampleCompile() {
	g, err := jsonschema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"city": {"type": "string", "maxLength": 20},
			"population": {"type": "integer", "minimum": 0}
		},
		"required": ["city"],
		"additionalProperties": false
	}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Match(`{"city": "Lyon", "population": 522250}`))
	fmt.Println(g.Match(`{"population": 522250}`))
	fmt.Println(g.Match(`{"city": "Lyon", "population": -1}`))

	_, err = jsonschema.Compile([]byte(`{"type": "string", "minLenght": 2}`))
	fmt.Println(err)
	// Output:
	// true
	// false
	// false
	// jsonschema: unsupported schema at #: unknown keywords minLenght
}
