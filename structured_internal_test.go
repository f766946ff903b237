package qsf

import (
	"context"
	"os"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// BenchmarkGrammarOverhead measures what the grammar adds to each decode
// step (masking the logits and advancing the parser), without the model:
// it replays a JSON output of the QSF_BENCH_MODEL model token by token
// through a fresh constraint (cold mask cache) per iteration. Compare the
// ns/token metric with the model's decode time per token.
func BenchmarkGrammarOverhead(b *testing.B) {
	path := os.Getenv("QSF_BENCH_MODEL")
	if path == "" {
		b.Skip("QSF_BENCH_MODEL not set")
	}
	m, err := Load(path, Config{ContextLength: 512})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	opts := GenerateOptions{
		MaxTokens:  200,
		Sampling:   SamplerOptions{Temperature: 1, Seed: 7},
		JSONSchema: []byte(`{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"score":{"type":"number"}},"required":["name","tags","score"],"additionalProperties":false}}`),
	}
	s, err := m.NewSession()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d tokens (%s): %.80q", len(res.Tokens), res.Reason, res.Text)
	logits := make([]float32, m.tok.VocabSize())
	m.grammarVocab()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		con, err := m.newConstraint(&opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range res.Tokens {
			if err := con.mask(logits); err != nil {
				b.Fatal(err)
			}
			if _, err := con.accept(id, logits); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(res.Tokens)), "ns/token")
}

// TestConstraintNoAllocs replays a generated JSON output through the
// constraint (mask, then accept, per token) and checks that once its
// parser states have been seen, a token costs no allocation.
func TestConstraintNoAllocs(t *testing.T) {
	m, err := Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), Config{Threads: 1, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	opts := GenerateOptions{
		Sampling:   SamplerOptions{Temperature: 1, Seed: 3},
		JSONSchema: []byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":10},"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3},"n":{"type":"number"}},"required":["name","tags","n"],"additionalProperties":false}`),
	}
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Generate(context.Background(), "Once", opts, nil)
	if err != nil || res.Reason != StopGrammar {
		t.Fatalf("%q: %s, %v", res.Text, res.Reason, err)
	}
	con, err := m.newConstraint(&opts)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.tok.VocabSize())
	replay := func() {
		con.f.Reset()
		for _, id := range res.Tokens {
			if err := con.mask(logits); err != nil {
				t.Fatal(err)
			}
			if _, err := con.accept(id, logits); err != nil {
				t.Fatal(err)
			}
		}
		if !con.done() {
			t.Fatal("replay did not complete the grammar")
		}
	}
	replay()
	if a := testing.AllocsPerRun(10, replay); a != 0 {
		t.Errorf("%v allocations per %d-token replay, want 0", a, len(res.Tokens))
	}
}
