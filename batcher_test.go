package qsf_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/qsf-llm/qsf"
)

// TestBatcherEqualsSolo generates four sequences concurrently through a
// Batcher (different prompts and lengths, so they join and leave at
// different steps, one sampled with a seed) and checks each against the
// same generation alone; the steps must have batched several tokens.
func TestBatcherEqualsSolo(t *testing.T) {
	for _, file := range []string{"synthetic/synth-qwen2-Q8_0.gguf", "gguf/stories260K-Q4_0.gguf"} {
		m := loadChatModel(t, file, "chatml", "")
		b := m.NewBatcher()
		prompts := []string{"Once upon a time", "The", "A very long prompt that takes more time to evaluate than the others do", "Hello"}
		opts := func(i int) qsf.GenerateOptions {
			o := qsf.GenerateOptions{MaxTokens: 24 + 8*i}
			if i == 3 {
				o.Sampling = qsf.SamplerOptions{Temperature: 0.9, TopK: 20, Seed: 5}
			}
			return o
		}
		got := make([]qsf.Result, len(prompts))
		var wg sync.WaitGroup
		for i, p := range prompts {
			s, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.SetBatcher(b); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				var err error
				if got[i], err = s.Generate(context.Background(), p, opts(i), nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		st := b.Stats()
		b.Close()
		t.Logf("%s: %d tokens in %d steps", file, st.Tokens, st.Steps)
		if st.Steps == 0 || st.Tokens <= st.Steps {
			t.Errorf("%s: %d tokens in %d steps: nothing batched", file, st.Tokens, st.Steps)
		}
		for i, p := range prompts {
			s, _ := m.NewSession()
			want, err := s.Generate(context.Background(), p, opts(i), nil)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[i].Tokens, want.Tokens) {
				t.Errorf("%s %q: batched %v, alone %v", file, p, got[i].Tokens, want.Tokens)
			}
		}
	}
}
