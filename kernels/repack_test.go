package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// repackCases are the repacked types: the file type they come from, the
// repacking function, and the reference dot product of a file row that
// the repacked kernels must equal bit for bit (llama.cpp's order for the
// same matrix).
var repackCases = []struct {
	file, packed quant.Type
	group        int
	dot          func(n int, w, act []byte) float32
}{
	{quant.Q4_0, Q4_0x8, 8, quant.DotQ4_0Gemv},
	{quant.Q8_0, Q8_0x4, 4, func(n int, w, act []byte) float32 {
		tr, _ := quant.Lookup(quant.Q8_0)
		return tr.Dot(n, w, act)
	}},
}

// rotRepackCases are the x8 layouts of the rotated types, which
// TestRepacked and BenchmarkRepacked cover beside repackCases (they have
// no tile kernels, so TestAVX512Kernels leaves them out).
var rotRepackCases = []struct {
	file, packed quant.Type
	group        int
	dot          func(n int, w, act []byte) float32
}{
	{quant.QSF_Q2R, QSF_Q2Rx8, 8, fileDot(quant.QSF_Q2R)},
	{quant.QSF_Q3R, QSF_Q3Rx8, 8, fileDot(quant.QSF_Q3R)},
	{quant.QSF_Q4R, QSF_Q4Rx8, 8, fileDot(quant.QSF_Q4R)},
}

// x16RepackCase is Q4_0x16, which TestRepacked and BenchmarkRepacked
// cover beside repackCases (TestAVX512Kernels compares kernels with the
// avx2 tier's, which has none of its own for it: TestQ4_0x16AVX512Kernels).
var x16RepackCase = struct {
	file, packed quant.Type
	group        int
	dot          func(n int, w, act []byte) float32
}{quant.Q4_0, Q4_0x16, 16, quant.DotQ4_0Gemv}

// fileDot returns the reference dot product of file type t.
func fileDot(t quant.Type) func(n int, w, act []byte) float32 {
	tr, err := quant.Lookup(t)
	if err != nil {
		panic(err)
	}
	return tr.Dot
}

// TestRepacked checks that a matrix repacked into Q4_0x8, Q4_0x16, Q8_0x4 or a
// rotated type's x8 layout multiplies, on every tier, through MatVec, Pool.MatVec (1, 2 and 3
// threads), Pool.MatVecs and MatMul (with whole tiles of four activations
// and a remainder), bit for bit as the file type's reference dot product
// computes the file's rows.
func TestRepacked(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(41, 42))
	pools := map[int]*Pool{1: NewPool(1), 2: NewPool(2), 3: NewPool(3)}
	for _, p := range pools {
		defer p.Close()
	}
	for _, rc := range append(append(repackCases[:len(repackCases):len(repackCases)], rotRepackCases...), x16RepackCase) {
		for _, sh := range []struct{ rows, cols int }{
			{8, 32}, {8, 64}, {16, 96}, {24, 224}, {64, 4096}, {40, 768}, {8, 1280}, {136, 320}, {256, 2048}, {12, 96}, {4, 64},
		} {
			if sh.rows%rc.group != 0 || sh.cols%rc.file.BlockSize() != 0 {
				continue
			}
			for _, extreme := range []bool{false, true} {
				w := randomRows(r, rc.file, sh.rows, sh.cols)
				const n = 6 // MatMul activations: one tile of 4 and 2 more
				acts := randomRows(r, quant.Q8_0, n, sh.cols)
				actBytes := len(acts) / n
				if extreme {
					switch rc.file {
					case quant.Q4_0:
						extremeQ4_0(r, w, acts)
					case quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R:
						extremeRot(r, w, rc.file.BlockBytes())
						extremeQ8_0(r, acts)
						for o := 0; o < len(acts); o += 34 {
							if r.IntN(6) == 0 {
								for j := 0; j < 32; j++ {
									acts[o+2+j] = 0x80 // −128
								}
							}
						}
					default:
						extremeQ8_0(r, w)
						extremeQ8_0(r, acts)
					}
				}
				rowBytes, _ := quant.RowBytes(rc.file, sh.cols)
				want := make([]float32, n*sh.rows)
				for k := 0; k < n; k++ {
					for i := 0; i < sh.rows; i++ {
						want[k*sh.rows+i] = rc.dot(sh.cols, w[i*rowBytes:(i+1)*rowBytes], acts[k*actBytes:(k+1)*actBytes])
					}
				}
				packed := make([]byte, len(w))
				if err := RepackTo(rc.packed, packed, w, sh.rows, sh.cols); err != nil {
					t.Fatal(err)
				}
				inPlace := bytes.Clone(w)
				if err := RepackTo(rc.packed, inPlace, inPlace, sh.rows, sh.cols); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(inPlace, packed) {
					t.Fatalf("%dx%d: repacking in place differs from repacking into a copy", sh.rows, sh.cols)
				}
				typ := rc.packed
				act := acts[:actBytes]
				for _, name := range Tiers() {
					if err := SetTier(name); err != nil {
						t.Fatal(err)
					}
					type call struct {
						how  string
						n    int
						call func(out []float32)
					}
					calls := []call{
						{"MatVec", 1, func(out []float32) { MatVec(typ, out, packed, sh.cols, act) }},
						{"MatMul", n, func(out []float32) { MatMul(typ, out, packed, sh.cols, acts, n) }},
					}
					for threads, p := range pools {
						p.base = DefaultTier()
						calls = append(calls,
							call{fmt.Sprintf("Pool%d.MatVec", threads), 1, func(out []float32) { p.MatVec(typ, out, packed, sh.cols, act) }},
							call{fmt.Sprintf("Pool%d.MatMul", threads), n, func(out []float32) { p.MatMul(typ, out, packed, sh.cols, acts, n) }},
							call{fmt.Sprintf("Pool%d.MatVecs", threads), 1, func(out []float32) {
								// The matrix twice, as two tasks of one job.
								half := make([]float32, sh.rows)
								p.MatVecs([]MatVecTask{
									{Type: typ, Out: out, W: packed, Cols: sh.cols, Act: act},
									{Type: typ, Out: half, W: packed, Cols: sh.cols, Act: act},
								})
								for i := range half {
									if math.Float32bits(half[i]) != math.Float32bits(out[i]) {
										t.Errorf("MatVecs: second task row %d differs from the first", i)
									}
								}
							}},
						)
					}
					for _, c := range calls {
						t.Run(fmt.Sprintf("%s/%s/%s/%dx%d/extreme=%v", typeName(typ), name, c.how, sh.rows, sh.cols, extreme), func(t *testing.T) {
							out := make([]float32, c.n*sh.rows+1)
							out[c.n*sh.rows] = 42
							c.call(out[:c.n*sh.rows])
							for i := 0; i < c.n*sh.rows; i++ {
								if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
									t.Errorf("activation %d row %d: got %g (%#x), reference %g (%#x)", i/sh.rows, i%sh.rows,
										out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
								}
							}
							if out[c.n*sh.rows] != 42 {
								t.Error("wrote past out")
							}
						})
					}
				}
			}
		}
	}
}

