package qsf

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/qsf-llm/qsf/grammar"
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

// TestFilterRealVocab checks the allowed sets against trying every token
// of stories260K's SentencePiece vocabulary (byte tokens, "▁" pieces,
// control tokens) along random paths through llama.cpp's JSON grammar.
func TestFilterRealVocab(t *testing.T) {
	m, err := Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text, err := os.ReadFile(testfiles.Path(t, "reference", "grammars", "json.gbnf"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	v := m.grammarVocab()
	seeds := 5
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		f := grammar.NewFilter(g, v)
		var prefix []byte
		for step := 0; step < 40 && !f.Done(); step++ {
			allowed := f.Allowed()
			var choices []int
			for id := range m.tok.VocabSize() {
				piece := m.tok.Piece(id)
				mt := grammar.NewMatcher(g)
				mt.Accept(prefix)
				want := piece != "" && !m.tok.IsEOG(id) && mt.AcceptString(piece)
				if m.tok.IsEOG(id) {
					want = mt.Accepting()
				}
				if got := allowed[id>>6]>>(id&63)&1 != 0; got != want {
					t.Fatalf("seed %d, after %q: token %d %q allowed=%v, want %v", seed, prefix, id, piece, got, want)
				}
				if want {
					choices = append(choices, id)
				}
			}
			id := choices[rng.IntN(len(choices))]
			if err := f.Accept(id); err != nil {
				t.Fatal(err)
			}
			prefix = append(prefix, m.tok.Piece(id)...)
		}
	}
}

// TestGrammarStuck: a grammar that needs bytes no token provides stops
// generation with ErrGrammarStuck instead of sampling a masked token.
func TestGrammarStuck(t *testing.T) {
	c := &constraint{f: grammar.NewFilter(grammar.MustParse(`root ::= "b"`), grammar.NewVocab([]string{"a", "c"}, nil))}
	if err := c.mask(make([]float32, 2)); !errors.Is(err, ErrGrammarStuck) {
		t.Errorf("mask: %v, want ErrGrammarStuck", err)
	}
	var none *constraint
	if err := none.mask(nil); err != nil || none.done() {
		t.Error("a nil constraint constrains")
	}
}
