package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestActQ8Fast checks actQ8, its fast path taken for finite blocks,
// against actQ8Slow, the AVX2 conversion semantics for every block, bit
// for bit (quants, d and Σq), on blocks of every kind: ordinary, ties of
// x·id at .5, signed zeros, subnormals (where 127/maxAbs overflows),
// infinities, NaN and the extremes.
func TestActQ8Fast(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		0x1p-126, -0x1p-126, 0x1.fffffcp-127, 127, -127, 0.5, -0.5, 1.5, -2.5}
	fast, slow := 0, 0
	for iter := range 200000 {
		x := make([]float32, 32)
		scale := math.Ldexp(1, r.IntN(300)-150)
		for i := range x {
			switch r.IntN(12) {
			case 0:
				if iter%4 == 0 {
					x[i] = special[r.IntN(len(special))]
				}
			case 1:
				// k/2 against a maxAbs of 127: x·id is a tie.
				x[i] = float32(r.IntN(255)-127) / 2
			default:
				x[i] = float32(r.NormFloat64() * scale)
			}
		}
		if iter%3 == 0 {
			x[r.IntN(32)] = 127 // ties at .5 where id is 1
		}
		q1, q2 := make([]byte, 32), make([]byte, 32)
		d1, s1 := actQ8(q1, x)
		d2, s2 := actQ8Slow(q2, x)
		if math.Float32bits(d1) != math.Float32bits(d2) && !(d1 != d1 && d2 != d2) || s1 != s2 || string(q1) != string(q2) {
			t.Fatalf("actQ8(%v) = %g, %d, %v; want %g, %d, %v", x, d1, s1, q1, d2, s2, q2)
		}
		var mb uint32
		for _, v := range x {
			mb = max(mb, math.Float32bits(v)&^(1<<31))
		}
		if mb >= 0x7f800000 || 127/math.Float32frombits(mb) > math.MaxFloat32 {
			slow++
		} else {
			fast++
		}
	}
	if fast < 1000 || slow < 1000 {
		t.Fatalf("%d blocks took the fast path, %d the slow one; want 1000 of each", fast, slow)
	}
}
