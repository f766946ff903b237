package qsf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/qsf-llm/qsf"
)

func ExampleSchemaFor() {
	type Answer struct {
		City       string   `json:"city"`
		Population int      `json:"population,omitempty"`
		Rivers     []string `json:"rivers"`
	}
	schema, err := qsf.SchemaFor(Answer{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(schema))
	// Output:
	// {"$defs":{"Answer":{"additionalProperties":false,"properties":{"city":{"type":"string"},"population":{"type":"integer"},"rivers":{"items":{"type":"string"},"type":"array"}},"required":["city","rivers"],"type":"object"}},"$ref":"#/$defs/Answer"}
}

func ExampleGenerateOptions_jsonSchema() {
	path, cleanup := tinyModel() // random weights: the values are noise, the shape is not
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.Generate(context.Background(), "The weather:", qsf.GenerateOptions{
		MaxTokens:  200,
		Sampling:   qsf.SamplerOptions{Temperature: 0.8, Seed: 1},
		JSONSchema: []byte(`{"type":"object","properties":{"sky":{"enum":["clear","cloudy"]},"celsius":{"type":"integer","minimum":-40,"maximum":50}},"required":["sky","celsius"],"additionalProperties":false}`),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var v struct {
		Sky     string
		Celsius int
	}
	err = json.Unmarshal([]byte(res.Text), &v)
	fmt.Println(res.Reason, err == nil, v.Sky == "clear" || v.Sky == "cloudy", v.Celsius >= -40 && v.Celsius <= 50)
	// Output: grammar true true true
}
