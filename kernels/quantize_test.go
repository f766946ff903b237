package kernels

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// activationVector returns n float32 in blocks of 32 of varied kinds: all
// zero, normal values of several magnitudes, subnormals, values at the
// rounding boundaries of q = x·127/max (halves), a lone huge value, and
// single nonzero elements.
func activationVector(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for b := 0; b < n/32; b++ {
		blk := x[32*b : 32*b+32]
		switch b % 7 {
		case 0: // zeros
		case 1:
			for i := range blk {
				blk[i] = float32(r.NormFloat64())
			}
		case 2:
			scale := float32(math.Pow(10, float64(r.IntN(20)-10)))
			for i := range blk {
				blk[i] = scale * float32(r.NormFloat64())
			}
		case 3: // subnormals
			for i := range blk {
				blk[i] = math.Float32frombits(uint32(r.IntN(1 << 20)))
				if r.IntN(2) == 0 {
					blk[i] = -blk[i]
				}
			}
		case 4: // q exactly at .5 for max 127
			blk[0] = 127
			for i := 1; i < 32; i++ {
				blk[i] = float32(r.IntN(254)-127) + 0.5
			}
		case 5:
			blk[r.IntN(32)] = -65504 * 4
			for i := range blk {
				if blk[i] == 0 {
					blk[i] = float32(r.NormFloat64())
				}
			}
		case 6:
			blk[r.IntN(32)] = float32(r.NormFloat64())
		}
	}
	return x
}

// TestQuantizeQ8_0 checks every tier's Q8_0 activation quantizer against
// package quant's bit for bit.
func TestQuantizeQ8_0(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(51, 52))
	tr, _ := quant.Lookup(quant.Q8_0)
	for _, n := range []int{0, 32, 64, 224, 2048, 5632} {
		x := activationVector(r, n)
		want := make([]byte, n/32*34)
		tr.Quantize(want, x)
		for _, name := range Tiers() {
			SetTier(name)
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				got := make([]byte, len(want)+1)
				got[len(want)] = 42
				Quantize(quant.Q8_0, got[:len(want)], x)
				if !bytes.Equal(got[:len(want)], want) {
					for b := 0; b < n/32; b++ {
						if !bytes.Equal(got[34*b:34*b+34], want[34*b:34*b+34]) {
							t.Fatalf("block %d (%v): got % x, want % x", b, x[32*b:32*b+32], got[34*b:34*b+34], want[34*b:34*b+34])
						}
					}
				}
				if got[len(want)] != 42 {
					t.Error("wrote past dst")
				}
			})
		}
	}
}

// TestPrepQ4_0x8 checks the assembly preparation of Q8_0 activations for
// the repacked kernels against the Go one.
func TestPrepQ4_0x8(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, cols := range []int{32, 64, 96, 2048, 5632} {
		act := randomRows(r, quant.Q8_0, 1, cols)
		extremeQ8_0(r, act)
		want := make([]byte, cols/32*q4_0x8TokBlock)
		prepQ4_0x8Generic(want, act, cols/32)
		got := make([]byte, len(want)+1)
		got[len(want)] = 42
		prepQ4_0x8Rows(got[:len(want)], act, cols/32)
		if !bytes.Equal(got[:len(want)], want) || got[len(want)] != 42 {
			t.Errorf("cols %d: prepared activations differ", cols)
		}
	}
}

// BenchmarkQuantizeQ8_0 measures the activation quantizer on a 5632-wide
// vector (a tinyllama FFN input).
func BenchmarkQuantizeQ8_0(b *testing.B) {
	x := activationVector(rand.New(rand.NewPCG(1, 2)), 5632)
	dst := make([]byte, 5632/32*34)
	b.SetBytes(4 * 5632)
	for b.Loop() {
		Quantize(quant.Q8_0, dst, x)
	}
}

// q8KVector returns n (a multiple of 256) float32 in blocks of 256 of
// varied kinds: activationVector's, all zero, a maximum magnitude held by
// elements of both signs (the first one sets the sign of the scale), a
// subnormal maximum, an infinity, a NaN, and huge values.
func q8KVector(r *rand.Rand, n int) []float32 {
	x := activationVector(r, n)
	for b := 0; b < n/256; b++ {
		blk := x[256*b : 256*b+256]
		switch b % 8 {
		case 1:
			clear(blk)
		case 2:
			m := float32(r.NormFloat64())
			blk[r.IntN(128)] = -m
			blk[128+r.IntN(128)] = m
		case 3:
			for i := range blk {
				blk[i] = math.Float32frombits(uint32(r.IntN(1 << 22)))
			}
		case 4:
			blk[r.IntN(256)] = float32(math.Inf(1 - 2*r.IntN(2)))
		case 5:
			blk[r.IntN(256)] = float32(math.NaN())
		case 6:
			for i := range blk {
				blk[i] = 3e38 * float32(r.Float64()-0.5)
			}
		}
	}
	return x
}

// TestQuantizeQ8_K checks every tier's Q8_K activation quantizer against
// package quant's bit for bit.
func TestQuantizeQ8_K(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(53, 54))
	tr, _ := quant.Lookup(quant.Q8_K)
	for _, n := range []int{0, 256, 768, 2048, 4096} {
		x := q8KVector(r, n)
		want := make([]byte, n/256*292)
		tr.Quantize(want, x)
		for _, name := range Tiers() {
			SetTier(name)
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				got := make([]byte, len(want)+1)
				got[len(want)] = 42
				Quantize(quant.Q8_K, got[:len(want)], x)
				for b := 0; b < n/256; b++ {
					if !bytes.Equal(got[292*b:292*b+292], want[292*b:292*b+292]) {
						t.Fatalf("block %d: got % x, want % x", b, got[292*b:292*b+292], want[292*b:292*b+292])
					}
				}
				if got[len(want)] != 42 {
					t.Error("wrote past dst")
				}
			})
		}
	}
}
