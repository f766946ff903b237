package model

import (
	"errors"
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

// mapMetadata is a Metadata of unsigned values.
type mapMetadata map[string]uint64

func (m mapMetadata) String(string) (string, bool) { return "", false }
func (m mapMetadata) Uint(k string) (uint64, bool) { v, ok := m[k]; return v, ok }
func (m mapMetadata) Float(string) (float64, bool) { return 0, false }

// TestParseMoE checks the expert hyperparameters of each architecture,
// llama.cpp's fallbacks for absent widths and the rejection of bad
// counts.
func TestParseMoE(t *testing.T) {
	cases := []struct {
		arch string
		md   mapMetadata
		want MoEParams
		bad  bool
	}{
		{"llama", mapMetadata{}, MoEParams{}, false}, // dense
		{"llama", mapMetadata{"llama.expert_count": 8, "llama.expert_used_count": 2, "llama.expert_feed_forward_length": 99},
			MoEParams{Experts: 8, Used: 2, ExpertFFN: 512, NormWeights: true}, false}, // llama's experts are feed_forward_length wide
		{"qwen2moe", mapMetadata{"qwen2moe.expert_count": 4, "qwen2moe.expert_used_count": 2},
			MoEParams{Experts: 4, Used: 2, ExpertFFN: 256, SharedFFN: 512}, false}, // n_ff/used and n_ff
		{"qwen2moe", mapMetadata{"qwen2moe.expert_count": 4, "qwen2moe.expert_used_count": 2,
			"qwen2moe.expert_feed_forward_length": 128, "qwen2moe.expert_shared_feed_forward_length": 64},
			MoEParams{Experts: 4, Used: 2, ExpertFFN: 128, SharedFFN: 64}, false},
		{"qwen3moe", mapMetadata{"qwen3moe.expert_count": 128, "qwen3moe.expert_used_count": 8, "qwen3moe.expert_feed_forward_length": 768},
			MoEParams{Experts: 128, Used: 8, ExpertFFN: 768, NormWeights: true}, false},
		{"qwen3moe", mapMetadata{}, MoEParams{}, true},                                                            // experts required
		{"qwen3moe", mapMetadata{"qwen3moe.expert_count": 4}, MoEParams{}, true},                                  // none used
		{"qwen3moe", mapMetadata{"qwen3moe.expert_count": 4, "qwen3moe.expert_used_count": 5}, MoEParams{}, true}, // more used than exist
		{"qwen3moe", mapMetadata{"qwen3moe.expert_count": 4, "qwen3moe.expert_used_count": 2, "qwen3moe.expert_feed_forward_length": 0}, MoEParams{}, true},
	}
	for _, c := range cases {
		got, err := parseMoE(c.md, c.arch, archs[c.arch].moe, 512)
		if c.bad {
			if !errors.Is(err, ErrMetadata) {
				t.Errorf("%s %v: %v, want ErrMetadata", c.arch, c.md, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %v: %+v, %v; want %+v", c.arch, c.md, got, err, c.want)
		}
	}
}
