package qsf

import (
	"context"
	"os"
	"testing"
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
