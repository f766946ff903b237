package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// tq1Value returns element e (0..255) of a TQ1_0 block as −1, 0 or +1
// (or 2 for TQ2_0's unused code 3), from the base-3 definition: byte q
// holds trit n as ⌊(q·3ⁿ mod 256)·3/256⌋.
func tq1Value(b []byte, e int) int {
	var q byte
	var n int
	switch {
	case e < 160:
		q, n = b[e%32], e/32
	case e < 240:
		q, n = b[32+(e-160)%16], (e-160)/16
	default:
		q, n = b[48+(e-240)%4], (e-240)/4
	}
	p := q
	for range n {
		p *= 3
	}
	return int(uint16(p)*3>>8) - 1
}

func tq2Value(b []byte, e int) int {
	return int(b[32*(e/128)+e%32]>>(2*((e%128)/32))&3) - 1
}

func refTernary(n int, w, act []byte, bb int, value func([]byte, int) int) (dot, mag float64) {
	for i := 0; i < n/256; i++ {
		b, y := w[i*bb:], act[i*292:]
		d := float64(f16At(b[bb-2:])) * float64(math.Float32frombits(binary.LittleEndian.Uint32(y)))
		for e := 0; e < 256; e++ {
			t := d * float64(value(b, e)) * float64(int8(y[4+e]))
			dot += t
			mag += math.Abs(t)
		}
	}
	return dot, mag
}

func refTQ1_0(n int, w, act []byte) (float64, float64) { return refTernary(n, w, act, 54, tq1Value) }

func refTQ2_0(n int, w, act []byte) (float64, float64) { return refTernary(n, w, act, 66, tq2Value) }

// TestTernaryTiersBits runs TQ1_0 and TQ2_0 through MatVec under every
// tier and requires each row to equal package quant's Dot (the generic
// tier, ggml's AVX2 order) bit for bit, on random blocks of any bytes,
// odd row counts and one to several blocks per row.
func TestTernaryTiersBits(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(27, 28))
	for _, typ := range []quant.Type{quant.TQ1_0, quant.TQ2_0} {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range []struct{ rows, cols int }{{1, 256}, {3, 256}, {5, 512}, {7, 768}, {17, 1280}, {33, 2048}, {2, 4096}} {
			w := randomRows(r, typ, sh.rows, sh.cols)
			act := randomRows(r, quant.Q8_K, 1, sh.cols)
			rowBytes, _ := quant.RowBytes(typ, sh.cols)
			for _, name := range Tiers() {
				if err := SetTier(name); err != nil {
					t.Fatal(err)
				}
				out := make([]float32, sh.rows+1)
				out[sh.rows] = 42
				MatVec(typ, out[:sh.rows], w, sh.cols, act)
				for i := 0; i < sh.rows; i++ {
					want := tt.Dot(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
					if math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Errorf("%s/%v %dx%d row %d: %g, generic %g", name, typ, sh.rows, sh.cols, i, out[i], want)
					}
				}
				if out[sh.rows] != 42 {
					t.Errorf("%s/%v: wrote past the end of out", name, typ)
				}
			}
		}
	}
}

// TestTernaryMatMul requires MatMul (and Pool.MatMul) of TQ1_0 and TQ2_0
// to give n MatVec calls' results bit for bit on every tier: the prefill
// tiles, whole and partial groups of tokens, odd row counts and matrices
// of several row tiles.
func TestTernaryMatMul(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(29, 30))
	for _, typ := range []quant.Type{quant.TQ1_0, quant.TQ2_0} {
		for _, c := range []struct{ rows, cols, n int }{
			{1, 256, 4}, {7, 768, 1}, {7, 768, 3}, {9, 512, 4}, {13, 768, 5}, {33, 1280, 9}, {130, 2048, 8}, {2100, 256, 65},
		} {
			w := randomRows(r, typ, c.rows, c.cols)
			acts := randomRows(r, quant.Q8_K, c.n, c.cols)
			actBytes := len(acts) / c.n
			want := make([]float32, c.n*c.rows)
			SetTier("generic")
			for i := 0; i < c.n; i++ {
				MatVec(typ, want[i*c.rows:(i+1)*c.rows], w, c.cols, acts[i*actBytes:(i+1)*actBytes])
			}
			for _, name := range Tiers() {
				SetTier(name)
				for _, threads := range []int{0, 2} {
					got := make([]float32, c.n*c.rows)
					if threads == 0 {
						MatMul(typ, got, w, c.cols, acts, c.n)
					} else {
						p := NewPool(threads)
						p.MatMul(typ, got, w, c.cols, acts, c.n)
						p.Close()
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s/%v %dx%d n=%d threads=%d: out[%d] = %g, generic MatVec %g", name, typ, c.rows, c.cols, c.n, threads, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
