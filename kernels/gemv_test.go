package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// extremeQ4_0 overwrites some blocks of a Q4_0 matrix and its Q8_0
// activation with the corners of their ranges: all-0 and all-15 nibbles,
// ±127 quants, and fp16 scales from subnormal to large, so that a kernel
// that saturates or rounds a scale differently shows.
func extremeQ4_0(r *rand.Rand, w, act []byte) {
	scales := []float32{0, 6e-8, -6e-8, 1e-5, 1, -1, 1000, -65504}
	for o := 0; o < len(w); o += 18 {
		switch r.IntN(6) {
		case 0:
			putF16(w[o:], scales[r.IntN(len(scales))])
		case 1:
			for j := 0; j < 16; j++ {
				w[o+2+j] = 0xff
			}
		case 2:
			for j := 0; j < 16; j++ {
				w[o+2+j] = 0
			}
		}
	}
	for o := 0; o < len(act); o += 34 {
		switch r.IntN(6) {
		case 0:
			putF16(act[o:], scales[r.IntN(len(scales))])
		case 1, 2:
			v := byte(127)
			if r.IntN(2) == 0 {
				v = byte(0x81) // -127
			}
			for j := 0; j < 32; j++ {
				act[o+2+j] = v
			}
		}
	}
}

// extremeQ8_0 overwrites some blocks of a Q8_0 matrix with the corners of
// its range (±127 quants, scales from subnormal to the largest fp16) so
// that a kernel that saturates or rounds differently shows.
func extremeQ8_0(r *rand.Rand, w []byte) {
	scales := []float32{0, 6e-8, -6e-8, 1e-5, 1, -1, 1000, -65504}
	for o := 0; o < len(w); o += 34 {
		switch r.IntN(5) {
		case 0:
			putF16(w[o:], scales[r.IntN(len(scales))])
		case 1:
			v := byte(127)
			if r.IntN(2) == 0 {
				v = byte(0x81) // -127
			}
			for j := 0; j < 32; j++ {
				w[o+2+j] = v
			}
		}
	}
}

// TestQ4_0Gemv checks that Q4_0 matrices of a multiple of 8 rows come out,
// on every tier and through MatVec, Pool.MatVec and MatMul, bit for bit as
// quant.DotQ4_0Gemv (llama.cpp's repacked gemv order) computes them.
func TestQ4_0Gemv(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(31, 32))
	pool := NewPool(2)
	defer pool.Close()
	for _, sh := range []struct{ rows, cols int }{
		{8, 32}, {8, 64}, {16, 96}, {24, 224}, {64, 4096}, {40, 768}, {8, 1280}, {136, 320},
	} {
		for _, extreme := range []bool{false, true} {
			w := randomRows(r, quant.Q4_0, sh.rows, sh.cols)
			act := randomRows(r, quant.Q8_0, 1, sh.cols)
			if extreme {
				extremeQ4_0(r, w, act)
			}
			rowBytes, _ := quant.RowBytes(quant.Q4_0, sh.cols)
			want := make([]float32, sh.rows)
			for i := range want {
				want[i] = quant.DotQ4_0Gemv(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
			}
			const n = 3 // MatMul over n copies of the activation
			acts := make([]byte, 0, n*len(act))
			for range n {
				acts = append(acts, act...)
			}
			for _, name := range Tiers() {
				if err := SetTier(name); err != nil {
					t.Fatal(err)
				}
				pool.base = DefaultTier()
				for _, c := range []struct {
					how  string
					call func(out []float32)
				}{
					{"MatVec", func(out []float32) { MatVec(quant.Q4_0, out, w, sh.cols, act) }},
					{"Pool.MatVec", func(out []float32) { pool.MatVec(quant.Q4_0, out, w, sh.cols, act) }},
					{"MatMul", func(out []float32) {
						all := make([]float32, n*sh.rows)
						pool.MatMul(quant.Q4_0, all, w, sh.cols, acts, n)
						for i := 1; i < n; i++ {
							for j := range sh.rows {
								if math.Float32bits(all[i*sh.rows+j]) != math.Float32bits(all[j]) {
									t.Errorf("MatMul vector %d row %d differs from vector 0", i, j)
								}
							}
						}
						copy(out, all)
					}},
				} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d/extreme=%v", name, c.how, sh.rows, sh.cols, extreme), func(t *testing.T) {
						out := make([]float32, sh.rows)
						c.call(out)
						for i := range out {
							if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
								t.Errorf("row %d: got %g (%#x), DotQ4_0Gemv %g (%#x)", i, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
							}
						}
					})
				}
			}
		}
	}
}

// TestQ4_0GemvKernel calls each tier's gemv kernel directly on row counts
// that are not a multiple of 8 too, where the kernel finishes the last rows
// in Go, and checks that it writes nothing past out.
func TestQ4_0GemvKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, tr := range available {
		if tr.rowsOf(q4_0Gemv) == nil {
			continue
		}
		for _, sh := range []struct{ rows, cols int }{{1, 32}, {7, 64}, {8, 32}, {9, 96}, {23, 256}, {32, 4096}} {
			w := randomRows(r, quant.Q4_0, sh.rows, sh.cols)
			act := randomRows(r, quant.Q8_0, 1, sh.cols)
			rowBytes, _ := quant.RowBytes(quant.Q4_0, sh.cols)
			out := make([]float32, sh.rows+1)
			out[sh.rows] = 42
			tr.rowsOf(q4_0Gemv)(out[:sh.rows], w, rowBytes, sh.cols, act, tr.prepare(quant.Q4_0, nil, act, sh.cols))
			for i := 0; i < sh.rows; i++ {
				want := quant.DotQ4_0Gemv(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
				if math.Float32bits(out[i]) != math.Float32bits(want) {
					t.Errorf("%s %dx%d row %d: got %g, want %g", tr.name, sh.rows, sh.cols, i, out[i], want)
				}
			}
			if out[sh.rows] != 42 {
				t.Errorf("%s %dx%d: kernel wrote past out", tr.name, sh.rows, sh.cols)
			}
		}
	}
}

// BenchmarkQ4_0Order compares, on one thread and a 4096×4096 matrix, each
// tier's Q4_0 kernel in ggml_vec_dot_q4_0_q8_0's order ("vecdot") with its
// kernel in the repacked gemv order ("gemv").
func BenchmarkQ4_0Order(b *testing.B) {
	const rows, cols = 4096, 4096
	r := rand.New(rand.NewPCG(11, 12))
	w := randomRows(r, quant.Q4_0, rows, cols)
	act := randomRows(r, quant.Q8_0, 1, cols)
	rowBytes, _ := quant.RowBytes(quant.Q4_0, cols)
	out := make([]float32, rows)
	for _, tr := range available {
		aux := tr.prepare(quant.Q4_0, nil, act, cols)
		for _, k := range []struct {
			name string
			f    rowsFunc
		}{{"vecdot", tr.rowsOf(quant.Q4_0)}, {"gemv", tr.rowsOf(q4_0Gemv)}} {
			if k.f == nil {
				continue
			}
			b.Run(tr.name+"/"+k.name, func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					k.f(out, w, rowBytes, cols, act, aux)
				}
				if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
					b.ReportMetric(float64(len(w))*float64(b.N)/float64(cpu1-cpu0)*1e3, "cpuMB/s")
				}
			})
		}
	}
}
