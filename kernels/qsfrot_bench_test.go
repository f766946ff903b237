package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkRotDecode measures the rotated types' matrix-vector products
// per tier on a 2048×768 matrix (the ffn shape of a 768-wide model, in
// cache), one thread. cpu-ns/op is the thread's CPU time per product,
// which load on the machine disturbs less than wall time.
func BenchmarkRotDecode(b *testing.B) {
	const rows, cols = 2048, 768
	for _, typ := range []quant.Type{quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R} {
		r := rand.New(rand.NewPCG(5, 6))
		w := randomRows(r, typ, rows, cols)
		act := randomRows(r, quant.Q8_0, 1, cols)
		out := make([]float32, rows)
		for _, name := range Tiers() {
			tr, err := TierNamed(name)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%v/%s", typ, name), func(b *testing.B) {
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
