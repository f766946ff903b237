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
func fma32(a, b, c float32) float32 {
	if r, ok := fma32Try(a, b, c); ok {
		return r
	}
	return quant.FMA32(a, b, c)
}

// fma32Try is quant.FMA32's fast path, small enough to be inlined: the
// float64 sum of the exact product and c, and true when it rounds
// correctly to float32 (it is no float32 rounding midpoint and not below
// the normal range); false when the caller must call quant.FMA32.
func fma32Try(a, b, c float32) (float32, bool) {
	s := float64(float64(float64(a)*float64(b)) + float64(c))
	bits := math.Float64bits(s)
	return float32(s), bits<<35 != 1<<63 && (bits<<1 >= (1023-126)<<53 || bits<<1 == 0)
}

// hsum8 adds the 8 lanes of an AVX register the way ggml's hsum_float_8
// (and llamafile's hsum) do: high half plus low half, then the upper pair
// onto the lower pair, then the two remaining lanes.
func hsum8(v *[8]float32) float32 {
	a0, a1, a2, a3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	b0, b1 := a0+a2, a1+a3
	return b0 + b1
}

// dotLanes returns Σ a[i]·b[i] as llamafile's tinyBLAS computes an f32
// dot product on AVX2 (llama.cpp's path for batches of two or more
// tokens): lane i%8 accumulates with FMA, then hsum8.
func dotLanes(a, b []float32) float32 {
	b = b[:len(a)]
	var acc [8]float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := (*[8]float32)(a[i:]), (*[8]float32)(b[i:])
		for l := range acc {
			if r, ok := fma32Try(x[l], y[l], acc[l]); ok {
				acc[l] = r
			} else {
				acc[l] = quant.FMA32(x[l], y[l], acc[l])
			}
		}
	}
	for ; i < len(a); i++ {
		acc[i%8] = fma32(a[i], b[i], acc[i%8])
	}
	return hsum8(&acc)
}

// softmaxScaled replaces x by the softmax of x multiplied by scale (x[i] *=
// scale, rounded, as llama.cpp scales the scores before the softmax), as
// ggml_soft_max_f32 computes it for a row of llama.cpp's KV cache: the row
// is padded with masked (zero probability) positions to a multiple of 32,
// exponentials come from ggml_v_expf in groups of 8 whose lane sums are
// added in float64. The
// maximum is taken in four running maxima: max is exact and
// order-independent (NaN wins, +0 beats −0), so the result is the same.
func softmaxScaled(k *kernels.Tier, x []float32, scale float32) {
	m0, m1, m2, m3 := float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))
	i := 0
	if scale == 1 {
		for ; i+4 <= len(x); i += 4 {
			m0, m1, m2, m3 = max(m0, x[i]), max(m1, x[i+1]), max(m2, x[i+2]), max(m3, x[i+3])
		}
	} else {
		for ; i+4 <= len(x); i += 4 {
			v := x[i : i+4 : i+4]
			v[0], v[1], v[2], v[3] = v[0]*scale, v[1]*scale, v[2]*scale, v[3]*scale
			m0, m1, m2, m3 = max(m0, v[0]), max(m1, v[1]), max(m2, v[2]), max(m3, v[3])
		}
	}
	for ; i < len(x); i++ {
		x[i] *= scale
		m0 = max(m0, x[i])
	}
	mx := max(max(m0, m1), max(m2, m3))
	inv := float32(1 / k.ExpSubF32(x, x, mx))
	for i := range x {
		x[i] *= inv
	}
}
