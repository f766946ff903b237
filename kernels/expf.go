package kernels

import (
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// The exponentials of the SiLU activation and of the attention softmax.
// llama.cpp computes them with ggml_v_expf, an 8-lane AVX2+FMA
// approximation of exp (adapted from Arm's optimized routines, at most 1.45
// ulp + 0.5 off), for whole groups of 8 and with the C library's expf for
// what is left; QSF must do the same to give the same bits. These functions
// run the AVX2 code when the current tier is not the generic one and the
// CPU has AVX2, and otherwise a Go model of it that gives the same bits.

// SiluF32 sets dst[i] = x[i]/(1+exp(-x[i])) for every i in x, as
// ggml_vec_silu_f32 on AVX2 computes it: ggml_v_expf for the elements of
// whole groups of 8, float32(math.Exp) (C's expf) for the len(x)%8 left.
// dst must be at least as long as x and either be x or not overlap it.
func SiluF32(dst, x []float32) {
	current.Load().SiluF32(dst, x)
}

// SiluF32 is the package function SiluF32 on tier tr.
func (tr *Tier) SiluF32(dst, x []float32) {
	dst = dst[:len(x)]
	n8 := len(x) &^ 7
	if n8 > 0 && !(tr != genericTier && siluAsm(dst[:n8], x[:n8])) {
		for i, v := range x[:n8] {
			dst[i] = v / (1 + expf8(0-v))
		}
	}
	for i := n8; i < len(x); i++ {
		dst[i] = x[i] / (1 + float32(math.Exp(float64(-x[i]))))
	}
}

// ExpSubF32 sets dst[i] = exp(x[i]-max) for every i in x, with ggml_v_expf
// for every element, and returns their sum as the softmax of llama.cpp
// forms it for a row of its KV cache (ggml_soft_max_f32 over a row padded
// with masked positions to a multiple of 32): the elements in groups of 8,
// each group's lanes added in float32 as hsum_float_8 does (upper half
// onto lower, upper pair onto lower, then the last two), the group sums
// added in order in float64. A last, partial group counts as padded with
// lanes of exactly 0. dst must be at least as long as x and either be x or
// not overlap it.
func ExpSubF32(dst, x []float32, max float32) (sum float64) {
	return current.Load().ExpSubF32(dst, x, max)
}

// ExpSubF32 is the package function ExpSubF32 on tier tr.
func (tr *Tier) ExpSubF32(dst, x []float32, max float32) (sum float64) {
	dst = dst[:len(x)]
	if len(x) == 0 {
		return 0
	}
	if tr != genericTier {
		if s, ok := expSubAsm(dst, x, max); ok {
			return s
		}
	}
	n8 := len(x) &^ 7
	for i := 0; i < n8; i += 8 {
		g, d := (*[8]float32)(x[i:]), (*[8]float32)(dst[i:])
		for l, v := range g {
			d[l] = expf8(v - max)
		}
		sum += float64(hsumF32x8(d))
	}
	if n8 < len(x) {
		var lanes [8]float32
		for l, v := range x[n8:] {
			e := expf8(v - max)
			dst[n8+l] = e
			lanes[l] = e
		}
		sum += float64(hsumF32x8(&lanes))
	}
	return sum
}

// hsumF32x8 adds the 8 lanes of an AVX register as ggml's hsum_float_8 does.
func hsumF32x8(v *[8]float32) float32 {
	a0, a1, a2, a3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	b0, b1 := a0+a2, a1+a3
	return b0 + b1
}

// expf8 is one lane of ggml_v_expf (AVX2+FMA), operation for operation:
// n = round(x·log2 e) by the 1.5·2²³ shift, the reduced argument b with a
// two-part ln 2, a degree-5 polynomial j ≈ exp(b)-1, 2ⁿ built in the
// exponent bits, and for |n| > 126 the scaling through two factors s1, s2
// (or s1² for |n| > 192, the overflow or underflow result).
//
// Its fused multiply-adds are quant.FMA32's fast path written out (the
// float64 sum of the exact product, tested by fma32Fits32); if any of
// them misses it, expf8Exact computes the whole again.
func expf8(x float32) float32 {
	const r = 0x1.8p23
	s := float64(float64(x)*0x1.715476p+0) + r
	if !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	z := float32(s)
	n := z - r
	if s = float64(float64(-n)*0x1.62e4p-1) + float64(x); !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	if s = float64(float64(-n)*0x1.7f7d1cp-20) + float64(float32(s)); !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	b := float32(s)
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	if s = float64(float64(b)*0x1.0e4020p-7) + 0x1.573e2ep-5; !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	p0 := float32(s)
	if s = float64(float64(b)*0x1.555e66p-3) + 0x1.fffdb6p-2; !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	p1 := float32(s)
	if s = float64(float64(p0)*float64(u)) + float64(p1); !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	if s = float64(float64(float32(s))*float64(u)) + float64(0x1.ffffecp-1*b); !fma32Fits32(math.Float64bits(s)) {
		return expf8Exact(x)
	}
	j := float32(s)
	if !(abs32(n) > 126) {
		// k·(1+j), often a midpoint and then mostly exact: fma32Rare.
		if s = float64(float64(k)*float64(j)) + float64(k); !fma32Fits32(math.Float64bits(s)) {
			return fma32Rare(k, j, k)
		}
		return float32(s)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	s2 := math.Float32frombits(e - g)
	if abs32(n) > 192 {
		return s1 * s1
	}
	return quant.FMA32(s2, j, s2) * s1
}

// expf8Exact is expf8 with every fused multiply-add a call of quant.FMA32,
// for the rare arguments where one of them misses its fast path.
func expf8Exact(x float32) float32 {
	fma := quant.FMA32
	const r = 0x1.8p23
	z := fma(x, 0x1.715476p+0, r)
	n := z - r
	b := fma(-n, 0x1.7f7d1cp-20, fma(-n, 0x1.62e4p-1, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	j := fma(fma(fma(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u, 0x1.ffffecp-1*b)
	if !(abs32(n) > 126) {
		return fma(k, j, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	s2 := math.Float32frombits(e - g)
	if abs32(n) > 192 {
		return s1 * s1
	}
	return fma(s2, j, s2) * s1
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
