package qsf_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/grammar"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// testSchemas cover the JSON Schema keywords the grammar supports. Strings
// and arrays are bounded so that random sampling finishes within the
// synthetic models' 256-token context.
var testSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":0,"maximum":120},"pet":{"enum":["cat","dog",null]}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"integer","minimum":-50,"exclusiveMaximum":50},"minItems":1,"maxItems":4}`,
	`{"enum":["red","green","blue"]}`,
	`{"type":"object","properties":{"kind":{"const":"point"},"x":{"type":"number","minimum":-1,"maximum":1}},"required":["kind","x"],"additionalProperties":false}`,
	`{"type":"string","pattern":"^[A-Z]{2}-[0-9]{3}(-[a-z]{1,8})?$","description":"a code"}`,
	`{"type":"object","properties":{"day":{"type":"string","format":"date"},"at":{"type":"string","format":"time"},"id":{"type":"string","format":"uuid"}},"required":["day","at","id"],"additionalProperties":false}`,
	`{"anyOf":[{"type":"boolean"},{"type":"null"},{"type":"string","minLength":1,"maxLength":5}]}`,
	`{"oneOf":[{"$ref":"#/$defs/pt"},{"type":"array","items":{"$ref":"#/$defs/pt"},"maxItems":2}],"$defs":{"pt":{"type":"object","properties":{"x":{"type":"integer","minimum":0,"maximum":9},"y":{"type":"integer","minimum":0,"maximum":9}},"required":["x","y"],"additionalProperties":false}}}`,
	`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"type":["integer","null"],"maximum":-5}},"additionalProperties":false}`,
	`{"type":"array","prefixItems":[{"type":"string","maxLength":4},{"type":"integer"},{"type":"boolean"}],"items":false,"minItems":3,"maxItems":3}`,
	`{"type":"number"}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"enum":["x","y"]},"maxItems":3},"score":{"type":"integer","minimum":-1000,"maximum":1000}},"required":["tags"],"additionalProperties":false}`,
}

// TestJSONSchemaRandomSampling generates with random sampling (every
// allowed token can be drawn) on the stories model and synthetic models
// of several architectures, and checks that every output is complete JSON
// valid against its schema.
func TestJSONSchemaRandomSampling(t *testing.T) {
	files := []string{
		"gguf/stories260K-f32.gguf",
		"synthetic/synth-llama-Q4_0.gguf",
		"synthetic/synth-gemma-Q8_0.gguf",
		"synthetic/synth-gpt2-Q4_0.gguf",
		"synthetic/synth-qwen3-Q4_0.gguf",
	}
	var models []*qsf.Model
	for _, f := range files {
		m, err := qsf.Load(testfiles.Path(t, "models", f), qsf.Config{Threads: 1, ContextLength: 256})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		models = append(models, m)
	}
	seeds := 100
	if testing.Short() {
		seeds = 24
	}
	reasons := map[qsf.StopReason]int{}
	for seed := range seeds {
		schema := testSchemas[seed%len(testSchemas)]
		m := models[seed%len(models)]
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{
			Sampling:   qsf.SamplerOptions{Temperature: 1, Seed: int64(seed)},
			JSONSchema: []byte(schema),
		}, nil)
		s.Close()
		if err != nil {
			t.Fatalf("seed %d, %s: %v", seed, files[seed%len(files)], err)
		}
		reasons[res.Reason]++
		if res.Reason != qsf.StopGrammar && res.Reason != qsf.StopEOS {
			t.Errorf("seed %d, %s, schema %d: stopped (%s) before the grammar was complete: %q", seed, files[seed%len(files)], seed%len(testSchemas), res.Reason, res.Text)
			continue
		}
		if err := validateJSON(schema, res.Text); err != nil {
			t.Errorf("seed %d, %s, schema %d: %q: %v", seed, files[seed%len(files)], seed%len(testSchemas), res.Text, err)
		}
		if seed < 2*len(testSchemas) && testing.Verbose() {
			t.Logf("schema %d: %s", seed%len(testSchemas), res.Text)
		}
	}
	t.Logf("stop reasons: %v", reasons)
}

