package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkMatMulQ4_0x8Shapes measures MatMul of a few Q4_0x8 activations
// (decoding steps of 1..8 sequences) on one thread, for each assembly
// tier, on a matrix that fits in L2 (512×768), one that about fills it
// (2048×768, BenchmarkMatMulSmallN's) and one larger than the L3 cache
// (16384×2048, 18 MiB of weights, two of them alternated; 8192×768, 3.4
// MiB, twelve of them in turn: the weights stream from memory, as a
// model's do); cpu-ns/tok is the thread's CPU time per activation. The
// -x16 runs multiply the same matrices as Q4_0x16 (avx512).
func BenchmarkMatMulQ4_0x8Shapes(b *testing.B) {
	for _, sh := range []struct{ rows, cols, mats int }{{512, 768, 1}, {2048, 768, 1}, {16384, 2048, 2}, {8192, 768, 12}} {
		r := rand.New(rand.NewPCG(23, 24))
		ws, x16 := make([][]byte, sh.mats), make([][]byte, sh.mats)
		for m := range ws {
			w := randomRows(r, quant.Q4_0, sh.rows, sh.cols)
			ws[m], x16[m] = make([]byte, len(w)), make([]byte, len(w))
			if err := RepackTo(Q4_0x8, ws[m], w, sh.rows, sh.cols); err != nil {
				b.Fatal(err)
			}
			if err := RepackTo(Q4_0x16, x16[m], w, sh.rows, sh.cols); err != nil {
				b.Fatal(err)
			}
		}
		for _, n := range []int{1, 2, 3, 4, 6, 8} {
			acts := randomRows(r, quant.Q8_0, n, sh.cols)
			out := make([]float32, n*sh.rows)
			for _, name := range Tiers() {
				if name == "generic" {
					continue
				}
				tr, _ := TierNamed(name)
				for _, l := range []struct {
					suffix string
					typ    quant.Type
					ws     [][]byte
				}{{"", Q4_0x8, ws}, {"-x16", Q4_0x16, x16}} {
					if l.typ == Q4_0x16 && !q4_0x16Native(tr) {
						continue
					}
					b.Run(fmt.Sprintf("%dx%d/n=%d/%s%s", sh.rows, sh.cols, n, name, l.suffix), func(b *testing.B) {
						b.SetBytes(int64(len(l.ws[0])))
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						c0 := threadCPU()
						for i := 0; i < b.N; i++ {
							tr.MatMul(l.typ, out, l.ws[i%len(l.ws)], sh.cols, acts, n)
						}
						if c0 >= 0 {
							b.ReportMetric(float64(threadCPU()-c0)/float64(b.N*n), "cpu-ns/tok")
						}
					})
				}
			}
		}
	}
}
