package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestTierKernelsBits checks every kernel of every tier's table bit for bit
// against the generic tier, through the tier's MatVec and MatMul, on
// random data (with the extreme blocks of extremeQ4_0 and extremeQ8_0),
// every row count from 1 to 13 and some multiples of 8 (so that Q4_0 takes
// the repacked gemv order too), and block counts that leave every tail.
func TestTierKernelsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, tr := range available {
		if tr == genericTier {
			continue
		}
		for _, typ := range kernelTypes(tr) {
			bs := typ.BlockSize()
			for _, nb := range []int{1, 2, 3, 5, 8, 17} {
				cols := nb * bs
				if bs == 1 {
					cols = []int{1, 7, 31, 33, 100, 257}[min(nb, 17)%6]
				}
				for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 24} {
					w := randomRows(r, typ, rows, cols)
					act := randomRows(r, vecDotType[typ], 1, cols)
					switch typ {
					case quant.Q4_0:
						extremeQ4_0(r, w, act)
					case quant.Q8_0:
						extremeQ8_0(r, w)
						extremeQ8_0(r, act)
					default:
						extremeBlocks(r, typ, w)
						if vecDotType[typ] == quant.Q8_K {
							extremeQ8_K(r, act)
						}
					}
					name := fmt.Sprintf("%s/%v/%dx%d", tr.name, typ, rows, cols)
					want := make([]float32, rows)
					genericTier.MatVec(typ, want, w, cols, act)
					got := make([]float32, rows+1)
					got[rows] = 42
					tr.MatVec(typ, got[:rows], w, cols, act)
					sameFloats(t, name+" MatVec", got[:rows], want)
					if got[rows] != 42 {
						t.Errorf("%s: MatVec wrote past out", name)
					}
					if rows > 4 {
						continue
					}
					// MatMul over six activations: a tile of four and two
					// one at a time, where the tier has tiles.
					const n = 6
					acts := randomRows(r, vecDotType[typ], n, cols)
					wantMM := make([]float32, n*rows)
					genericTier.MatMul(typ, wantMM, w, cols, acts, n)
					gotMM := make([]float32, n*rows)
					tr.MatMul(typ, gotMM, w, cols, acts, n)
					sameFloats(t, name+" MatMul", gotMM, wantMM)
				}
			}
		}
	}
}

// scaleFields gives, per block type, where its fp16 scales lie: the
// offsets [lo, hi) of bytes extremeBlocks leaves alone.
var scaleFields = map[quant.Type][2]int{
	quant.Q4_1: {0, 4}, quant.Q5_0: {0, 2}, quant.Q5_1: {0, 4}, quant.IQ4_NL: {0, 2},
	quant.Q2_K: {80, 84}, quant.Q3_K: {108, 110}, quant.Q4_K: {0, 4}, quant.Q5_K: {0, 4},
	quant.Q6_K: {208, 210}, quant.TQ1_0: {52, 54}, quant.TQ2_0: {64, 66},
}

// extremeBlocks overwrites about a third of the blocks of w (of type t,
// if scaleFields knows it) with every bit of their quants, scales and
// mins set or clear, the fp16 scales kept: the largest codes, sub-block
// scales and mins, and all-zero blocks.
func extremeBlocks(r *rand.Rand, t quant.Type, w []byte) {
	f, ok := scaleFields[t]
	if !ok {
		return
	}
	bb := t.BlockBytes()
	for o := 0; o+bb <= len(w); o += bb {
		var v byte
		switch r.IntN(6) {
		case 0:
			v = 0xff
		case 1:
		default:
			continue
		}
		for j := 0; j < bb; j++ {
			if j < f[0] || j >= f[1] {
				w[o+j] = v
			}
		}
	}
}

// extremeQ8_K overwrites about a third of the blocks of a Q8_K activation
// with quants all 127, all -127 or all -128 (their 16-element sums to
// match).
func extremeQ8_K(r *rand.Rand, act []byte) {
	for o := 0; o+q8KBlock <= len(act); o += q8KBlock {
		q := []int8{127, -127, -128, 0, 0, 0}[r.IntN(6)]
		if q == 0 {
			continue
		}
		for j := 0; j < 256; j++ {
			act[o+4+j] = byte(q)
		}
		for j := 0; j < 16; j++ {
			binary.LittleEndian.PutUint16(act[o+260+2*j:], uint16(int16(16*int(q))))
		}
	}
}

