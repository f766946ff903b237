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
// multiplies) of TinyLlama's FFN shapes, 5632×2048 (gate, up) and
// 2048×5632 (down), cycling through enough of them (72 MiB) that they
// come from memory rather than the caches; cpu-ns/tok is the thread's CPU
// time per activation.
func BenchmarkMatMulStreamQ4_0(b *testing.B) {
	for _, shape := range [][2]int{{5632, 2048}, {2048, 5632}} {
		benchMatMulStreamQ4_0(b, shape[0], shape[1])
	}
}

func benchMatMulStreamQ4_0(b *testing.B, rows, cols int) {
	const mats = 12
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
			b.Run(fmt.Sprintf("%dx%d/n=%d/%s", rows, cols, n, name), func(b *testing.B) {
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
