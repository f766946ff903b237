package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// argmaxPlain is ArgmaxF32's definition: the first index whose value is
// above the best so far, starting from x[0].
func argmaxPlain(x []float32) int {
	if len(x) == 0 {
		return -1
	}
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// TestArgmaxF32 checks ArgmaxF32 on every tier against the plain loop, on
// random values of every length up to 200 and a vocabulary's, with ties,
// NaNs, infinities and signed zeros planted, and the largest value at
// every position of a short vector and around the assembly's blocks.
func TestArgmaxF32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	special := []float32{nan, inf, -inf, 0, negZero, 7, -7}
	lengths := []int{32000, 32001, 151936}
	for n := range 201 {
		lengths = append(lengths, n)
	}
	var cases [][]float32
	for _, n := range lengths {
		for trial := range 40 {
			x := make([]float32, n)
			levels := 1 + r.IntN(6) // few levels: many ties
			for i := range x {
				switch {
				case trial%4 == 0:
					x[i] = float32(r.NormFloat64())
				case trial%4 == 1 && r.IntN(5) == 0, trial%4 == 2 && r.IntN(50) == 0:
					x[i] = special[r.IntN(len(special))]
				case trial%4 == 3:
					x[i] = []float32{nan, -inf, negZero, 0}[r.IntN(4)]
				default:
					x[i] = float32(r.IntN(levels))
				}
			}
			cases = append(cases, x)
		}
	}
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100} {
		for at := range n {
			x := make([]float32, n)
			for i := range x {
				x[i] = -float32(i % 5)
			}
			x[at] = 1
			cases = append(cases, x)
		}
	}
	for _, name := range Tiers() {
		tr, err := TierNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range cases {
			if got, want := tr.ArgmaxF32(x), argmaxPlain(x); got != want {
				t.Fatalf("%s: ArgmaxF32 of %d values = %d, want %d (%v there, %v at %d)", name, len(x), got, want, x[max(got, 0)], x[max(want, 0)], want)
			}
		}
	}
}

func BenchmarkArgmaxF32(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 32000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, name := range Tiers() {
		tr, _ := TierNamed(name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				tr.ArgmaxF32(x)
			}
		})
	}
}
