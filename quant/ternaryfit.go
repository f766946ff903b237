package quant

import (
	"math"
	"sort"
)

// quantTQ2_0Importance and quantTQ1_0Importance encode src as TQ2_0 and
// TQ1_0 with the scale and zero set that minimise the importance-weighted
// squared error (nil importance: uniform) instead of the reference's
// d = max|x|, which rounds most weights of a model not trained for
// ternary to 0.
func quantTQ2_0Importance(dst []byte, src, importance []float32) {
	ternaryFitted(dst, src, importance, 66, quantTQ2_0)
}

func quantTQ1_0Importance(dst []byte, src, importance []float32) {
	ternaryFitted(dst, src, importance, 54, quantTQ1_0)
}

// ternaryFitted fits each 256-element block of src to d·t, t ∈ {−1, 0, 1}
// (ternaryFit), and encodes the fitted block with the reference
// quantizer enc (bb bytes a block): its largest magnitude is d and every
// element is 0 or ±d, so the reference keeps both exactly (d rounded to
// fp16 as always).
func ternaryFitted(dst []byte, src, importance []float32, bb int, enc func(dst []byte, src []float32)) {
	var y [qkK]float32
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : (i+1)*qkK]
		var w []float32
		if importance != nil {
			w = importance[i*qkK : (i+1)*qkK]
		}
		d, keep := ternaryFit(x, w)
		for j, v := range x {
			switch {
			case !keep[j]:
				y[j] = 0
			case v < 0:
				y[j] = -d
			default:
				y[j] = d
			}
		}
		enc(dst[i*bb:(i+1)*bb], y[:])
	}
}

// ternaryFit returns the scale d and the elements kept (the others are
// 0) that minimise Σ wᵢ(xᵢ − d·sign(xᵢ)·keepᵢ)² over the kept sets made of
// the k largest |xᵢ| (k = 0..len(x)): for a kept set S the best d is
// Σ_S w|x| / Σ_S w and the error falls by (Σ_S w|x|)² / Σ_S w, which is
// maximised. w nil means uniform weights; elements of weight 0 still
// count a little, so that a block unseen by calibration is fitted.
func ternaryFit(x, w []float32) (float32, [qkK]bool) {
	var keep [qkK]bool
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return abs32(x[idx[a]]) > abs32(x[idx[b]]) })
	weight := func(i int) float64 {
		if w == nil {
			return 1
		}
		return float64(w[i]) + 1e-9
	}
	var sa, sw, best float64
	bestK := 0
	for k, i := range idx {
		a := float64(abs32(x[i]))
		if !(a > 0) || math.IsInf(a, 0) {
			break
		}
		wi := weight(i)
		sa += float64(wi * a)
		sw += wi
		if g := float64(sa*sa) / sw; g > best {
			best, bestK = g, k+1
		}
	}
	if bestK == 0 {
		return 0, keep
	}
	sa, sw = 0, 0
	for _, i := range idx[:bestK] {
		wi := weight(i)
		sa += float64(wi * float64(abs32(x[i])))
		sw += wi
		keep[i] = true
	}
	return float32(sa / sw), keep
}
