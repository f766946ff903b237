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

// TestRotTiersBits checks the rotated types' kernels of every tier bit for
// bit against the generic tier, through the tier's MatVec and MatMul, on
// any codes and multipliers (randomRows), with blocks of all-zero or
// all-one codes and multipliers, extreme fp16 scales and activation
// blocks of all ±127 or −128, every row count from 1 to 13 and some
// more, and block counts that leave every tail of the kernels' loops.
func TestRotTiersBits(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, tr := range available {
		for _, typ := range []quant.Type{quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R} {
			bb := typ.BlockBytes()
			for _, nb := range []int{1, 2, 3, 4, 5, 7, 8, 17} {
				cols := 64 * nb
				for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 24} {
					w := randomRows(r, typ, rows, cols)
					for o := 0; o < len(w); o += bb {
						switch r.IntN(8) {
						case 0, 1:
							v := byte(0xff * r.IntN(2))
							for j := 2; j < bb; j++ {
								w[o+j] = v
							}
						case 2:
							putF16(w[o:], []float32{0, 6e-8, -6e-8, 65504, -1}[r.IntN(5)])
						}
					}
					act := randomRows(r, quant.Q8_0, 1, cols)
					extremeQ8_0(r, act)
					for o := 0; o < len(act); o += 34 {
						if r.IntN(6) == 0 {
							for j := 0; j < 32; j++ {
								act[o+2+j] = 0x80 // −128
							}
						}
					}
					name := fmt.Sprintf("%s/%v/%dx%d", tr.name, typ, rows, cols)
					want := make([]float32, rows)
					genericTier.MatVec(typ, want, w, cols, act)
					got := make([]float32, rows+1)
					got[rows] = 42
					tr.MatVec(typ, got[:rows], w, cols, act)
					sameFloats(t, name+" MatVec", got[:rows], want)
					if got[rows] != 42 {
						t.Errorf("%s: MatVec wrote past out", name)
					}
					if rows > 4 {
						continue
					}
					const n = 3
					acts := randomRows(r, quant.Q8_0, n, cols)
					wantMM := make([]float32, n*rows)
					genericTier.MatMul(typ, wantMM, w, cols, acts, n)
					gotMM := make([]float32, n*rows)
					tr.MatMul(typ, gotMM, w, cols, acts, n)
					sameFloats(t, name+" MatMul", gotMM, wantMM)
				}
			}
		}
	}
}
