package stream_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf"
)

// TestStreamingBitNet streams the synthetic bitnet model (F32, 9.5 MB)
// under a budget that forces streaming and requires the resident logits
// bit for bit (with the same, f32, KV cache): its sub-norms and .scale
// vectors are refilled per layer.
func TestStreamingBitNet(t *testing.T) {
	path := filepath.Join(filepath.Dir(filepath.Dir(testdata(t))), "ternary", "synth-bitnet-f32.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("test data not found: %v", err)
	}
	ids := []int{1, 403, 407, 261, 378, 131}
	run := func(cfg qsf.Config) [][]float32 {
		m, err := qsf.Load(path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if cfg.RAMBudget > 0 && !m.Streaming() {
			t.Fatalf("budget %d did not force streaming", cfg.RAMBudget)
		}
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var out [][]float32
		for _, id := range ids {
			l, err := s.Forward(context.Background(), []int{id})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float32(nil), l...))
		}
		return out
	}
	want := run(qsf.Config{ContextLength: 64, Threads: 2, KVType: "f32"})
	got := run(qsf.Config{ContextLength: 64, Threads: 2, KVType: "f32", RAMBudget: 15_300_000})
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("token %d logit %d: streaming %v, resident %v", i, j, got[i][j], want[i][j])
			}
		}
	}
}
