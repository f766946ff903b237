package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkMatMulTiles measures MatMul of 32 activations against a
// 768×2048 matrix (one FFN matrix of a small model) on one thread, with
// and without the tile kernels, in wall and in CPU time.
func BenchmarkMatMulTiles(b *testing.B) {
	const rows, cols, n = 2048, 768, 32
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		r := rand.New(rand.NewPCG(23, 24))
		w := randomRows(r, typ, rows, cols)
		acts := randomRows(r, vecDotType[typ], n, cols)
		out := make([]float32, n*rows)
		for _, tiles := range []bool{false, true} {
			b.Run(fmt.Sprintf("%v/tiles=%v", typ, tiles), func(b *testing.B) {
				tr := DefaultTier()
				if !tiles {
					tr = tr.withoutTiles()
				}
				b.SetBytes(int64(n * len(w)))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for i := 0; i < b.N; i++ {
					tr.MatMul(typ, out, w, cols, acts, n)
				}
				if c0 >= 0 {
					b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/1e6, "cpu-ms/op")
				}
			})
		}
	}
}
