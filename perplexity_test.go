package qsf_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
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

// TestPerplexityKL saves the f32 model's log-probabilities and compares
// models with them: f32 itself (no divergence) and Q4_0, whose mean KL
// divergence and top-1 agreement must match what llama-perplexity
// --kl-divergence (b4748, AVX2 build, -c 128 -b 128) reports for the same
// files and text: KLD 0.094013 ± 0.004676, same top token 84.014 ± 1.235 %.
func TestPerplexityKL(t *testing.T) {
	dir := testfiles.Dir(t)
	text, err := os.ReadFile(filepath.Join(dir, "models", "corpus", "tinystories_sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(file string, opts qsf.PerplexityOptions) qsf.PerplexityResult {
		t.Helper()
		m, err := qsf.Load(filepath.Join(dir, "models", "gguf", file), qsf.Config{Threads: 2, ContextLength: 128})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		opts.Context = 128
		res, err := m.Perplexity(context.Background(), string(text), opts, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return res
	}
	var base bytes.Buffer
	plain := run("stories260K-f32.gguf", qsf.PerplexityOptions{SaveLogProbs: &base})
	self := run("stories260K-f32.gguf", qsf.PerplexityOptions{KLBase: bytes.NewReader(base.Bytes())})
	if k := self.KL; k == nil || k.Mean > 1e-6 || k.Top1 != 1 || k.N != plain.Scored {
		t.Errorf("f32 against its own log-probabilities: %+v", k)
	}
	if self.PPL != plain.PPL {
		t.Errorf("PPL with KLBase %v, without %v", self.PPL, plain.PPL)
	}
	q4 := run("stories260K-Q4_0.gguf", qsf.PerplexityOptions{KLBase: bytes.NewReader(base.Bytes())}).KL
	t.Logf("Q4_0 against f32: %+v", *q4)
	if math.Abs(q4.Mean-0.094013) > 0.005 || math.Abs(q4.Top1-0.84014) > 0.025 {
		t.Errorf("Q4_0: KLD %.6f, top-1 %.4f; llama-perplexity gives 0.094013 and 0.84014", q4.Mean, q4.Top1)
	}
	if math.Abs(q4.BasePPL-plain.PPL) > 1e-3*plain.PPL {
		t.Errorf("base PPL from the file %v, the base run gave %v", q4.BasePPL, plain.PPL)
	}
	// Another text: refused.
	m, err := qsf.Load(filepath.Join(dir, "models", "gguf", "stories260K-f32.gguf"), qsf.Config{Threads: 1, ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Perplexity(context.Background(), string(text[len(text)/3:]), qsf.PerplexityOptions{Context: 128, KLBase: bytes.NewReader(base.Bytes())}, nil)
	if !errors.Is(err, qsf.ErrLogProbs) {
		t.Errorf("KLBase of another text: %v, want ErrLogProbs", err)
	}
}