// sameFloats reports every element of got whose bits differ from want's.
func sameFloats(t *testing.T, how string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad++; bad <= 3 {
				t.Errorf("%s: element %d: got %g (%#x), want %g (%#x)", how, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
}

// specialActivation returns n float32 of activationVector's kinds and of
// the corners a quantizer can meet: infinities, the largest finite values,
// tiny normals whose reciprocal overflows, negative zeros, ties of the
// largest magnitude with both signs, and NaN if nan is set.
func specialActivation(r *rand.Rand, n int, nan bool) []float32 {
	x := activationVector(r, n)
	inf := float32(math.Inf(1))
	for b := 0; b < n/32; b++ {
		blk := x[32*b : 32*b+32]
		switch r.IntN(9) {
		case 0:
			if nan {
				blk[r.IntN(32)] = float32(math.NaN())
			}
		case 1:
			blk[r.IntN(32)] = inf
		case 2:
			blk[r.IntN(32)] = -inf
		case 3:
			blk[r.IntN(32)] = math.MaxFloat32
			blk[r.IntN(32)] = -math.MaxFloat32
		case 4:
			for i := range blk {
				blk[i] = float32(r.NormFloat64()) * 1e-37
			}
		case 5:
			for i := range blk {
				blk[i] = float32(math.Copysign(0, -1))
			}
		case 6: // the largest magnitude twice, with both signs
			m := float32(r.NormFloat64()) + 10
			blk[r.IntN(16)] = -m
			blk[16+r.IntN(16)] = m
		}
	}
	return x
}

// TestQuantizeTiersBits checks every tier's activation quantizers (Q8_0,
// Q8_1, Q8_K, and F32's copy) against package quant's byte for byte, on
// ordinary and extreme vectors, and that none writes past dst.
func TestQuantizeTiersBits(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q8_1, quant.Q8_K, quant.F32} {
		tt, err := quant.Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 256, 512, 2048, 5632, 256 * 40} {
			for rep := 0; rep < 3; rep++ {
				var x []float32
				if rep == 0 {
					x = activationVector(r, n)
				} else {
					x = specialActivation(r, n, rep == 2)
				}
				nbytes, _ := quant.RowBytes(typ, n)
				want := make([]byte, nbytes)
				tt.Quantize(want, x)
				for _, tr := range available {
					if rep == 2 && (tr.name == "avx2" || tr.name == "avx512") {
						// The AVX2 Q8_0 quantizer takes a block's
						// maximum with VMAXPS, which drops a NaN where
						// Go's max (and ggml's C reference) keeps it.
						continue
					}
					got := make([]byte, nbytes+1)
					got[nbytes] = 42
					tr.Quantize(typ, got[:nbytes], x)
					if got[nbytes] != 42 {
						t.Errorf("%s/%v/%d: wrote past dst", tr.name, typ, n)
					}
					if bytes.Equal(got[:nbytes], want) {
						continue
					}
					bb := nbytes / (n / typ.BlockSize())
					for o := 0; o < nbytes; o += bb {
						if !bytes.Equal(got[o:o+bb], want[o:o+bb]) {
							e := o / bb * typ.BlockSize()
							t.Errorf("%s/%v/%d: block %d (%v): got % x, want % x", tr.name, typ, n, o/bb,
								x[e:e+typ.BlockSize()], got[o:o+bb], want[o:o+bb])
							break
						}
					}
				}
			}
		}
	}
}

// TestTierTilesBits checks MatMul (and so the tiers' prefill tiles, for
// the types that have them) of every tier bit for bit against the generic
// tier's: the repacked types and those with tiles on some tier, row
// counts of whole groups and odd ones, block counts with tails, and token
// counts of whole tiles with a remainder (for Q6_K, 1 to 12; for Q4_0x8,
// 1 to 9).
func TestTierTilesBits(t *testing.T) {
	r := rand.New(rand.NewPCG(75, 76))
	types := []quant.Type{Q4_0x8, Q8_0x4, quant.Q4_0, quant.Q8_0, quant.Q4_K, quant.Q6_K, quant.F32, quant.F16, quant.BF16}
	for _, tr := range available {
		if tr == genericTier {
			continue
		}
		for _, typ := range types {
			file := typ
			if k, ok := repacked[typ]; ok {
				file = k.file
			}
			tt, err := quant.Lookup(file)
			if err != nil {
				continue
			}
			bs := tt.BlockSize
			for _, nb := range []int{1, 3, 17} {
				cols := nb * bs
				if bs == 1 {
					cols = []int{31, 96, 1000}[nb%3]
				}
				for _, rows := range []int{5, 8, 24, 40} {
					if rows%8 != 0 && file != typ {
						continue // repacked types are whole groups
					}
					ns := []int{4, 9}
					switch typ {
					case quant.Q6_K:
						// The avx512 tier's Q6_K tiles of 8, 4, 3 and 2
						// activations, alone and as rests.
						ns = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
					case Q4_0x8: // the avx512 tiles of 2..8 activations and their rests
						ns = []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
					}
					for _, n := range ns {
						w := randomRows(r, file, rows, cols)
						acts := randomRows(r, tt.VecDot, n, cols)
						switch file {
						case quant.Q4_0:
							extremeQ4_0(r, w, acts)
						case quant.Q8_0:
							extremeQ8_0(r, w)
							extremeQ8_0(r, acts)
						default:
							extremeBlocks(r, file, w)
							if tt.VecDot == quant.Q8_K {
								extremeQ8_K(r, acts)
							}
						}
						if file != typ {
							if _, err := Repack(file, w, w, rows, cols); err != nil {
								t.Fatal(err)
							}
						}
						name := fmt.Sprintf("%s/%s/%dx%d/n%d", tr.name, typeName(typ), rows, cols, n)
						want := make([]float32, n*rows)
						genericTier.MatMul(typ, want, w, cols, acts, n)
						got := make([]float32, n*rows)
						tr.MatMul(typ, got, w, cols, acts, n)
						sameFloats(t, name, got, want)
					}
				}
			}
		}
	}
}
