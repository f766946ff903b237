package stream_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/stream"
)

func testdata(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("QSF_TESTDATA")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared")
				break
			}
		}
	}
	p := filepath.Join(dir, "models", "gguf", "stories260K-f32.gguf")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("test data not found (%v); set QSF_TESTDATA", err)
	}
	return p
}

// TestStreamingMatchesResident checks that a budget small enough to force
// streaming gives bit-identical logits, with and without prefetch.
func TestStreamingMatchesResident(t *testing.T) {
	path := testdata(t)
	ids := []int{1, 403, 407, 261, 378, 131, 306, 261}
	logits := func(cfg qsf.Config) [][]float32 {
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
			out = append(out, l)
		}
		if cfg.RAMBudget > 0 && s.IOStats().BytesRead == 0 {
			t.Fatal("streaming session read nothing")
		}
		return out
	}
	want := logits(qsf.Config{ContextLength: 64, Threads: 2})
	for _, cfg := range []qsf.Config{
		{ContextLength: 64, Threads: 2, RAMBudget: 14_300_000},
		{ContextLength: 64, Threads: 2, RAMBudget: 14_300_000, NoPrefetch: true},
	} {
		got := logits(cfg)
		for i := range want {
			for j := range want[i] {
				if got[i][j] != want[i][j] {
					t.Fatalf("%+v: token %d logit %d: streaming %v, resident %v", cfg, i, j, got[i][j], want[i][j])
				}
			}
		}
	}
	// Copied pieces above twice SplitBytes are read in two halves at once.
	for _, ring := range []int{0, 1} {
		st, src := streamingState(t, path, func(*stream.Layout) stream.Options {
			return stream.Options{RingBytes: ring, EmbedRows: 4, Copy: true, SplitBytes: 4096}
		})
		for i, id := range ids {
			if err := st.Forward(id, i, true); err != nil {
				t.Fatal(err)
			}
			for j := range want[i] {
				if st.Logits[j] != want[i][j] {
					t.Fatalf("ring %d, split reads: token %d logit %d: streaming %v, resident %v", ring, i, j, st.Logits[j], want[i][j])
				}
			}
		}
		if src.Stats().BytesRead == 0 {
			t.Fatalf("ring %d: nothing read", ring)
		}
	}
}