// TestRepackErrors checks that shapes the Q4_0x8 layout cannot hold,
// wrong lengths and types without a repacked layout are refused with
// ErrRepack, and that MatVec refuses a Q4_0x8 matrix whose row count is
// not a multiple of 8.
func TestRepackErrors(t *testing.T) {
	for _, c := range []struct {
		rows, cols, srcLen, dstLen int
	}{
		{7, 32, 7 * 18, 7 * 18},
		{0, 32, 0, 0},
		{8, 48, 8 * 27, 8 * 27},
		{8, 32, 8 * 18, 8*18 - 1},
		{8, 32, 8*18 + 1, 8*18 + 1},
	} {
		_, err := Repack(quant.Q4_0, make([]byte, c.dstLen), make([]byte, c.srcLen), c.rows, c.cols)
		if !errors.Is(err, ErrRepack) {
			t.Errorf("%d×%d (%d, %d bytes): got %v, want ErrRepack", c.rows, c.cols, c.srcLen, c.dstLen, err)
		}
	}
	if _, err := Repack(quant.Q4_K, make([]byte, 8*144), make([]byte, 8*144), 8, 256); !errors.Is(err, ErrRepack) {
		t.Errorf("Q4_K: got %v, want ErrRepack", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MatVec of a 4-row Q4_0x8 matrix did not panic")
		}
	}()
	MatVec(Q4_0x8, make([]float32, 4), make([]byte, 4*18), 32, make([]byte, 34))
}

