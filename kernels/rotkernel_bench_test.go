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

// BenchmarkRotStream measures the default tier's decode kernels of the
// rotated types in the file's layout beside Q4_0's and Q2_K's (what a
// streamed model multiplies) on tinyllama-1.1b's FFN shapes, cycling
// through 12 matrices so that they come from memory; one thread,
// cpuMB/s of weights per CPU second.
func BenchmarkRotStream(b *testing.B) {
	for _, sh := range []struct{ rows, cols int }{{5632, 2048}, {2048, 5632}} {
		for _, typ := range []quant.Type{quant.Q4_0, quant.QSF_Q4R, quant.QSF_Q3R, quant.QSF_Q2R, quant.Q2_K} {
			const mats = 12
			r := rand.New(rand.NewPCG(25, 26))
			ws := make([][]byte, mats)
			for i := range ws {
				ws[i] = randomRows(r, typ, sh.rows, sh.cols)
			}
			tt, _ := quant.Lookup(typ)
			act := randomRows(r, tt.VecDot, 1, sh.cols)
			out := make([]float32, sh.rows)
			tr := DefaultTier()
			b.Run(fmt.Sprintf("%s/%v/%dx%d", tr.Name(), typ, sh.rows, sh.cols), func(b *testing.B) {
				b.SetBytes(int64(len(ws[0])))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := processCPU()
				for i := 0; b.Loop(); i++ {
					tr.MatVec(typ, out, ws[i%mats], sh.cols, act)
				}
				if c1 := processCPU(); c0 >= 0 && c1 > c0 {
					b.ReportMetric(float64(len(ws[0]))*float64(b.N)/float64(c1-c0)*1e3, "cpuMB/s")
				}
			})
		}
	}
}
