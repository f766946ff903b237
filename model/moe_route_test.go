package model

import (
	"math"
	"testing"
)

// TestTopKTieOrder checks the selection order of ggml_argsort's exchange
// sort, which is not stable: equal probabilities do not always come out
// lowest index first.
func TestTopKTieOrder(t *testing.T) {
	cases := []struct {
		p    []float32
		k    int
		want []int32
	}{
		{[]float32{0.1, 0.4, 0.2, 0.3}, 2, []int32{1, 3}},
		{[]float32{0.1, 0.3, 0.3, 0.3}, 2, []int32{1, 2}},
		// j=0 swaps 0↔1 (0.2 < 0.5) then keeps 1 against 2 (0.5 = 0.5);
		// j=1 now holds index 0 (0.2) and swaps with 2, so 1 then 2.
		{[]float32{0.2, 0.5, 0.5, 0.1}, 3, []int32{1, 2, 0}},
		// Not stable: moving index 2 to the front swaps index 0 behind
		// index 1, so the three ties come out 1, 0, 3.
		{[]float32{0.3, 0.3, 0.9, 0.3}, 4, []int32{2, 1, 0, 3}},
	}
	for _, c := range cases {
		sel := make([]int32, c.k)
		topK(sel, c.p, make([]int32, len(c.p)))
		for i := range sel {
			if sel[i] != c.want[i] {
				t.Errorf("topK(%v, %d) = %v, want %v", c.p, c.k, sel, c.want)
				break
			}
		}
	}
}

// TestRouteWeights checks the expert weights against the formulas in
// float64: softmax over all experts, then the selected probabilities,
// renormalised or not.
func TestRouteWeights(t *testing.T) {
	logits := []float32{0.5, -1.25, 2, 1.5, 0.25, -3, 0.75, 1, 1.75, -0.5}
	for _, norm := range []bool{false, true} {
		sel, w := make([]int32, 3), make([]float32, 3)
		probs := make([]float32, len(logits))
		route(sel, w, probs, logits, make([]int32, len(logits)), norm)
		if sel[0] != 2 || sel[1] != 8 || sel[2] != 3 {
			t.Fatalf("selected %v, want [2 8 3]", sel)
		}
		var z float64
		for _, l := range logits {
			z += math.Exp(float64(l))
		}
		var sum float64
		for _, e := range sel {
			sum += math.Exp(float64(logits[e])) / z
		}
		for i, e := range sel {
			want := math.Exp(float64(logits[e])) / z
			if norm {
				want /= sum
			}
			if math.Abs(float64(w[i])-want) > 1e-6 {
				t.Errorf("norm %v: weight %d = %g, want %g", norm, i, w[i], want)
			}
		}
	}
}
