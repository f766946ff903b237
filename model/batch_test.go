package model_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
)

// TestForwardBatchEqualsForward checks that evaluating a prompt as a batch
// gives bit for bit the logits of feeding it token by token, on every tier,
// for every architecture and weight type we have, with prompts longer than
// one batch.
func TestForwardBatchEqualsForward(t *testing.T) {
	if testing.Short() {
		t.Skip("every reference model on every tier: skipped in -short mode (the race-detector pass)")
	}
	dir := testfiles.Dir(t)
	files := []string{
		"gguf/stories260K-f32.gguf", "gguf/stories260K-F16.gguf", "gguf/stories260K-BF16.gguf", "gguf/stories260K-Q4_0.gguf",
		"gguf/stories260K-Q4_1.gguf", "gguf/stories260K-IQ4_NL.gguf", "gguf/stories260K-pad256-Q4_K_M.gguf",
		"synthetic/synth-qwen3-Q8_0.gguf", "synthetic/synth-phi3-Q4_0.gguf", "synthetic/synth-gpt2-Q8_0.gguf",
		"synthetic/synth-gemma-Q4_0.gguf", "synthetic/synth-qwen2-f32.gguf",
		"moe/synth-mixtral-Q4_0.gguf", "moe/synth-qwen2moe-Q8_0.gguf", "moe/synth-qwen2moe-f32.gguf",
	}
	defer kernels.SetTier(kernels.DefaultTier().Name())
	for _, tier := range kernels.Tiers() {
		if err := kernels.SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			m, done := load(t, filepath.Join(dir, "models", file))
			tokens := make([]int, 90)
			for i := range tokens {
				tokens[i] = (i*37 + 5) % m.Vocab
			}
			threadCounts := []int{1, 2}
			if tier == "generic" {
				threadCounts = []int{1} // slow; the pool is covered by the other tiers
			}
			for _, threads := range threadCounts {
				pool := kernels.NewPool(threads)
				one, err := m.NewState(100, pool)
				if err != nil {
					t.Fatal(err)
				}
				for i, tok := range tokens {
					if err := one.Forward(tok, i, i == len(tokens)-1); err != nil {
						t.Fatal(err)
					}
				}
				all, err := m.NewState(100, pool)
				if err != nil {
					t.Fatal(err)
				}
				// Two calls: the second continues after the first.
				if err := all.ForwardBatch(tokens[:20], 0, false); err != nil {
					t.Fatal(err)
				}
				if err := all.ForwardBatch(tokens[20:], 20, true); err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/%s/%d threads", tier, filepath.Base(file), threads)
				if all.KV.Len() != len(tokens) {
					t.Errorf("%s: cache length %d", name, all.KV.Len())
				}
				for i := range one.Logits {
					if math.Float32bits(one.Logits[i]) != math.Float32bits(all.Logits[i]) {
						t.Errorf("%s: logit %d: batch %g, one by one %g", name, i, all.Logits[i], one.Logits[i])
						break
					}
				}
				pool.Close()
			}
			done()
		}
	}
}

// TestForwardBatchKVTypes checks ForwardBatch against Forward with every
// cache type: f32 and f16 caches take every key and value of a batch
// first and attend with the heads shared by the threads, the quantized
// ones token by token.
func TestForwardBatchKVTypes(t *testing.T) {
	dir := testfiles.Dir(t)
	for _, file := range []string{"gguf/stories260K-f32.gguf", "synthetic/synth-qwen2-f32.gguf"} {
		m, done := load(t, filepath.Join(dir, "models", file))
		tokens := make([]int, 90)
		for i := range tokens {
			tokens[i] = (i*37 + 5) % m.Vocab
		}
		for _, typ := range []kvcache.Type{kvcache.F32, kvcache.F16, kvcache.Q8, kvcache.Q4} {
			for _, threads := range []int{1, 2} {
				pool := kernels.NewPool(threads)
				opts := model.StateOptions{Capacity: 100, KV: kvcache.Options{Type: typ}}
				one, err := m.NewStateWith(pool, opts)
				if err != nil {
					t.Fatal(err)
				}
				for i, tok := range tokens {
					if err := one.Forward(tok, i, i == len(tokens)-1); err != nil {
						t.Fatal(err)
					}
				}
				all, err := m.NewStateWith(pool, opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := all.ForwardBatch(tokens[:20], 0, false); err != nil {
					t.Fatal(err)
				}
				if err := all.ForwardBatch(tokens[20:], 20, true); err != nil {
					t.Fatal(err)
				}
				for i := range one.Logits {
					if math.Float32bits(one.Logits[i]) != math.Float32bits(all.Logits[i]) {
						t.Errorf("%s/%v/%d threads: logit %d: batch %g, one by one %g", filepath.Base(file), typ, threads, i, all.Logits[i], one.Logits[i])
						break
					}
				}
				pool.Close()
			}
		}
		done()
	}
}