func TestGrammarGenerate(t *testing.T) {
	m := loadStories(t, qsf.Config{Threads: 1, ContextLength: 256})
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Greedy decoding with a grammar that forces a sentence shape.
	res, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{
		GBNF: `root ::= " there was a " ("cat" | "dog" | "girl") "."`,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != qsf.StopGrammar || !strings.HasPrefix(res.Text, " there was a ") || !strings.HasSuffix(res.Text, ".") {
		t.Errorf("%q, reason %s", res.Text, res.Reason)
	}

	// A grammar longer than MaxTokens allows stops with max_tokens.
	s.Reset()
	res, err = s.Generate(context.Background(), "Once", qsf.GenerateOptions{MaxTokens: 3, GBNF: `root ::= [a-z ]{50}`}, nil)
	if err != nil || res.Reason != qsf.StopMaxTokens {
		t.Errorf("MaxTokens: reason %s, err %v", res.Reason, err)
	}

	// Errors: a bad grammar, two grammars, a grammar that matches nothing.
	s.Reset()
	if _, err := s.Generate(context.Background(), "Once", qsf.GenerateOptions{GBNF: `root ::= (`}, nil); err == nil || !strings.Contains(err.Error(), "line 1, column") {
		t.Errorf("bad grammar: %v", err)
	}
	if _, err := s.Generate(context.Background(), "Once", qsf.GenerateOptions{GBNF: `root ::= "a"`, JSONSchema: []byte(`{}`)}, nil); !errors.Is(err, qsf.ErrGrammarOptions) {
		t.Errorf("two grammars: %v", err)
	}
	if _, err := s.Generate(context.Background(), "Once", qsf.GenerateOptions{GBNF: `root ::= [^\x00-\U0010FFFF]`}, nil); !errors.Is(err, grammar.ErrEmpty) {
		t.Errorf("empty grammar: %v", err)
	}
	if _, err := s.Generate(context.Background(), "Once", qsf.GenerateOptions{JSONSchema: []byte(`{"type":"string","minLenght":1}`)}, nil); err == nil || !strings.Contains(err.Error(), "minLenght") {
		t.Errorf("unknown keyword: %v", err)
	}
}

func TestSchemaFor(t *testing.T) {
	type Address struct {
		City string `json:"city"`
		Zip  string `json:"zip,omitempty"`
	}
	type Node struct {
		Value    int     `json:"value"`
		Children []*Node `json:"children,omitempty"`
	}
	type Person struct {
		Name    string          `json:"name"`
		Age     uint8           `json:"age"`
		Email   *string         `json:"email,omitempty"`
		Home    Address         `json:"home"`
		Scores  [2]float64      `json:"scores"`
		Labels  map[string]bool `json:"labels,omitempty"`
		Secret  string          `json:"-"`
		Tree    *Node           `json:"tree,omitempty"`
		private int
	}
	schema, err := qsf.SchemaFor(Person{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$defs":{"Address":{"additionalProperties":false,"properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"],"type":"object"},` +
		`"Node":{"additionalProperties":false,"properties":{"value":{"type":"integer"},"children":{"items":{"$ref":"#/$defs/Node"},"type":"array"}},"required":["value"],"type":"object"},` +
		`"Person":{"additionalProperties":false,"properties":{"name":{"type":"string"},"age":{"minimum":0,"type":"integer"},"email":{"type":"string"},"home":{"$ref":"#/$defs/Address"},"scores":{"items":{"type":"number"},"maxItems":2,"minItems":2,"type":"array"},"labels":{"additionalProperties":{"type":"boolean"},"type":"object"},"tree":{"$ref":"#/$defs/Node"}},"required":["name","age","home","scores"],"type":"object"}},` +
		`"$ref":"#/$defs/Person"}`
	if string(schema) != want {
		t.Errorf("SchemaFor:\n got %s\nwant %s", schema, want)
	}
	if _, err := qsf.SchemaFor(struct{ C chan int }{}); err == nil {
		t.Error("SchemaFor accepted a channel field")
	}
	// The schema compiles into a grammar that accepts an encoded value.
	m := loadStories(t, qsf.Config{Threads: 1})
	s, _ := m.NewSession()
	defer s.Close()
	if _, err := s.Generate(context.Background(), "Once", qsf.GenerateOptions{MaxTokens: 1, JSONSchema: schema}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestValidatorRejects keeps the test validator honest: it must reject
// outputs that break each kind of constraint.
func TestValidatorRejects(t *testing.T) {
	bad := map[int][]string{
		0:  {`{"name":"toolong!","age":1}`, `{"name":"a"}`, `{"name":"a","age":121}`, `{"name":"a","age":1,"x":1}`, `{"name":"a","age":1.5}`, `{"name":"a","age":1,"pet":"cow"}`},
		1:  {`[]`, `[1,2,3,4,5]`, `[50]`, `[-51]`, `[1] x`},
		3:  {`{"kind":"line","x":0}`, `{"kind":"point","x":1.01}`},
		4:  {`"AB-12"`, `"ab-123"`},
		5:  {`{"day":"2023-02-30","at":"10:00:00Z","id":"123e4567-e89b-12d3-a456-426614174000"}`, `{"day":"2023-02-03","at":"25:00:00Z","id":"123e4567-e89b-12d3-a456-426614174000"}`, `{"day":"2023-02-03","at":"10:00:00Z","id":"123e4567"}`},
		6:  {`""`, `"toolong"`, `1`},
		7:  {`{"x":1,"y":1,"z":1}`, `[{"x":1,"y":10}]`, `[{"x":1,"y":1},{"x":1,"y":1},{"x":1,"y":1}]`},
		8:  {`{"c":-4}`, `{"a":null}`},
		9:  {`["a",1]`, `["a",1,true,1]`, `["abcde",1,true]`, `[1,1,true]`},
		11: {`{"tags":["z"]}`, `{"score":1}`},
	}
	for i, texts := range bad {
		for _, text := range texts {
			if err := validateJSON(testSchemas[i], text); err == nil {
				t.Errorf("schema %d accepts %s", i, text)
			}
		}
	}
	for i, text := range map[int]string{0: `{"name":"ab","age":3}`, 7: `[{"x":1,"y":2}]`, 9: `["ab",-3,false]`, 5: `{"day":"2024-02-29","at":"10:00:00Z","id":"123e4567-e89b-12d3-a456-426614174000"}`} {
		if err := validateJSON(testSchemas[i], text); err != nil {
			t.Errorf("schema %d rejects %s: %v", i, text, err)
		}
	}
}

// BenchmarkGenerateGrammar compares decode speed with and without a JSON
// grammar (the tok/s metric), on the model named by QSF_BENCH_MODEL (e.g.
// `qsf synth --shape 12L-768 --type q4_0`), with the CLI's default
// sampling. Each iteration generates up to 64 tokens from a fresh session.
func BenchmarkGenerateGrammar(b *testing.B) {
	path := os.Getenv("QSF_BENCH_MODEL")
	if path == "" {
		b.Skip("QSF_BENCH_MODEL not set")
	}
	m, err := qsf.Load(path, qsf.Config{ContextLength: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	schema := []byte(`{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"score":{"type":"number"}},"required":["name","tags","score"],"additionalProperties":false}}`)
	for _, bc := range []struct {
		name   string
		schema []byte
	}{{"free", nil}, {"json", schema}, {"free2", nil}, {"json2", schema}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := m.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var tokens int
			var decode time.Duration
			for i := 0; i < b.N; i++ {
				s.Reset()
				_, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{
					MaxTokens:  64,
					Sampling:   qsf.SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: int64(i)},
					JSONSchema: bc.schema,
				}, nil)
				if err != nil {
					b.Fatal(err)
				}
				tokens += s.Stats().GeneratedTokens
				decode += s.Stats().DecodeTime
			}
			b.ReportMetric(float64(tokens)/decode.Seconds(), "tok/s")
		})
	}
}
