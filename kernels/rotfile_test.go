package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestRotFileRows multiplies matrices of the rotated types in the file's
// layout through every tier's Pool.MatVec (1, 2 and 3 threads, so that
// the pieces of 8-row groups and the last rows fall in several places),
// Pool.MatMul and MatVec, with row counts around multiples of 8, odd
// block counts and extreme blocks, and requires quant's reference dot
// bit for bit: the avx512 tier's 8-row kernels and the single-row kernel
// for the rows they leave.
func TestRotFileRows(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(91, 92))
	pools := map[int]*Pool{1: NewPool(1), 2: NewPool(2), 3: NewPool(3)}
	for _, p := range pools {
		defer p.Close()
	}
	for _, typ := range []quant.Type{quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R} {
		tt, _ := quant.Lookup(typ)
		for _, sh := range []struct{ rows, cols int }{{8, 64}, {15, 192}, {16, 1088}, {17, 320}, {40, 576}, {63, 128}, {136, 2048}} {
			w := randomRows(r, typ, sh.rows, sh.cols)
			if sh.rows%2 == 1 {
				extremeRot(r, w, typ.BlockBytes())
			}
			const n = 3
			acts := randomRows(r, quant.Q8_0, n, sh.cols)
			extremeQ8_0(r, acts)
			rb, _ := quant.RowBytes(typ, sh.cols)
			ab := len(acts) / n
			want := make([]float32, n*sh.rows)
			for k := 0; k < n; k++ {
				for i := 0; i < sh.rows; i++ {
					want[k*sh.rows+i] = tt.Dot(sh.cols, w[i*rb:(i+1)*rb], acts[k*ab:(k+1)*ab])
				}
			}
			for _, name := range Tiers() {
				if err := SetTier(name); err != nil {
					t.Fatal(err)
				}
				prefix := fmt.Sprintf("%s/%v/%dx%d", name, typ, sh.rows, sh.cols)
				got := make([]float32, n*sh.rows)
				MatVec(typ, got[:sh.rows], w, sh.cols, acts[:ab])
				sameFloats(t, prefix+" MatVec", got[:sh.rows], want[:sh.rows])
				for threads, p := range pools {
					p.base = DefaultTier()
					clear(got)
					p.MatVec(typ, got[:sh.rows], w, sh.cols, acts[:ab])
					sameFloats(t, fmt.Sprintf("%s Pool%d.MatVec", prefix, threads), got[:sh.rows], want[:sh.rows])
					clear(got)
					p.MatMul(typ, got, w, sh.cols, acts, n)
					sameFloats(t, fmt.Sprintf("%s Pool%d.MatMul", prefix, threads), got, want)
				}
			}
		}
	}
}
