package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkMatMulTier measures, per weight type and tier, MatMul of 64
// activations (a prompt batch) against a 2048×768 matrix (an FFN matrix
// of a small model) on one thread, on every assembly tier; cpu-ms/op is the thread's CPU time, which
// other load on the machine disturbs less than the wall time.
func BenchmarkMatMulTier(b *testing.B) {
	const rows, cols, n = 2048, 768, 64
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, Q4_0x8, Q8_0x4} {
		r := rand.New(rand.NewPCG(23, 24))
		file := typ
		if k := repackOf(typ); k != nil {
			file = k.file
		}
		w := randomRows(r, file, rows, cols)
		if file != typ {
			packed := make([]byte, len(w))
			if _, err := Repack(file, packed, w, rows, cols); err != nil {
				b.Fatal(err)
			}
			w = packed
		}
		tt, err := Lookup(typ)
		if err != nil {
			b.Fatal(err)
		}
		acts := randomRows(r, tt.VecDot, n, cols)
		out := make([]float32, n*rows)
		for _, name := range Tiers() {
			if name == "generic" {
				continue // a hundred times slower: not what this measures
			}
			tr, _ := TierNamed(name)
			b.Run(fmt.Sprintf("%v/%s", typeName(typ), name), func(b *testing.B) {
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
