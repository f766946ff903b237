package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestPackedQ4_0 checks MatVecPacked and Pool.MatVecPacked under every tier
// against the reference on the unpacked matrix, including odd block counts.
func TestPackedQ4_0(t *testing.T) {
	defer SetTier(Tier())
	r := rand.New(rand.NewPCG(15, 16))
	for _, sh := range shapesFor(quant.Q4_0) {
		w := randomRows(r, quant.Q4_0, sh.rows, sh.cols)
		act := randomRows(r, quant.Q8_0, 1, sh.cols)
		m, ok := Repack(quant.Q4_0, w, sh.rows, sh.cols)
		if !ok {
			t.Fatalf("Repack(Q4_0, %dx%d) failed", sh.rows, sh.cols)
		}
		if m.Rows() != sh.rows || m.Cols() != sh.cols || m.Type() != quant.Q4_0 {
			t.Fatalf("packed matrix is %v %dx%d", m.Type(), m.Rows(), m.Cols())
		}
		rowBytes, _ := quant.RowBytes(quant.Q4_0, sh.cols)
		for _, name := range Tiers() {
			SetTier(name)
			for _, threads := range []int{0, 1, 2} {
				t.Run(fmt.Sprintf("%s/%dx%d/t%d", name, sh.rows, sh.cols, threads), func(t *testing.T) {
					out := make([]float32, sh.rows)
					if threads == 0 {
						MatVecPacked(out, m, act)
					} else {
						p := NewPool(threads)
						p.MatVecPacked(out, m, act)
						p.Close()
					}
					for i := range out {
						want, mag := refQ4_0(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
						if !within(out[i], want, mag) {
							t.Errorf("row %d: got %g, want %g", i, out[i], want)
						}
					}
				})
			}
		}
	}
}

func TestRepackRejects(t *testing.T) {
	w := make([]byte, 34*2)
	if _, ok := Repack(quant.Q8_0, w, 2, 32); ok {
		t.Error("Repack accepted Q8_0, which has no packed layout")
	}
	if _, ok := Repack(quant.Q4_0, w, 2, 32); ok {
		t.Error("Repack accepted a buffer of the wrong size")
	}
	if _, ok := Repack(quant.Q4_0, w, 1, 33); ok {
		t.Error("Repack accepted a width that is not whole blocks")
	}
}
