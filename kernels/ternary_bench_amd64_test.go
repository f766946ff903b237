//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkTernaryRows compares, on one thread, the tiers' TQ1_0 and TQ2_0
// kernels on the matrix shapes of a 768-wide model (rows × cols), rotating
// through ≥ 256 MiB of copies so that the weights stream from memory as
// in decode. cpuMB/s is weight bytes per second of the thread's CPU time.
func BenchmarkTernaryRows(b *testing.B) {
	for _, typ := range []quant.Type{quant.TQ2_0, quant.TQ1_0} {
		for _, sh := range []struct{ rows, cols int }{{768, 768}, {2048, 768}, {768, 2048}} {
			r := rand.New(rand.NewPCG(57, 58))
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, quant.Q8_K, 1, sh.cols)
			tt, _ := quant.Lookup(typ)
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			out := make([]float32, sh.rows)
			n := max(1, (256<<20)/len(w))
			buf := make([]byte, n*len(w))
			for i := 0; i < n; i++ {
				copy(buf[i*len(w):], w)
			}
			for _, tr := range available[1:] {
				b.Run(fmt.Sprintf("%v/%dx%d/%s", typ, sh.rows, sh.cols, tr.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var aux []byte
					b.SetBytes(int64(len(w)))
					cpu0 := threadCPU()
					for i := 0; i < b.N; i++ {
						o := i % n * len(w)
						aux = tr.prepare(typ, aux, act, sh.cols)
						tr.run(tt, out, buf[o:o+len(w)], rowBytes, sh.cols, act, aux)
					}
					if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
						b.ReportMetric(float64(len(w))*float64(b.N)/float64(cpu1-cpu0)*1e3, "cpuMB/s")
					}
				})
			}
		}
	}
}
