package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestVecF32Tiers checks DotF32Rows and AxpyF32 on every tier against the
// scalar definitions, bit for bit, over odd lengths and strides.
func TestVecF32Tiers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	defer SetTier(Tier())
	for _, tier := range Tiers() {
		if err := SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, cols := range []int{1, 7, 8, 16, 31, 32, 33, 64, 100, 128} {
			for _, stride := range []int{cols, cols + 5, 3 * cols} {
				rows := 11
				w, x := vec((rows-1)*stride+cols), vec(cols)
				out := make([]float32, rows)
				DotF32Rows(out, w, stride, x)
				tr, _ := quant.Lookup(quant.F32)
				for r := range out {
					want := tr.Dot(cols, f32Bytes(w[r*stride:r*stride+cols]), f32Bytes(x))
					if math.Float32bits(out[r]) != math.Float32bits(want) {
						t.Fatalf("%s: DotF32Rows cols %d stride %d row %d = %g, want %g", tier, cols, stride, r, out[r], want)
					}
				}
			}
			y, x := vec(cols), vec(cols)
			want := append([]float32(nil), y...)
			a := float32(rng.NormFloat64())
			for i := range want {
				want[i] = quant.FMA32(x[i], a, want[i])
			}
			AxpyF32(y, x, a)
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: AxpyF32 n %d element %d = %g, want %g", tier, cols, i, y[i], want[i])
				}
			}
		}
	}
}

func TestVecF32NoAllocs(t *testing.T) {
	x := make([]float32, 64)
	w := make([]float32, 64*10)
	out := make([]float32, 10)
	if n := testing.AllocsPerRun(100, func() {
		DotF32Rows(out, w, 64, x)
		AxpyF32(x, w[:64], 0.5)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
