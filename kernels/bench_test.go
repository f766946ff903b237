package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// streamBytes is how much weight memory the "stream" benchmarks rotate
// through, enough that no cache level flatters them.
const streamBytes = 1 << 30

var streamBuf []byte

// benchTypes are the weight types BenchmarkMatVec covers.
var benchTypes = []quant.Type{
	quant.Q8_0, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.IQ4_NL,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K,
	quant.F16, quant.BF16, quant.F32, quant.TQ1_0, quant.TQ2_0,
	quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R,
}

// BenchmarkMatVec measures 4096×4096 matrix-vector products per type, tier
// and thread count. "hot" reuses one matrix (cache-resident where it fits);
// "stream" rotates through ≥1 GiB of matrices, as a forward pass does.
// Throughput is weight bytes per second.
func BenchmarkMatVec(b *testing.B) {
	defer SetTier(DefaultTier().Name())
	const rows, cols = 4096, 4096
	for _, typ := range benchTypes {
		if _, err := quant.Lookup(typ); err != nil {
			b.Logf("%v: %v; skipped", typ, err)
			continue
		}
		r := rand.New(rand.NewPCG(11, 12))
		w := randomRows(r, typ, rows, cols)
		act := randomRows(r, vecDotType[typ], 1, cols)
		out := make([]float32, rows)
		var mats [][]byte
		stream := func() [][]byte {
			if mats == nil {
				if streamBuf == nil {
					streamBuf = make([]byte, streamBytes+len(w)*2)
				}
				for o := 0; o+len(w) <= len(streamBuf); o += len(w) {
					mats = append(mats, streamBuf[o:o+len(w):o+len(w)])
					copy(mats[len(mats)-1], w)
				}
			}
			return mats
		}
		for _, name := range Tiers() {
			for _, mode := range []string{"hot", "stream"} {
				for _, threads := range []int{1, 2} {
					b.Run(fmt.Sprintf("%v/%s/%s/t%d", typ, name, mode, threads), func(b *testing.B) {
						SetTier(name)
						ms := [][]byte{w}
						if mode == "stream" {
							ms = stream()
						}
						p := NewPool(threads)
						defer p.Close()
						b.SetBytes(int64(len(w)))
						if threads == 1 {
							runtime.LockOSThread()
							defer runtime.UnlockOSThread()
						}
						b.ResetTimer()
						cpu0 := threadCPU()
						for i := 0; i < b.N; i++ {
							p.MatVec(typ, out, ms[i%len(ms)], cols, act)
						}
						if cpu1 := threadCPU(); threads == 1 && cpu0 >= 0 && cpu1 > cpu0 {
							// Throughput per CPU second of the one
							// thread, immune to other load on the machine.
							b.ReportMetric(float64(len(w))*float64(b.N)/float64(cpu1-cpu0)*1e3, "cpuMB/s")
						}
					})
				}
			}
		}
	}
}

// BenchmarkPoolParallel measures the fixed cost of one Parallel call: wake,
// split, wait.
func BenchmarkPoolParallel(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("t%d", threads), func(b *testing.B) {
			p := NewPool(threads)
			defer p.Close()
			var c counter
			fn := c.add
			for i := 0; i < b.N; i++ {
				p.Parallel(64, fn)
			}
		})
	}
}

// BenchmarkMatVecSmall measures the 768-wide matrices of a small model,
// where the pool's overhead is a larger share.
func BenchmarkMatVecSmall(b *testing.B) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		if _, err := quant.Lookup(typ); err != nil {
			b.Skip(err)
		}
		r := rand.New(rand.NewPCG(13, 14))
		const rows, cols = 768, 768
		w := randomRows(r, typ, rows, cols)
		act := randomRows(r, vecDotType[typ], 1, cols)
		out := make([]float32, rows)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/t%d", typ, threads), func(b *testing.B) {
				p := NewPool(threads)
				defer p.Close()
				b.SetBytes(int64(len(w)))
				for i := 0; i < b.N; i++ {
					p.MatVec(typ, out, w, cols, act)
				}
			})
		}
	}
}

// BenchmarkMatMul measures 16 activations against one 4096×4096 matrix, as
// MatMul and as 16 MatVec calls; throughput counts the weight bytes once
// per activation.
func BenchmarkMatMul(b *testing.B) {
	const rows, cols, n = 4096, 4096, 16
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q8_0} {
		if _, err := quant.Lookup(typ); err != nil {
			b.Skip(err)
		}
		r := rand.New(rand.NewPCG(21, 22))
		w := randomRows(r, typ, rows, cols)
		acts := randomRows(r, vecDotType[typ], n, cols)
		actBytes := len(acts) / n
		out := make([]float32, n*rows)
		for _, threads := range []int{1, 2} {
			p := NewPool(threads)
			b.Run(fmt.Sprintf("%v/MatMul/t%d", typ, threads), func(b *testing.B) {
				b.SetBytes(int64(n * len(w)))
				for i := 0; i < b.N; i++ {
					p.MatMul(typ, out, w, cols, acts, n)
				}
			})
			b.Run(fmt.Sprintf("%v/MatVecs/t%d", typ, threads), func(b *testing.B) {
				b.SetBytes(int64(n * len(w)))
				for i := 0; i < b.N; i++ {
					for k := 0; k < n; k++ {
						p.MatVec(typ, out[k*rows:(k+1)*rows], w, cols, acts[k*actBytes:(k+1)*actBytes])
					}
				}
			})
			p.Close()
		}
	}
}
