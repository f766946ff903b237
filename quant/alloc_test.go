package quant_test

import (
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestDotAllocatesNothing: the reference dot products are the generic
// kernel tier (the only one on arm64 and purego builds), so they run once
// per row per token and must not allocate.
func TestDotAllocatesNothing(t *testing.T) {
	const n = 256
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for _, ty := range []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0, quant.Q4_1,
		quant.Q5_0, quant.Q5_1, quant.IQ4_NL, quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		tr, err := quant.Lookup(ty)
		if err != nil {
			t.Fatal(err)
		}
		at, _ := quant.Lookup(tr.VecDot)
		wb, _ := quant.RowBytes(ty, n)
		ab, _ := quant.RowBytes(tr.VecDot, n)
		w, a := make([]byte, wb), make([]byte, ab)
		tr.Quantize(w, x)
		at.Quantize(a, x)
		if allocs := testing.AllocsPerRun(10, func() { tr.Dot(n, w, a) }); allocs != 0 {
			t.Errorf("%v: Dot allocates %v times", ty, allocs)
		}
		if ty == quant.Q4_0 {
			if allocs := testing.AllocsPerRun(10, func() { quant.DotQ4_0Gemv(n, w, a) }); allocs != 0 {
				t.Errorf("DotQ4_0Gemv allocates %v times", allocs)
			}
		}
	}
}
