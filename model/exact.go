package model

import (
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// The functions in this file reproduce, lane by lane, the float32
// arithmetic of llama.cpp's CPU backend as built for x86-64 with AVX2 and
// FMA (the build the reference outputs come from). Matching it to the last
// bit matters: activations are rounded to int8 before every quantized
// mat-vec, so a one-ulp difference upstream can move a value across a
// rounding boundary and change the logits visibly.

// fma32 returns a·b + c rounded once to float32, as VFMADD does.
func fma32(a, b, c float32) float32 { return quant.FMA32(a, b, c) }

// hsum8 adds the 8 lanes of an AVX register the way ggml's hsum_float_8
// (and llamafile's hsum) do: high half plus low half, then the upper pair
// onto the lower pair, then the two remaining lanes.
func hsum8(v *[8]float32) float32 {
	a0, a1, a2, a3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	b0, b1 := a0+a2, a1+a3
	return b0 + b1
}

// vecDotF32 is ggml_vec_dot_f32 on AVX2+FMA (llama.cpp multiplies by a
// single token with it, the attention scores and outputs included): four
// 8-lane FMA accumulators over each 32 elements, reduced as
// GGML_F32x8_REDUCE does, then the tail accumulated in float32.
func vecDotF32(a, b []float32) float32 {
	b = b[:len(a)]
	np := len(a) &^ 31
	var acc [32]float32
	for i := 0; i < np; i += 32 {
		for l := range 32 {
			acc[l] = fma32(a[i+l], b[i+l], acc[l])
		}
	}
	var sum float32
	if np > 0 {
		sum = reduce32(&acc)
	}
	for i := np; i < len(a); i++ {
		sum += a[i] * b[i]
	}
	return sum
}

// reduce32 adds four 8-lane accumulators as GGML_F32x8_REDUCE: x0+x2 and
// x1+x3, then their sum, then the halves, then two horizontal adds.
func reduce32(acc *[32]float32) float32 {
	var x [8]float32
	for l := range 8 {
		x[l] = (acc[l] + acc[16+l]) + (acc[8+l] + acc[24+l])
	}
	t0, t1, t2, t3 := x[0]+x[4], x[1]+x[5], x[2]+x[6], x[3]+x[7]
	return (t0 + t1) + (t2 + t3)
}

// dotLanes returns Σ a[i]·b[i] as llamafile's tinyBLAS computes an f32
// dot product on AVX2 (llama.cpp's path for batches of two or more
// tokens): lane i%8 accumulates with FMA, then hsum8.
func dotLanes(a, b []float32) float32 {
	b = b[:len(a)]
	var acc [8]float32
	for i, x := range a {
		acc[i%8] = fma32(x, b[i], acc[i%8])
	}
	return hsum8(&acc)
}

// expf8 is one lane of ggml's AVX2 ggml_v_expf, an approximation of exp
// (adapted from Arm's optimized routines, max error 1.45 ulp + 0.5).
func expf8(x float32) float32 {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u, 0x1.ffffecp-1*b)
	if !(abs32(n) > 126) {
		return fma32(k, j, k)
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
	return fma32(s2, j, s2) * s1
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// expf is C's expf for the scalar tails of ggml's vector loops.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// siluVec writes silu(x) = x/(1+exp(-x)) into dst as ggml_vec_silu_f32:
// the vector approximation for whole groups of 8, expf for the tail.
func siluVec(dst, x []float32) {
	n8 := len(x) &^ 7
	for i, v := range x[:n8] {
		dst[i] = v / (1 + expf8(0-v))
	}
	for i := n8; i < len(x); i++ {
		dst[i] = x[i] / (1 + expf(-x[i]))
	}
}

// softmaxPadded replaces x by its softmax as ggml_soft_max_f32 computes it
// for a row of llama.cpp's KV cache: the row is padded with masked (zero
// probability) positions to a multiple of 32, exponentials come from
// expf8 in groups of 8 whose lane sums are added in float64.
func softmaxPadded(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	var lanes [8]float32
	for i := 0; i < len(x); i += 8 {
		lanes = [8]float32{}
		for l := 0; l < 8 && i+l < len(x); l++ {
			e := expf8(x[i+l] - mx)
			x[i+l] = e
			lanes[l] = e
		}
		sum += float64(hsum8(&lanes))
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
