package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkGenericDecode measures the generic tier's matrix-vector
// products on the matrix shapes of a 12-layer 768-wide llama (the q, ffn
// and LM-head shapes), one thread, weights hot in cache as far as they
// fit. cpu-ns/op is the CPU time of the thread per product, which load on
// the machine disturbs less than wall time.
func BenchmarkGenericDecode(b *testing.B) {
	tr, err := TierNamed("generic")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		typ        quant.Type
		rows, cols int
	}{
		{Q4_0x8, 768, 768}, {Q4_0x8, 2048, 768}, {Q4_0x8, 768, 2048},
		{Q8_0x4, 2048, 768}, {quant.Q4_K, 2048, 768}, {quant.Q6_K, 2048, 768},
		{quant.F32, 768, 768},
	} {
		file := c.typ
		switch c.typ {
		case Q4_0x8:
			file = quant.Q4_0
		case Q8_0x4:
			file = quant.Q8_0
		}
		r := rand.New(rand.NewPCG(5, 6))
		w := randomRows(r, file, c.rows, c.cols)
		if file != c.typ {
			p := make([]byte, len(w))
			if _, err := Repack(file, p, w, c.rows, c.cols); err != nil {
				b.Fatal(err)
			}
			w = p
		}
		act := randomRows(r, vecDotType[file], 1, c.cols)
		out := make([]float32, c.rows)
		b.Run(fmt.Sprintf("%s/%dx%d", typeName(c.typ), c.rows, c.cols), func(b *testing.B) {
			p := NewPoolTier(tr, 1)
			defer p.Close()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				p.MatVec(c.typ, out, w, c.cols, act)
			}
			if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N)/float64(c.rows*c.cols)*1e3, "cpu-ps/MAC")
			}
		})
	}
}
