//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// BenchmarkMatMulF32 measures F32 MatMul of 32 activations on one thread
// for the shapes of a 768-wide model's FFN (2048×768 gate/up, 768×2048
// down) and attention (768×768): without tiles, with the two-pass tile
// kernel alone (blocks=false) and with the three-row blocks.
func BenchmarkMatMulF32(b *testing.B) {
	const n = 32
	for _, sh := range []struct{ rows, cols int }{{2048, 768}, {768, 2048}, {768, 768}} {
		r := rand.New(rand.NewPCG(29, 30))
		w := randomRows(r, quant.F32, sh.rows, sh.cols)
		acts := randomRows(r, quant.F32, n, sh.cols)
		out := make([]float32, n*sh.rows)
		for _, v := range []struct {
			name          string
			tiles, blocks bool
		}{{"tiles=false", false, false}, {"blocks=false", true, false}, {"blocks=true", true, true}} {
			b.Run(fmt.Sprintf("%dx%d/%s", sh.rows, sh.cols, v.name), func(b *testing.B) {
				tr := DefaultTier()
				switch {
				case !v.tiles:
					tr = tr.withoutTiles()
				case !v.blocks:
					tr = tr.withTile(quant.F32, &tileF32Plain)
				}
				b.SetBytes(int64(n * len(w)))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for i := 0; i < b.N; i++ {
					tr.MatMul(quant.F32, out, w, sh.cols, acts, n)
				}
				flops := 2 * float64(n) * float64(sh.rows) * float64(sh.cols) * float64(b.N)
				if c0 >= 0 {
					cpu := float64(threadCPU() - c0)
					b.ReportMetric(cpu/float64(b.N)/1e6, "cpu-ms/op")
					b.ReportMetric(flops/cpu, "cpu-GFLOP/s")
				}
			})
		}
	}
}

// BenchmarkMatMulHalf measures F16 and BF16 MatMul of 32 activations on
// one thread, as BenchmarkMatMulF32, without and with the tile kernels.
func BenchmarkMatMulHalf(b *testing.B) {
	const n = 32
	for _, typ := range []quant.Type{quant.F16, quant.BF16} {
		for _, sh := range []struct{ rows, cols int }{{2048, 768}, {768, 2048}} {
			r := rand.New(rand.NewPCG(29, 30))
			w := randomRows(r, typ, sh.rows, sh.cols)
			acts := randomRows(r, vecDotType[typ], n, sh.cols)
			out := make([]float32, n*sh.rows)
			for _, tiles := range []bool{false, true} {
				b.Run(fmt.Sprintf("%v/%dx%d/tiles=%v", typ, sh.rows, sh.cols, tiles), func(b *testing.B) {
					tr := DefaultTier()
					if !tiles {
						tr = tr.withoutTiles()
					}
					b.SetBytes(int64(n * len(w)))
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPU()
					for i := 0; i < b.N; i++ {
						tr.MatMul(typ, out, w, sh.cols, acts, n)
					}
					flops := 2 * float64(n) * float64(sh.rows) * float64(sh.cols) * float64(b.N)
					if c0 >= 0 {
						cpu := float64(threadCPU() - c0)
						b.ReportMetric(cpu/float64(b.N)/1e6, "cpu-ms/op")
						b.ReportMetric(flops/cpu, "cpu-GFLOP/s")
					}
				})
			}
		}
	}
}

// BenchmarkF32Tile measures the F32 tile kernel alone on a tile that stays
// in cache: rows×cols weights against four activations, repeatedly.
func BenchmarkF32Tile(b *testing.B) {
	for _, sh := range []struct{ rows, cols int }{{3, 256}, {6, 768}, {39, 768}, {15, 2048}} {
		r := rand.New(rand.NewPCG(31, 32))
		w := randomRows(r, quant.F32, sh.rows, sh.cols)
		acts := randomRows(r, quant.F32, tileTokens, sh.cols)
		packed := make([]byte, packBytesF32T4(sh.cols))
		packF32T4(packed, acts, 4*sh.cols, sh.cols)
		out := make([]float32, tileTokens*sh.rows)
		for _, blocks := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%d/blocks=%v", sh.rows, sh.cols, blocks), func(b *testing.B) {
				tile := f32T4AVX2
				if !blocks {
					tile = f32T4Plain
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for i := 0; i < b.N; i++ {
					tile(out, sh.rows, w, 4*sh.cols, sh.cols, sh.rows, packed)
				}
				flops := 2 * float64(tileTokens) * float64(sh.rows) * float64(sh.cols) * float64(b.N)
				if c0 >= 0 {
					b.ReportMetric(flops/float64(threadCPU()-c0), "cpu-GFLOP/s")
				}
			})
		}
	}
}

// f32T4Plain is the F32 tile of dotF32T4AVX2 alone, without the block
// kernels, for the benchmarks that compare the two (cols a multiple of
// 32).
func f32T4Plain(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	actBytes := f32ActStride(cols)
	_ = packed[(tileTokens-1)*actBytes+4*cols-1]
	dotF32T4AVX2(&out[0], ostride, rows, &w[0], cols/32, rowBytes, &packed[0], actBytes)
}

var tileF32Plain = tileKernel{run: f32T4Plain, rowStep: 1, packBytes: packBytesF32T4, pack: packF32T4}

// BenchmarkMatMulF32Prompt measures F32 MatMul of a prompt batch (64
// tokens, the model's batch) on one thread, on the default tier, for the
// matrices of a 768-wide model (Q, K, V and O 768×768, gate and up
// 2048×768, down 768×2048): cpu-GFLOP/s is per second of the thread's CPU
// time.
func BenchmarkMatMulF32Prompt(b *testing.B) {
	const n = 64
	for _, sh := range []struct{ rows, cols int }{{768, 768}, {2048, 768}, {768, 2048}} {
		r := rand.New(rand.NewPCG(29, 30))
		w := randomRows(r, quant.F32, sh.rows, sh.cols)
		acts := randomRows(r, quant.F32, n, sh.cols)
		out := make([]float32, n*sh.rows)
		b.Run(fmt.Sprintf("%dx%d", sh.rows, sh.cols), func(b *testing.B) {
			tr := DefaultTier()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := threadCPU()
			for i := 0; i < b.N; i++ {
				tr.MatMul(quant.F32, out, w, sh.cols, acts, n)
			}
			flops := 2 * float64(n) * float64(sh.rows) * float64(sh.cols) * float64(b.N)
			if c0 >= 0 {
				cpu := float64(threadCPU() - c0)
				b.ReportMetric(cpu/float64(b.N)/1e6, "cpu-ms/op")
				b.ReportMetric(flops/cpu, "cpu-GFLOP/s")
			}
		})
	}
}
