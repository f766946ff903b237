package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkMatMulStreamQ4_0 measures MatMul of 1, 4 and 8 activations
// against Q4_0 matrices in the file's layout (what layer streaming
// multiplies) of TinyLlama's FFN shape, 5632×2048, cycling through
// enough of them (72 MiB) that they come from memory rather than the
// caches; cpu-ns/tok is the thread's CPU time per activation.
func BenchmarkMatMulStreamQ4_0(b *testing.B) {
	const rows, cols, mats = 5632, 2048, 12
	r := rand.New(rand.NewPCG(25, 26))
	ws := make([][]byte, mats)
	for i := range ws {
		ws[i] = randomRows(r, quant.Q4_0, rows, cols)
	}
	for _, n := range []int{1, 4, 8} {
		acts := randomRows(r, quant.Q8_0, n, cols)
		out := make([]float32, n*rows)
		for _, name := range Tiers() {
			if name == "generic" {
				continue
			}
			tr, _ := TierNamed(name)
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				b.SetBytes(int64(len(ws[0])))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := processCPU()
				for i := 0; i < b.N; i++ {
					tr.MatMul(quant.Q4_0, out, ws[i%mats], cols, acts, n)
				}
				if c0 >= 0 {
					b.ReportMetric(float64(processCPU()-c0)/float64(b.N*n), "cpu-ns/tok")
				}
			})
		}
	}
}
