package model

import (
	"math"

	"github.com/qsf-llm/qsf/kernels"
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

// siluVec writes silu(x) = x/(1+exp(-x)) into dst as ggml_vec_silu_f32:
// ggml_v_expf for whole groups of 8, expf for the tail.
func siluVec(dst, x []float32) { kernels.SiluF32(dst, x) }

// softmaxPadded replaces x by its softmax as ggml_soft_max_f32 computes it
// for a row of llama.cpp's KV cache: the row is padded with masked (zero
// probability) positions to a multiple of 32, exponentials come from
// ggml_v_expf in groups of 8 whose lane sums are added in float64.
func softmaxPadded(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	inv := float32(1 / kernels.ExpSubF32(x, x, mx))
	for i := range x {
		x[i] *= inv
	}
}