// BenchmarkRepacked compares, on a 4096×4096 matrix, the Q4_0 and Q8_0
// kernels in the file's layout with the Q4_0x8 and Q8_0x4 kernels, hot
// (one matrix, in cache as far as it fits) and streaming (matrices
// rotating through more than the L3 cache), at 1 and 2 threads. cpuMB/s
// is throughput per CPU second of the process.
func BenchmarkRepacked(b *testing.B) {
	const rows, cols = 4096, 4096
	for _, rc := range append(append(repackCases[:len(repackCases):len(repackCases)], rotRepackCases...), x16RepackCase) {
		r := rand.New(rand.NewPCG(11, 12))
		w := randomRows(r, rc.file, rows, cols)
		act := randomRows(r, quant.Q8_0, 1, cols)
		out := make([]float32, rows)
		var file, packed [][]byte
		for n := 0; n*len(w) < streamBytes; n++ {
			p := make([]byte, len(w))
			if err := RepackTo(rc.packed, p, w, rows, cols); err != nil {
				b.Fatal(err)
			}
			file, packed = append(file, bytes.Clone(w)), append(packed, p)
		}
		for _, layout := range []struct {
			typ  quant.Type
			mats [][]byte
		}{{rc.file, file}, {rc.packed, packed}} {
			for _, mode := range []string{"hot", "stream"} {
				for _, threads := range []int{1, 2} {
					b.Run(fmt.Sprintf("%s/%s/%s/t%d", DefaultTier().Name(), typeName(layout.typ), mode, threads), func(b *testing.B) {
						mats := layout.mats
						if mode == "hot" {
							mats = mats[:1]
						}
						p := NewPool(threads)
						defer p.Close()
						b.SetBytes(int64(len(w)))
						cpu0 := processCPU()
						for i := 0; b.Loop(); i++ {
							p.MatVec(layout.typ, out, mats[i%len(mats)], cols, act)
						}
						if cpu1 := processCPU(); cpu0 >= 0 && cpu1 > cpu0 {
							b.ReportMetric(float64(len(w))*float64(b.N)/float64(cpu1-cpu0)*1e3, "cpuMB/s")
						}
					})
				}
			}
		}
	}
}

func typeName(t quant.Type) string {
	if t == Q6_KS {
		return "q6_KS"
	}
	switch t {
	case Q4_0x8:
		return "Q4_0x8"
	case Q4_0x16:
		return "Q4_0x16"
	case Q8_0x4:
		return "Q8_0x4"
	case QSF_Q2Rx8, QSF_Q3Rx8, QSF_Q4Rx8:
		return quant.Type(uint32(t)&0xffff).String() + "x8"
	}
	return t.String()
}

// TestRepackTypes checks which matrices RepackType takes: Q4_0 in
// groups of 8 rows (of 16: TestQ4_0x16Layout), Q8_0 in groups of 4, the rotated types in groups of 8
// where the best tier has a kernel for their x8 layout, nothing else.
func TestRepackTypes(t *testing.T) {
	for _, c := range []struct {
		t          quant.Type
		rows, cols int
		want       quant.Type
		ok         bool
	}{
		{quant.Q4_0, 56, 256, Q4_0x8, true}, // 16-row groups: TestQ4_0x16Layout
		{quant.Q4_0, 60, 256, quant.Q4_0, false},
		{quant.Q8_0, 60, 256, Q8_0x4, true},
		{quant.Q8_0, 62, 256, quant.Q8_0, false},
		{quant.Q4_K, 64, 256, quant.Q4_K, false},
		{quant.F32, 64, 256, quant.F32, false},
		{quant.QSF_Q4R, 60, 256, quant.QSF_Q4R, false},
	} {
		got, ok := RepackType(c.t, c.rows, c.cols)
		if got != c.want || ok != c.ok {
			t.Errorf("RepackType(%v, %d, %d) = %v, %v; want %v, %v", c.t, c.rows, c.cols, got, ok, c.want, c.ok)
		}
	}
	// The rotated types take the x8 layout exactly when the tier has a
	// kernel of its own for it; the generic tier never does.
	for _, tr := range available {
		for _, rc := range rotRepackCases {
			rows, _ := tr.KernelTiers(rc.packed, 64)
			native := rows != genericTier.name
			if tr == genericTier && native {
				t.Errorf("generic tier: %v counts as its own", typeName(rc.packed))
			}
			want := rc.file
			if native {
				want = rc.packed
			}
			if got, ok := tr.RepackType(rc.file, 64, 256); got != want || ok != native {
				t.Errorf("%s.RepackType(%v, 64, 256) = %v, %v; want %v, %v", tr.Name(), rc.file, got, ok, want, native)
			}
		}
	}
}

// extremeRot gives blocks of a rotated type's matrix w (bb bytes a
// block) all-zero or all-one codes and multipliers or extreme fp16
// scales, as TestRotTiersBits does.
func extremeRot(r *rand.Rand, w []byte, bb int) {
	for o := 0; o < len(w); o += bb {
		switch r.IntN(8) {
		case 0, 1:
			v := byte(0xff * r.IntN(2))
			for j := 2; j < bb; j++ {
				w[o+j] = v
			}
		case 2:
			putF16(w[o:], []float32{0, 6e-8, -6e-8, 65504, -1}[r.IntN(5)])
		}
	}
}

// BenchmarkPrepRotX8 measures prepRotX8 on a 4096-element activation.
func BenchmarkPrepRotX8(b *testing.B) {
	act := randomRows(rand.New(rand.NewPCG(1, 2)), quant.Q8_0, 1, 4096)
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf = prepRotX8(buf, act, 4096)
	}
}
