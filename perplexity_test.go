package qsf_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestPerplexitySliding scores 128-token chunks with a 64-position cache
// that slides (window) or keeps the most attended positions (h2o), and
// checks that without an eviction policy the longer chunk is refused.
func TestPerplexitySliding(t *testing.T) {
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	text, err := os.ReadFile(testfiles.Path(t, "models", "corpus", "tinystories_sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	full := perplexity(t, model, string(text), qsf.Config{Threads: 1, ContextLength: 128})
	for _, tc := range []struct {
		evict, kv string
	}{{"window", ""}, {"h2o", ""}, {"window", "q4"}, {"h2o", "q8"}} {
		ppl := perplexity(t, model, string(text), qsf.Config{Threads: 1, ContextLength: 64, KVEviction: tc.evict, KVType: tc.kv})
		t.Logf("ctx 64 %s kv %q: PPL %.4f (full context %.4f)", tc.evict, tc.kv, ppl, full)
		// Half of each chunk's context still predicts the text about as
		// well; a broken slide (wrong slots, stale keys) does not.
		if ppl < full*0.9 || ppl > full*1.1 {
			t.Errorf("ctx 64 %s kv %q: PPL %.4f, full context %.4f", tc.evict, tc.kv, ppl, full)
		}
	}

	m, err := qsf.Load(model, qsf.Config{Threads: 1, ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Perplexity(context.Background(), string(text), qsf.PerplexityOptions{Context: 128}, nil); !errors.Is(err, qsf.ErrContextFull) {
		t.Errorf("chunk longer than a cache without eviction: %v, want ErrContextFull", err)
	}
}

func perplexity(t *testing.T, model, text string, cfg qsf.Config) float64 {
	t.Helper()
	m, err := qsf.Load(model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	res, err := m.Perplexity(context.Background(), text, qsf.PerplexityOptions{Context: 128}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.PPL
}
