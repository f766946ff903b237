package model_test

import (
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// TestForwardAllocatesNothing checks that a warm decode step (one token
// through every layer, logits included) allocates nothing, with one and
// two threads, for a float and quantized models, the Q4_0 and Q8_0 ones
// also with their matrices repacked as a resident qsf.Model holds them, and
// an F32 one with its matrices packed as kernels.F32H.
func TestForwardAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		file   string
		repack bool
		f32h   bool // F32 matrices packed as kernels.F32H
	}{
		{file: "stories260K-f32.gguf"}, {file: "stories260K-Q4_0.gguf"}, {file: "stories260K-pad256-Q4_K_M.gguf"},
		{file: "stories260K-Q4_0.gguf", repack: true}, {file: "stories260K-Q8_0.gguf", repack: true},
		{file: "ternary/synth-bitnet-TQ2_0.gguf"}, // sub-norms and scales
		{file: "ternary/synth-bitnet-TQ1_0.gguf"},
		{file: "synthetic/synth-llama-f32.gguf", f32h: true},
	} {
		file := c.file
		rel := "gguf/" + file
		if strings.HasPrefix(file, "ternary/") || strings.HasPrefix(file, "synthetic/") {
			rel = file
		}
		path := testfiles.Path(t, "models", rel)
		m, done := load(t, path)
		if c.repack {
			n := 0
			for i := range m.Blocks {
				for _, w := range m.Blocks[i].Matrices() {
					if typ, ok := kernels.RepackType(w.Type, w.Rows, w.Cols); ok {
						dst := make([]byte, len(w.Data))
						if err := kernels.RepackTo(typ, dst, w.Data, w.Rows, w.Cols); err != nil {
							t.Fatal(err)
						}
						w.Type, w.Data = typ, dst
						n++
					}
				}
			}
			if n == 0 {
				t.Fatalf("%s: no matrix to repack", file)
			}
			file += " repacked"
		}
		if c.f32h {
			n := 0
			for i := range m.Blocks {
				for _, w := range m.Blocks[i].Matrices() {
					rb, ok := kernels.F32HRowBytes(w.Cols)
					if w.Type != quant.F32 || !ok {
						continue
					}
					dst := make([]byte, w.Rows*rb)
					if err := kernels.PackF32H(dst, w.Data, w.Rows, w.Cols); err != nil {
						t.Fatal(err)
					}
					w.Type, w.Data = kernels.F32H, dst
					n++
				}
			}
			if n == 0 {
				t.Fatalf("%s: no matrix to pack", file)
			}
			file += " F32H"
		}
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

// TestForwardChunksAllocatesNothing checks that a warm pass of several
// sequences (model.Batch.ForwardChunks: four decoding, one with a run of
// prompt tokens; logits included) allocates nothing, with one and two
// threads.
func TestForwardChunksAllocatesNothing(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf/stories260K-Q4_0.gguf")
	m, done := load(t, path)
	defer done()
	for _, threads := range []int{1, 2} {
		pool := kernels.NewPool(threads)
		var states []*model.State
		for range 4 {
			st, err := m.NewState(256, pool)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, st)
		}
		var bt model.Batch
		toks := [][]int{{1}, {2, 3, 4}, {5}, {6}}
		want := []bool{true, true, false, true}
		step := func() {
			if err := bt.ForwardChunks(states, toks, want); err != nil {
				t.Fatal(err)
			}
		}
		step() // warm up: the batch's buffers
		if n := testing.AllocsPerRun(20, step); n != 0 {
			t.Errorf("%d threads: %v allocations per pass", threads, n)
		}
		pool.Close()
	}
}
