package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ternaryErr is Σ w(x − d·t)² of x coded as d·t (t from keep and the signs).
func ternaryErr(x, w []float32, d float64, keep []bool) float64 {
	var e float64
	for i, v := range x {
		q := 0.0
		if keep[i] {
			q = math.Copysign(d, float64(v))
		}
		wi := 1.0
		if w != nil {
			wi = float64(w[i])
		}
		e += wi * (float64(v) - q) * (float64(v) - q)
	}
	return e
}

// TestTernaryFit: the fitted scale and zero set beat every other kept set
// of the k largest magnitudes (each with its best scale), weighted and
// not; TQ2_0 and TQ1_0 hold the fit exactly (up to fp16 d) and halve the
// reference's error on Gaussian weights.
func TestTernaryFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 4*qkK)
	w := make([]float32, len(x))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		w[i] = float32(rng.ExpFloat64())
	}
	for _, weights := range [][]float32{nil, w} {
		for b := 0; b < len(x)/qkK; b++ {
			xb := x[b*qkK : (b+1)*qkK]
			var wb []float32
			if weights != nil {
				wb = weights[b*qkK : (b+1)*qkK]
			}
			d, keep := ternaryFit(xb, wb)
			got := ternaryErr(xb, wb, float64(d), keep[:])
			// Every k: keep the k largest |x| at their best scale.
			order := make([]int, qkK)
			for i := range order {
				order[i] = i
			}
			for i := range order {
				for j := i + 1; j < len(order); j++ {
					if math.Abs(float64(xb[order[j]])) > math.Abs(float64(xb[order[i]])) {
						order[i], order[j] = order[j], order[i]
					}
				}
			}
			for k := 0; k <= qkK; k++ {
				kk := make([]bool, qkK)
				var sa, sw float64
				for _, i := range order[:k] {
					kk[i] = true
					wi := 1.0
					if wb != nil {
						wi = float64(wb[i])
					}
					sa += wi * math.Abs(float64(xb[i]))
					sw += wi
				}
				dk := 0.0
				if sw > 0 {
					dk = sa / sw
				}
				if e := ternaryErr(xb, wb, dk, kk); e < got*(1-1e-6) {
					t.Fatalf("block %d (weighted %v): k=%d gives error %v, the fit %v", b, wb != nil, k, e, got)
				}
			}
		}
	}
	for _, typ := range []Type{TQ2_0, TQ1_0} {
		rb, _ := RowBytes(typ, len(x))
		ref, fit := make([]byte, rb), make([]byte, rb)
		if err := QuantizeRow(typ, ref, x); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeRowImportance(typ, fit, x, nil); err != nil {
			t.Fatal(err)
		}
		yr, yf := make([]float32, len(x)), make([]float32, len(x))
		DequantizeRow(typ, yr, ref)
		DequantizeRow(typ, yf, fit)
		var er, ef float64
		for i, v := range x {
			er += (float64(v) - float64(yr[i])) * (float64(v) - float64(yr[i]))
			ef += (float64(v) - float64(yf[i])) * (float64(v) - float64(yf[i]))
		}
		for b := 0; b < len(x)/qkK; b++ {
			d, keep := ternaryFit(x[b*qkK:(b+1)*qkK], nil)
			dh := FP16ToFP32(FP32ToFP16(d))
			for j := 0; j < qkK; j++ {
				want := float32(0)
				if keep[j] {
					want = float32(math.Copysign(float64(dh), float64(x[b*qkK+j])))
				}
				if yf[b*qkK+j] != want {
					t.Fatalf("%v block %d element %d: %v, want %v", typ, b, j, yf[b*qkK+j], want)
				}
			}
		}
		t.Logf("%v: relative error %.3f (reference %.3f)", typ, ef/float64(len(x)), er/float64(len(x)))
		if !(ef < er/2) {
			t.Errorf("%v: fitted error %v, reference %v", typ, ef, er)
		}
	}
}
