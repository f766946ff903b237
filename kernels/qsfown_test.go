package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestOwnTypesEveryTier multiplies matrices of QSF's own types under every
// tier and requires each row to equal quant's reference Dot bit for bit
// (the tiers run it through their generic fallback until they have
// kernels of their own).
func TestOwnTypesEveryTier(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(17, 1))
	for _, typ := range []quant.Type{quant.QSF_Q2A, quant.QSF_Q3A, quant.QSF_Q4A, quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R} {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range []struct{ rows, cols int }{{1, 64}, {3, 192}, {5, 320}, {17, 4096}} {
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			w := make([]byte, sh.rows*rowBytes)
			x := make([]float32, sh.cols)
			for i := 0; i < sh.rows; i++ {
				for j := range x {
					x[j] = float32(r.NormFloat64())
				}
				if err := quant.QuantizeRow(typ, w[i*rowBytes:(i+1)*rowBytes], x); err != nil {
					t.Fatal(err)
				}
			}
			for j := range x {
				x[j] = float32(r.NormFloat64())
			}
			actBytes, _ := quant.RowBytes(tt.VecDot, sh.cols)
			act := make([]byte, actBytes)
			if err := quant.QuantizeRow(tt.VecDot, act, x); err != nil {
				t.Fatal(err)
			}
			for _, name := range Tiers() {
				t.Run(fmt.Sprintf("%s/%v/%dx%d", name, typ, sh.rows, sh.cols), func(t *testing.T) {
					if err := SetTier(name); err != nil {
						t.Fatal(err)
					}
					out := make([]float32, sh.rows)
					MatVec(typ, out, w, sh.cols, act)
					for i, got := range out {
						if want := tt.Dot(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act); got != want {
							t.Errorf("row %d: %g, reference %g", i, got, want)
						}
					}
				})
			}
		}
	}
}
