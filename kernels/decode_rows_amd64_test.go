//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// decodeTypes are the types whose avx2 kernels walk several rows at once
// (issue #5); each row must still come out as the one-row order computes
// it.
var decodeTypes = []quant.Type{quant.Q8_0, quant.Q4_K, quant.Q6_K}

// TestDecodeRowsBits checks the avx2 kernels of decodeTypes bit for bit
// against package quant's Dot (ggml's AVX2 order) row by row, on every row
// count from 1 to 13 (whole groups of rows and every tail), widths from one
// block up, called directly, one row at a time, and through MatVec and
// Pool.MatVec of 1 to 3 threads under every tier.
func TestDecodeRowsBits(t *testing.T) {
	if !hasAVX2() {
		t.Skip("no AVX2")
	}
	defer SetTier(DefaultTier().Name())
	pools := []*Pool{NewPool(1), NewPool(2), NewPool(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	r := rand.New(rand.NewPCG(51, 52))
	for _, typ := range decodeTypes {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		kern := avx2Tier.rowsOf(typ)
		for _, nb := range []int{1, 2, 3, 5, 8} {
			cols := nb * typ.BlockSize()
			if typ == quant.Q8_0 && nb == 8 {
				cols = 4096 // a realistic width too
			}
			rowBytes, _ := quant.RowBytes(typ, cols)
			for rows := 1; rows <= 13; rows++ {
				t.Run(fmt.Sprintf("%v/%dx%d", typ, rows, cols), func(t *testing.T) {
					w := randomRows(r, typ, rows, cols)
					if typ == quant.Q8_0 && rows%2 == 1 {
						extremeQ8_0(r, w)
					}
					act := randomRows(r, vecDotType[typ], 1, cols)
					want := make([]float32, rows)
					for i := range want {
						want[i] = tt.Dot(cols, w[i*rowBytes:(i+1)*rowBytes], act)
					}
					same := func(how string, got []float32) {
						t.Helper()
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Errorf("%s: row %d: got %g (%#x), want %g (%#x)", how, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
							}
						}
					}

					aux := avx2Tier.prepare(typ, nil, act, cols)
					out := make([]float32, rows+1)
					out[rows] = 42 // sentinel: must not be written
					kern(out[:rows], w, rowBytes, cols, act, aux)
					same("avx2 kernel", out)
					if out[rows] != 42 {
						t.Errorf("avx2 kernel wrote past the end of out")
					}
					one := make([]float32, rows)
					for i := range one {
						kern(one[i:i+1], w[i*rowBytes:(i+1)*rowBytes], rowBytes, cols, act, aux)
					}
					same("avx2 kernel, one row per call", one)

					for _, name := range Tiers() {
						if err := SetTier(name); err != nil {
							t.Fatal(err)
						}
						got := make([]float32, rows)
						MatVec(typ, got, w, cols, act)
						same(name+" MatVec", got)
						for _, p := range pools {
							p.base = DefaultTier()
							clear(got)
							p.MatVec(typ, got, w, cols, act)
							same(fmt.Sprintf("%s Pool(%d).MatVec", name, p.threads), got)
						}
					}
				})
			}
		}
	}
}

// TestDecodeRowsPoolSplit checks, on matrices tall enough for the pool to
// split (ranges start at multiples of rowAlign, the last one ragged), that
// every thread count gives the bits of the one-row kernel.
func TestDecodeRowsPoolSplit(t *testing.T) {
	if !hasAVX2() {
		t.Skip("no AVX2")
	}
	defer SetTier(DefaultTier().Name())
	if err := SetTier("avx2"); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(53, 54))
	for _, typ := range decodeTypes {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range []struct{ rows, cols int }{{61, 512}, {203, 768}, {1027, 256}} {
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, vecDotType[typ], 1, sh.cols)
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			for _, threads := range []int{1, 2, 3} {
				p := NewPool(threads)
				got := make([]float32, sh.rows)
				p.MatVec(typ, got, w, sh.cols, act)
				p.Close()
				for i := range got {
					want := tt.Dot(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Errorf("%v %dx%d t%d row %d: got %g, want %g", typ, sh.rows, sh.cols, threads, i, got[i], want)
					}
				}
			}
		}
	}
}

// oneRowKernels are the avx2 tier's one-row kernels for decodeTypes, the
// baseline BenchmarkDecodeRows compares the multi-row ones with.
var oneRowKernels = map[quant.Type]rowsFunc{
	quant.Q8_0: func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		dotQ8_0AVX2(&out[0], len(out), &w[0], cols/32, &act[0], &aux[0])
	},
	quant.Q4_K: func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		dotQ4_KAVX2(&out[0], len(out), &w[0], cols/256, &act[0])
	},
	quant.Q6_K: func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		dotQ6_KAVX2(&out[0], len(out), &w[0], cols/256, &act[0], &aux[0])
	},
}

// BenchmarkDecodeRows compares, on one thread, the avx2 tier's kernel for
// decodeTypes ("rows") with its one-row kernel ("one") on the matrix
// shapes of a 768-wide model and a 4096-wide one, rotating through ≥ 256
// MiB of copies so that the weights stream from memory as in decode.
func BenchmarkDecodeRows(b *testing.B) {
	if !hasAVX2() {
		b.Skip("no AVX2")
	}
	for _, typ := range decodeTypes {
		for _, sh := range []struct{ rows, cols int }{{768, 768}, {2048, 768}, {768, 2048}, {4096, 4096}} {
			r := rand.New(rand.NewPCG(55, 56))
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, vecDotType[typ], 1, sh.cols)
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			aux := avx2Tier.prepare(typ, nil, act, sh.cols)
			out := make([]float32, sh.rows)
			n := max(1, (256<<20)/len(w))
			buf := make([]byte, n*len(w))
			for i := 0; i < n; i++ {
				copy(buf[i*len(w):], w)
			}
			for _, k := range []struct {
				name string
				f    rowsFunc
			}{{"one", oneRowKernels[typ]}, {"rows", avx2Tier.rowsOf(typ)}} {
				b.Run(fmt.Sprintf("%v/%dx%d/%s", typ, sh.rows, sh.cols, k.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					b.SetBytes(int64(len(w)))
					cpu0 := threadCPU()
					for i := 0; i < b.N; i++ {
						o := i % n * len(w)
						k.f(out, buf[o:o+len(w)], rowBytes, sh.cols, act, aux)
					}
					if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 > cpu0 {
						b.ReportMetric(float64(len(w))*float64(b.N)/float64(cpu1-cpu0)*1e3, "cpuMB/s")
					}
				})
			}
		}
	}
}
