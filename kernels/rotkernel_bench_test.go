package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkRotKernels measures the default tier's decode kernels of the
// rotated types in the file's layout and in the x8 layout on a matrix
// that stays in the L2 cache (256×2048, one thread): the kernels' own
// cost, not memory's; cpu-ns/op is the thread's CPU time per mat-vec.
func BenchmarkRotKernels(b *testing.B) {
	const rows, cols = 256, 2048
	r := rand.New(rand.NewPCG(27, 28))
	tr := DefaultTier()
	for _, rc := range rotRepackCases {
		w := randomRows(r, rc.file, rows, cols)
		packed := make([]byte, len(w))
		if _, err := Repack(rc.file, packed, w, rows, cols); err != nil {
			b.Fatal(err)
		}
		act := randomRows(r, quant.Q8_0, 1, cols)
		out := make([]float32, rows)
		for _, m := range []struct {
			typ quant.Type
			w   []byte
		}{{rc.file, w}, {rc.packed, packed}} {
			b.Run(fmt.Sprintf("%s/%s", tr.Name(), typeName(m.typ)), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.SetBytes(int64(len(w)))
				c0 := processCPU()
				for b.Loop() {
					tr.MatVec(m.typ, out, m.w, cols, act)
				}
				if c0 >= 0 {
					b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
