package qsf

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgmaxMatchesScalar checks argmax against the plain loop on random
// logits of every length up to 80 and a vocabulary's, with ties, NaNs,
// infinities and signed zeros planted.
func TestArgmaxMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 7, -7}
	lengths := []int{32000}
	for n := range 81 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for trial := range 200 {
			x := make([]float32, n)
			levels := 1 + r.IntN(6) // few levels: many ties
			for i := range x {
				switch {
				case trial%4 == 0:
					x[i] = float32(r.NormFloat64())
				case r.IntN(5) == 0:
					x[i] = special[r.IntN(len(special))]
				default:
					x[i] = float32(r.IntN(levels))
				}
			}
			if got, want := argmax(x), argmaxScalar(x); got != want {
				t.Fatalf("argmax of %v = %d, want %d", x, got, want)
			}
		}
	}
}

func BenchmarkArgmax(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 32000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, f := range []struct {
		name string
		fn   func([]float32) int
	}{{"kernels", argmax}, {"scalar", argmaxScalar}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				f.fn(x)
			}
		})
	}
}
