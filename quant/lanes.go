package quant

import "math"

// The dot products of this package reproduce the float32 arithmetic of
// llama.cpp's AVX2 kernels (ggml-cpu-quants.c of b4748) bit for bit: the
// integer parts are exact, so what matters is where float32 rounding
// happens. Those kernels keep eight float32 lanes; per block, lane l gets
// acc[l] = fma(scale, float(isum[l]), acc[l]), where isum[l] is the integer
// dot product of the four elements 4l..4l+3 of a 32-element group
// (_mm256_maddubs_epi16 pairs, then _mm256_madd_epi16), summed over the
// groups of the block with their sub-block scales. The result is
// hsum_float_8(acc). Scalar accumulations (Q4_1/Q5_1 m·s, Q5_K mins) are
// contracted to fma by the C compiler.

// lanes8 is an AVX __m256 float accumulator.
type lanes8 [8]float32

// fmaInts does acc[l] = fma(d, float32(s[l]), acc[l]) for each lane.
func (acc *lanes8) fmaInts(d float32, s *[8]int32) {
	for l := range acc {
		if r, ok := fma32Try(d, float32(s[l]), acc[l]); ok {
			acc[l] = r
		} else {
			acc[l] = fma32(d, float32(s[l]), acc[l])
		}
	}
}

// hsum is ggml's hsum_float_8: the upper half added to the lower half,
// then lanes (0+2, 1+3), then those two.
func (acc *lanes8) hsum() float32 {
	var r [4]float32
	for l := range r {
		r[l] = acc[l+4] + acc[l]
	}
	return (r[0] + r[2]) + (r[1] + r[3])
}

// add returns the lane-wise sum a+b (_mm256_add_ps).
func (acc lanes8) add(b lanes8) lanes8 {
	for l := range acc {
		acc[l] += b[l]
	}
	return acc
}

// groupLanes adds to s the four-element integer dot products of 32
// weights x and 32 int8 activations y, each lane multiplied by scale(l):
// s[l] += scale(l)·Σ_{t<4} x[4l+t]·y[4l+t].
func groupLanes(s *[8]int32, x *[32]int32, y []byte, scLo, scHi int32) {
	for l := range s {
		var p int32
		for t := 0; t < 4; t++ {
			p += x[4*l+t] * int32(int8(y[4*l+t]))
		}
		if l < 4 {
			s[l] += scLo * p
		} else {
			s[l] += scHi * p
		}
	}
}

// FMA32 returns a·b+c rounded once to float32, as the x86 FMA
// instructions compute it. Code that must reproduce SIMD arithmetic bit for
// bit (package model's attention, for one) uses it.
func FMA32(a, b, c float32) float32 { return fma32(a, b, c) }

// fma32 returns a·b+c rounded once to float32, as the FMA instructions do.
// The product is exact in float64, so s = a·b+c rounded once to float64
// rounds to the right float32 unless s is a float32 rounding midpoint (or
// below the float32 normal range, where the midpoints are coarser; a zero
// s is exact, since p and c are float64s): only then is the exact error of the sum needed, recovered with TwoSum and
// folded in with round-to-odd. The explicit float64 conversions forbid the
// compiler to fuse any of it (the Go spec lets arm64, ppc64le, s390x and
// riscv64 builds fuse x*y+z otherwise).
func fma32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	s := float64(p + float64(c))
	if bits := math.Float64bits(s); bits<<35 != 1<<63 && (bits<<1 >= (1023-126)<<53 || bits<<1 == 0) {
		return float32(s)
	}
	return fma32Slow(p, float64(c), s)
}

// fma32Try is fma32's fast path, small enough to be inlined into the
// kernels' loops: it returns a·b+c and true when the float64 sum rounds
// correctly to float32, or false when the caller must call fma32.
func fma32Try(a, b, c float32) (float32, bool) {
	s := float64(float64(float64(a)*float64(b)) + float64(c))
	bits := math.Float64bits(s)
	return float32(s), bits<<35 != 1<<63 && (bits<<1 >= (1023-126)<<53 || bits<<1 == 0)
}

// fma32Slow finishes fma32 when s = p+c rounded to float64 may round
// wrongly to float32: it rounds the exact sum to float64 with round-to-odd
// (which makes the second rounding correct) and converts that.
func fma32Slow(p, c, s float64) float32 {
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	// TwoSum: p + c == s + e exactly.
	bb := float64(s - p)
	e := float64(p-float64(s-bb)) + float64(c-bb)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}
