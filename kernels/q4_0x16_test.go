package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestQ4_0x16Layout checks the Q4_0x16 layout: each block is the Q4_0x8
// blocks of its two groups of 8 rows interleaved (unpackQ4_0x16Block
// gives them back), repacking in place or a run of groups at a time gives
// the same bytes, Repack never picks it, RepackType picks it before
// Q4_0x8 only on a tier with kernels of its own for it, and shapes it
// cannot hold are refused.
func TestQ4_0x16Layout(t *testing.T) {
	r := rand.New(rand.NewPCG(161, 162))
	for _, sh := range []struct{ rows, cols int }{{16, 32}, {32, 96}, {48, 544}, {400, 4096}} {
		w := randomRows(r, quant.Q4_0, sh.rows, sh.cols)
		x8 := make([]byte, len(w))
		if err := RepackTo(Q4_0x8, x8, w, sh.rows, sh.cols); err != nil {
			t.Fatal(err)
		}
		x16 := make([]byte, len(w))
		if err := RepackTo(Q4_0x16, x16, w, sh.rows, sh.cols); err != nil {
			t.Fatal(err)
		}
		nb := sh.cols / 32
		back := make([]byte, len(w))
		for g := 0; g < sh.rows/16; g++ {
			for b := 0; b < nb; b++ {
				o := g*nb*q4_0x16Block + b*q4_0x16Block
				unpackQ4_0x16Block((*[q4_0x16Block]byte)(x16[o:]),
					(*[q4_0x8Block]byte)(back[2*g*nb*q4_0x8Block+b*q4_0x8Block:]),
					(*[q4_0x8Block]byte)(back[(2*g+1)*nb*q4_0x8Block+b*q4_0x8Block:]), false)
			}
		}
		if !bytes.Equal(back, x8) {
			t.Errorf("%dx%d: Q4_0x16 un-interleaved differs from Q4_0x8", sh.rows, sh.cols)
		}
		inPlace := bytes.Clone(w)
		if err := RepackTo(Q4_0x16, inPlace, inPlace, sh.rows, sh.cols); err != nil || !bytes.Equal(inPlace, x16) {
			t.Errorf("%dx%d: repacking in place differs (%v)", sh.rows, sh.cols, err)
		}
		rb, _ := quant.RowBytes(quant.Q4_0, sh.cols)
		runs := make([]byte, len(w))
		for lo := 0; lo < sh.rows; lo += 32 {
			hi := min(lo+32, sh.rows)
			if err := RepackTo(Q4_0x16, runs[lo*rb:hi*rb], w[lo*rb:hi*rb], hi-lo, sh.cols); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(runs, x16) {
			t.Errorf("%dx%d: repacking runs of groups differs", sh.rows, sh.cols)
		}
		if typ, err := Repack(quant.Q4_0, make([]byte, len(w)), w, sh.rows, sh.cols); err != nil || typ != Q4_0x8 {
			t.Errorf("Repack(Q4_0, %d, %d) = %v, %v; want Q4_0x8", sh.rows, sh.cols, typ, err)
		}
	}
	for _, tr := range available {
		rows, _ := tr.KernelTiers(Q4_0x16, 16)
		native := rows != genericTier.name
		if native != (tr.name == "avx512") {
			t.Errorf("%s: Q4_0x16 kernel of its own = %v", tr.name, native)
		}
		for _, c := range []struct{ rows, cols int }{{16, 32}, {48, 256}, {24, 256}, {8, 64}} {
			want := Q4_0x8
			if native && c.rows%16 == 0 {
				want = Q4_0x16
			}
			if got, ok := tr.RepackType(quant.Q4_0, c.rows, c.cols); got != want || !ok {
				t.Errorf("%s.RepackType(Q4_0, %d, %d) = %v, %v; want %v", tr.name, c.rows, c.cols, typeName(got), ok, typeName(want))
			}
		}
	}
	for _, c := range []struct{ rows, cols, srcLen, dstLen int }{
		{8, 32, 8 * 18, 8 * 18},
		{24, 32, 24 * 18, 24 * 18},
		{16, 48, 16 * 27, 16 * 27},
		{16, 32, 16 * 18, 16*18 - 1},
	} {
		if err := RepackTo(Q4_0x16, make([]byte, c.dstLen), make([]byte, c.srcLen), c.rows, c.cols); !errors.Is(err, ErrRepack) {
			t.Errorf("RepackTo(Q4_0x16, %d×%d): got %v, want ErrRepack", c.rows, c.cols, err)
		}
	}
	if err := RepackTo(quant.Q4_0, make([]byte, 16*18), make([]byte, 16*18), 16, 32); !errors.Is(err, ErrRepack) {
		t.Errorf("RepackTo(Q4_0): got %v, want ErrRepack", err)
	}
}

// TestQ4_0x16Bits checks that every tier multiplies a Q4_0x16 matrix
// through MatVec, MatMul (1 to 9 activations: the avx512 tiles of 8 and
// their rests) and pools of 2 and 3 threads (MatVec, MatVecs with a
// Q4_0x8 task before it, MatMul, MatMuls) bit for bit as the generic tier
// multiplies the same matrix as Q4_0x8, and as quant.DotQ4_0Gemv
// multiplies the file's rows, on random and extreme data.
func TestQ4_0x16Bits(t *testing.T) {
	r := rand.New(rand.NewPCG(163, 164))
	pools := map[string]*Pool{}
	for _, tr := range available {
		for _, th := range []int{2, 3} {
			pools[fmt.Sprintf("%s/%d", tr.name, th)] = NewPoolTier(tr, th)
		}
	}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	for _, sh := range []struct{ rows, cols int }{{16, 32}, {32, 64}, {48, 96}, {16, 4096}, {400, 544}, {32, 1024}} {
		for _, extreme := range []bool{false, true} {
			const nmax = 9
			w := randomRows(r, quant.Q4_0, sh.rows, sh.cols)
			acts := randomRows(r, quant.Q8_0, nmax, sh.cols)
			if extreme {
				extremeQ4_0(r, w, acts)
			}
			actBytes := len(acts) / nmax
			rb, _ := quant.RowBytes(quant.Q4_0, sh.cols)
			x8, x16 := make([]byte, len(w)), make([]byte, len(w))
			if err := RepackTo(Q4_0x8, x8, w, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			if err := RepackTo(Q4_0x16, x16, w, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, nmax*sh.rows)
			genericTier.MatMul(Q4_0x8, want, x8, sh.cols, acts, nmax)
			for k := 0; k < nmax; k += 4 { // the reference, on a sample
				for i := 0; i < sh.rows; i += 7 {
					ref := quant.DotQ4_0Gemv(sh.cols, w[i*rb:(i+1)*rb], acts[k*actBytes:(k+1)*actBytes])
					sameFloats(t, "generic Q4_0x8 vs DotQ4_0Gemv", []float32{want[k*sh.rows+i]}, []float32{ref})
				}
			}
			for _, tr := range available {
				name := fmt.Sprintf("%s/%dx%d/extreme=%v", tr.name, sh.rows, sh.cols, extreme)
				got := make([]float32, sh.rows+1)
				got[sh.rows] = 42
				tr.MatVec(Q4_0x16, got[:sh.rows], x16, sh.cols, acts[:actBytes])
				sameFloats(t, name+"/MatVec", got[:sh.rows], want[:sh.rows])
				if got[sh.rows] != 42 {
					t.Errorf("%s/MatVec wrote past out", name)
				}
				for n := 1; n <= nmax; n++ {
					got := make([]float32, n*sh.rows)
					tr.MatMul(Q4_0x16, got, x16, sh.cols, acts[:n*actBytes], n)
					for k := 0; k < n; k++ {
						sameFloats(t, fmt.Sprintf("%s/MatMul n=%d act %d", name, n, k), got[k*sh.rows:(k+1)*sh.rows], want[k*sh.rows:(k+1)*sh.rows])
					}
				}
				for _, th := range []int{2, 3} {
					p := pools[fmt.Sprintf("%s/%d", tr.name, th)]
					pn := fmt.Sprintf("%s/pool%d", name, th)
					got := make([]float32, sh.rows)
					p.MatVec(Q4_0x16, got, x16, sh.cols, acts[:actBytes])
					sameFloats(t, pn+"/MatVec", got, want[:sh.rows])
					// A Q4_0x8 task of 8 rows first: the job's pieces
					// go by 16 rows, so it runs task by task.
					first, both := make([]float32, 8), make([]float32, sh.rows)
					p.MatVecs([]MatVecTask{
						{Type: Q4_0x8, Out: first, W: x8[:8*rb], Cols: sh.cols, Act: acts[:actBytes]},
						{Type: Q4_0x16, Out: both, W: x16, Cols: sh.cols, Act: acts[:actBytes]},
					})
					sameFloats(t, pn+"/MatVecs first", first, want[:8])
					sameFloats(t, pn+"/MatVecs", both, want[:sh.rows])
					p.MatVecs([]MatVecTask{
						{Type: Q4_0x16, Out: both, W: x16, Cols: sh.cols, Act: acts[:actBytes]},
						{Type: Q4_0x8, Out: first, W: x8[:8*rb], Cols: sh.cols, Act: acts[:actBytes]},
					})
					sameFloats(t, pn+"/MatVecs x16 first", both, want[:sh.rows])
					for _, n := range []int{4, 9} {
						got := make([]float32, n*sh.rows)
						p.MatMul(Q4_0x16, got, x16, sh.cols, acts[:n*actBytes], n)
						other := make([]float32, n*sh.rows)
						p.MatMuls([]MatMulTask{
							{Type: Q4_0x8, Out: other, W: x8, Cols: sh.cols, Acts: acts[:n*actBytes], N: n},
							{Type: Q4_0x16, Out: got, W: x16, Cols: sh.cols, Acts: acts[:n*actBytes], N: n},
						})
						for k := 0; k < n; k++ {
							sameFloats(t, fmt.Sprintf("%s/MatMuls n=%d act %d", pn, n, k), got[k*sh.rows:(k+1)*sh.rows], want[k*sh.rows:(k+1)*sh.rows])
							sameFloats(t, fmt.Sprintf("%s/MatMuls x8 n=%d act %d", pn, n, k), other[k*sh.rows:(k+1)*sh.rows], want[k*sh.rows:(k+1)*sh.rows])
						}
					}
				}
			}
		}
	}
}
