package qsf_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestBatcherEqualsSolo generates four sequences concurrently through a
// Batcher (different prompts and lengths, so they join and leave at
// different steps, one sampled with a seed) and checks each against the
// same generation alone; the steps must have batched several tokens.
func TestBatcherEqualsSolo(t *testing.T) {
	for _, tc := range []struct {
		file      string
		streaming bool
	}{{"synthetic/synth-qwen2-Q8_0.gguf", false}, {"gguf/stories260K-Q4_0.gguf", false},
		{"synthetic/synth-qwen2-Q8_0.gguf", true}, {"gguf/stories260K-Q4_0.gguf", true}} {
		file := tc.file
		cfg := qsf.Config{Threads: 1, ContextLength: 256, ChatTemplate: "chatml"}
		if tc.streaming {
			file += " (streaming)"
			cfg = streamingConfig(t, testfiles.Path(t, "models", tc.file), cfg)
		}
		m, err := qsf.Load(testfiles.Path(t, "models", tc.file), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.Streaming() != tc.streaming {
			t.Fatalf("%s: Streaming() = %v", file, m.Streaming())
		}
		b := m.NewBatcher()
		read0 := m.IOStats().BytesRead // the sessions share the model's reader
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
		start := make(chan struct{}) // the sessions begin together
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
				<-start
				var err error
				if got[i], err = s.Generate(context.Background(), p, opts(i), nil); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		st := b.Stats()
		b.Close()
		// Whether sessions overlap depends on timing (a tiny model may
		// finish a session before the next one joins), so how much was
		// batched is logged, not required; the tokens must equal the solo
		// runs whatever it was.
		batched := st.Steps > 0 && st.Tokens > st.Steps
		t.Logf("%s: %d tokens and %d prompt tokens in %d steps (batched: %v)", file, st.Tokens, st.PromptTokens, st.Steps, batched)
		batchedRead := m.IOStats().BytesRead - read0
		var soloRead int64
		for i, p := range prompts {
			s, _ := m.NewSession()
			r0 := m.IOStats().BytesRead
			want, err := s.Generate(context.Background(), p, opts(i), nil)
			soloRead += m.IOStats().BytesRead - r0
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[i].Tokens, want.Tokens) {
				t.Errorf("%s %q: batched %v, alone %v", file, p, got[i].Tokens, want.Tokens)
			}
		}
		if tc.streaming && batched {
			// The batched sessions share each layer's read.
			t.Logf("%s: %d bytes read batched, %d alone", file, batchedRead, soloRead)
			if batchedRead >= soloRead {
				t.Errorf("%s: batched sessions read %d bytes, alone %d: no read was shared", file, batchedRead, soloRead)
			}
		}
	}
}
