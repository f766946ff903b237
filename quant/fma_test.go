package quant

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fma32Exact rounds a·b+c, computed exactly, to float32.
func fma32Exact(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(0).SetFloat64(float64(a))
	x.SetPrec(400).Mul(x, new(big.Float).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// TestFMA32 compares fma32 with the exactly rounded a·b+c on random
// operands, on sums that land on float32 rounding midpoints (the case
// where rounding to float64 first would round twice) and on subnormal
// results.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(a, b, c float32) {
		t.Helper()
		if got, want := fma32(a, b, c), fma32Exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g (%#x), want %g (%#x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	randF := func(minExp, maxExp int) float32 {
		m := float32(1 + rng.Float64())
		if rng.IntN(2) == 0 {
			m = -m
		}
		return float32(math.Ldexp(float64(m), minExp+rng.IntN(maxExp-minExp+1)))
	}
	for range 100000 {
		check(randF(-20, 20), randF(-20, 20), randF(-30, 30))
		check(randF(-75, -60), randF(-75, -60), randF(-149, -120)) // subnormal results
		check(float32(rng.IntN(1<<12)-1<<11), randF(-10, 0), randF(-5, 5))
	}
	// Midpoints: c is a float32 with a 24-bit mantissa, a·b is exactly half
	// an ulp of c plus or minus a tiny amount that float64 rounding drops.
	for range 100000 {
		c := randF(0, 10)
		ulp := math.Nextafter32(c, float32(math.Inf(1))) - c
		half := ulp / 2
		a := half * (1 + float32(math.Ldexp(1, -23)))
		b := float32(1 - math.Ldexp(1, -23))
		check(a, b, c) // a·b = half·(1 - 2⁻⁴⁶): just below the midpoint
		check(-a, b, c)
		check(half, 1, c)
	}
	// Subnormal results, whose midpoints are coarser than a normal
	// float32's: a·b = 2⁻¹⁵⁰·(1 - 2⁻⁴⁶) is just below half of their ulp.
	a := float32(math.Ldexp(1+math.Ldexp(1, -23), -75))
	b := float32(math.Ldexp(1-math.Ldexp(1, -23), -75))
	for range 10000 {
		c := float32(math.Ldexp(float64(1<<22+rng.IntN(1<<22)), -149))
		check(a, b, c)
		check(-a, b, -c)
	}
	// Exact zeros, which the fast path takes (a float64 sum of the exact
	// product and c is zero only when the exact sum is), with IEEE's signs.
	for range 10000 {
		a, b := float32(rng.IntN(1<<12)-1<<11), randF(-140, 100)
		check(a, b, -a*b)
		check(a, b, a*b)
	}
	negZero := float32(math.Copysign(0, -1))
	for _, z := range [][3]float32{{0, 1, 0}, {negZero, 1, negZero}, {0, -1, negZero}, {3, 0, negZero}, {negZero, 0, 0}, {negZero, 2, 0}} {
		check(z[0], z[1], z[2])
		if got, ok := fma32Try(z[0], z[1], z[2]); ok && math.Float32bits(got) != math.Float32bits(fma32Exact(z[0], z[1], z[2])) {
			t.Errorf("fma32Try(%g, %g, %g) = %g", z[0], z[1], z[2], got)
		}
	}
	inf := float32(math.Inf(1))
	check(inf, 1, 1)
	check(math.MaxFloat32, 2, 0)
	check(math.MaxFloat32, 1, math.MaxFloat32)
	if got := fma32(inf, 0, 1); got == got {
		t.Errorf("fma32(Inf, 0, 1) = %g, want NaN", got)
	}
}
