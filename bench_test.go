package qsf_test

import (
	"context"
	"os"
	"testing"

	"github.com/qsf-llm/qsf"
)

// BenchmarkDecode measures one decode step (a token through the whole
// model) after a 32-token prompt. It uses the model named by
// QSF_BENCH_MODEL (e.g. a 12L-768 file from `qsf synth`), or the tiny
// random-weight model. b.SetBytes is the weight bytes read per token, so
// the MB/s column is the achieved weight bandwidth.
func BenchmarkDecode(b *testing.B) {
	path := os.Getenv("QSF_BENCH_MODEL")
	if path == "" {
		var cleanup func()
		path, cleanup = tinyModel()
		defer cleanup()
	}
	for _, threads := range []int{1, 2} {
		b.Run(map[int]string{1: "t1", 2: "t2"}[threads], func(b *testing.B) {
			m, err := qsf.Load(path, qsf.Config{Threads: threads, ContextLength: 512})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			s, err := m.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			prompt := make([]int, 32)
			for i := range prompt {
				prompt[i] = 1 + i
			}
			if _, err := s.Forward(ctx, prompt); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(m.Info().WeightBytes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if s.Pos() >= m.Info().ContextLength-1 {
					b.StopTimer()
					s.Reset()
					s.Forward(ctx, prompt)
					b.StartTimer()
				}
				if _, err := s.Forward(ctx, []int{100 + i%50}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
