package model_test

import (
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
)

// TestForwardAllocatesNothing checks that a warm decode step (one token
// through every layer, logits included) allocates nothing, with one and
// two threads, for a float and a quantized model.
func TestForwardAllocatesNothing(t *testing.T) {
	for _, file := range []string{"stories260K-f32.gguf", "stories260K-Q4_0.gguf", "stories260K-pad256-Q4_K_M.gguf"} {
		path := testfiles.Path(t, "models", "gguf", file)
		m, done := load(t, path)
		for _, threads := range []int{1, 2} {
			pool := kernels.NewPool(threads)
			st, err := m.NewState(128, pool)
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			step := func() {
				if err := st.Forward(1+pos%100, pos, true); err != nil {
					t.Fatal(err)
				}
				pos++
			}
			step() // warm up: lazily built tables
			if n := testing.AllocsPerRun(50, step); n != 0 {
				t.Errorf("%s, %d threads: %v allocations per token", file, threads, n)
			}
			pool.Close()
		}
		done()
	}
}
