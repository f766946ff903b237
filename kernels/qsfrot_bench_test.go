package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkRotDecode measures the rotated types' matrix-vector products
// per tier, one thread, on a 2048×768 matrix (the ffn shape of a 768-wide
// model; 0.5 to 0.9 MB) and a 512×768 one (L2-resident: the kernels'
// compute alone). cpu-ns/op is the thread's CPU time per product, which
// load on the machine disturbs less than wall time.
func BenchmarkRotDecode(b *testing.B) {
	for _, c := range []struct {
		typ        quant.Type
		rows, cols int
	}{
		{quant.QSF_Q2R, 2048, 768}, {quant.QSF_Q3R, 2048, 768}, {quant.QSF_Q4R, 2048, 768},
		{quant.QSF_Q2R, 512, 768}, {quant.QSF_Q3R, 512, 768}, {quant.QSF_Q4R, 512, 768},
	} {
		typ, rows, cols := c.typ, c.rows, c.cols
		r := rand.New(rand.NewPCG(5, 6))
		w := randomRows(r, typ, rows, cols)
		act := randomRows(r, quant.Q8_0, 1, cols)
		out := make([]float32, rows)
		for _, name := range Tiers() {
			tr, err := TierNamed(name)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%v/%dx%d/%s", typ, rows, cols, name), func(b *testing.B) {
				p := NewPoolTier(tr, 1)
				defer p.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					p.MatVec(typ, out, w, cols, act)
				}
				if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
