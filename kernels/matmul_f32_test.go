package kernels

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestMatMulF32 checks F32, F16 and BF16 MatMul against MatVec bit for bit on
// the shapes
// that exercise the tile kernel's edges: row counts that are not a
// multiple of its blocks of three rows (in one row tile and in several),
// every tail of 1..31 columns past the last whole chunk of 32, rows
// shorter than a chunk, rows of several column slabs, rows whose size is a
// multiple of 4 KiB (the activations are then packed apart), token counts
// around the tiles of four, and one to three threads, on every tier.
func TestMatMulF32(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	type shape struct{ rows, cols, n int }
	var shapes []shape
	for rows := 1; rows <= 8; rows++ {
		shapes = append(shapes, shape{rows, 64, 4})
	}
	for tail := 0; tail < 32; tail++ {
		shapes = append(shapes, shape{7, 96 + tail, 5})
	}
	shapes = append(shapes,
		shape{5, 1, 4}, shape{4, 17, 8}, shape{6, 31, 4}, // no whole chunk
		shape{40, 768, 4}, shape{41, 768, 9}, shape{47, 768 + 5, 8}, // one slab
		shape{9, 800, 4}, shape{20, 1024, 5}, shape{41, 2048, 8}, // several slabs, padded activations
		shape{23, 2048 + 31, 4}, shape{3, 4096, 4}, shape{61, 3000, 6}, // more blocks than a slab group
		shape{130, 96, 13}, // several row tiles
	)
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16} {
		r := rand.New(rand.NewPCG(41, 42))
		for _, sh := range shapes {
			w := randomRows(r, typ, sh.rows, sh.cols)
			acts := randomRows(r, vecDotType[typ], sh.n, sh.cols)
			actBytes := len(acts) / sh.n
			for _, name := range Tiers() {
				if err := SetTier(name); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, sh.n*sh.rows)
				for i := 0; i < sh.n; i++ {
					MatVec(typ, want[i*sh.rows:(i+1)*sh.rows], w, sh.cols, acts[i*actBytes:(i+1)*actBytes])
				}
				for _, threads := range []int{0, 1, 2, 3} {
					got := make([]float32, sh.n*sh.rows)
					if threads == 0 {
						MatMul(typ, got, w, sh.cols, acts, sh.n)
					} else {
						p := NewPool(threads)
						p.MatMul(typ, got, w, sh.cols, acts, sh.n)
						p.Close()
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%s/%v/%dx%d/n%d/t%d: out[%d] (token %d, row %d) = %g, MatVec gives %g",
								name, typ, sh.rows, sh.cols, sh.n, threads, i, i/sh.rows, i%sh.rows, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestPackF32T4 checks the packed activations of the F32 tiles: each
// activation whole at its stride, the strides never a multiple of 4 KiB
// give or take 512 bytes.
func TestPackF32T4(t *testing.T) {
	for _, cols := range []int{1, 31, 32, 768, 1024, 1100, 2048, 3000, 4096, 4200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			stride := f32ActStride(cols)
			if stride < 4*cols {
				t.Fatalf("stride %d < %d bytes of activation", stride, 4*cols)
			}
			if m := stride % 4096; m < 512 || m > 4096-512 {
				t.Errorf("stride %d is %d bytes off a multiple of 4 KiB", stride, m)
			}
			r := rand.New(rand.NewPCG(uint64(cols), 43))
			acts := randomRows(r, quant.F32, tileTokens, cols)
			dst := make([]byte, packBytesF32T4(cols))
			packF32T4(dst, acts, 4*cols, cols)
			for tok := 0; tok < tileTokens; tok++ {
				if got, want := string(dst[tok*stride:tok*stride+4*cols]), string(acts[tok*4*cols:(tok+1)*4*cols]); got != want {
					t.Fatalf("activation %d differs in the packed form", tok)
				}
			}
		})
	}
}

// FuzzMatMulFloat runs MatMul of F32, F16 and BF16 weights on arbitrary
// bits (infinities, NaNs and subnormals included) and arbitrary shapes,
// and checks it against MatVec: the same bits, or NaN for both.
func FuzzMatMulFloat(f *testing.F) {
	f.Add([]byte{1, 2, 3, 250, 128, 7}, uint8(0), uint8(5), uint16(100), uint8(4))
	f.Add([]byte{0x7c, 0x00, 0xff, 0x80, 0x01}, uint8(1), uint8(1), uint16(64), uint8(5))
	f.Add([]byte{0x00, 0x00, 0x80, 0x7f, 0x3f}, uint8(2), uint8(8), uint16(800), uint8(8))
	types := []quant.Type{quant.F32, quant.F16, quant.BF16}
	f.Fuzz(func(t *testing.T, data []byte, ti, nrows uint8, ncols uint16, nacts uint8) {
		if len(data) == 0 {
			return
		}
		typ := types[int(ti)%len(types)]
		rows := 1 + int(nrows)%40
		cols := 1 + int(ncols)%2100
		n := 1 + int(nacts)%9
		rowBytes, _ := quant.RowBytes(typ, cols)
		actBytes, _ := quant.RowBytes(vecDotType[typ], cols)
		w := make([]byte, rows*rowBytes)
		acts := make([]byte, n*actBytes)
		for i := range w {
			w[i] = data[i%len(data)]
		}
		for i := range acts {
			acts[i] = data[(i*7+3)%len(data)] ^ byte(i>>4)
		}
		want := make([]float32, n*rows)
		for i := 0; i < n; i++ {
			MatVec(typ, want[i*rows:(i+1)*rows], w, cols, acts[i*actBytes:(i+1)*actBytes])
		}
		got := make([]float32, n*rows)
		MatMul(typ, got, w, cols, acts, n)
		for i := range got {
			g, w := got[i], want[i]
			if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				t.Fatalf("%v %dx%d n%d: out[%d] = %g, MatVec gives %g", typ, rows, cols, n, i, g, w)
			}
		}
	})
}

// TestMatMulF32InPlace checks F32 MatMul where the tiles read the
// activations in place (rows needing no padding) against MatVec bit for
// bit, on every tier, and that the activations are left as they were.
func TestMatMulF32InPlace(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(43, 44))
	const rows, cols = 70, 256
	if !packF32AsIs(cols) {
		t.Fatalf("%d columns are padded", cols)
	}
	for _, name := range Tiers() {
		if err := SetTier(name); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{4, 8, 13, 20} {
			w := randomRows(r, quant.F32, rows, cols)
			acts := randomRows(r, quant.F32, n, cols)
			want := make([]float32, n*rows)
			for i := 0; i < n; i++ {
				MatVec(quant.F32, want[i*rows:(i+1)*rows], w, cols, acts[i*4*cols:(i+1)*4*cols])
			}
			for _, threads := range []int{0, 2} {
				in := append([]byte(nil), acts...)
				got := make([]float32, n*rows)
				if threads == 0 {
					MatMul(quant.F32, got, w, cols, in, n)
				} else {
					p := NewPool(threads)
					p.MatMul(quant.F32, got, w, cols, in, n)
					p.Close()
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n%d t%d: out[%d] = %g, MatVec gives %g", name, n, threads, i, got[i], want[i])
					}
				}
				if !bytes.Equal(in, acts) {
					t.Fatalf("%s n%d t%d: MatMul changed its activations", name, n, threads)
				}
			}
		}
	}
}
