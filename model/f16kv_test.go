package model_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
)

// TestForwardExactF16KV runs every reference model with an f16 KV cache,
// fed one token per call as the references were, and compares with
// llama.cpp's run with its default f16 cache (kv_f16): the prompt logits
// must be bit-identical and the 64 greedy tokens identical. It runs on the
// current tier; the generic tier, slower, checks only the prompt logits of
// one prompt per file.
func TestForwardExactF16KV(t *testing.T) {
	if testing.Short() {
		t.Skip("every reference model with an f16 cache: skipped in -short mode")
	}
	dir := testfiles.Dir(t)
	cases := exactCases(t, dir)
	prev := kernels.DefaultTier().Name()
	defer kernels.SetTier(prev)
	tiers := []string{prev}
	if prev != "generic" {
		tiers = append(tiers, "generic")
	}
	for _, tier := range tiers {
		if err := kernels.SetTier(tier); err != nil {
			t.Fatal(err)
		}
		greedy := tier != "generic"
		for _, c := range cases {
			if !greedy && !strings.Contains(c.ref, "once-upon-a-time") {
				continue
			}
			t.Run(tier+"/"+strings.TrimSuffix(filepath.Base(c.ref), ".json"), func(t *testing.T) {
				worst, first, err := runF16KV(t, dir, c, greedy)
				if err != nil {
					t.Fatal(err)
				}
				if worst > 0 {
					t.Errorf("max |logit diff| %.3g (first inexact position %d), want 0", worst, first)
				}
			})
		}
	}
}

// runF16KV feeds a reference's prompt and greedy continuation to its model
// with an f16 cache of 128 slots (llama.cpp's n_ctx). It returns the largest
// |logit diff| over the prompt and the first position with one, and, when
// greedy is set, an error when a greedy token differs.
func runF16KV(t *testing.T, dir string, c exactCase, greedy bool) (worst float64, first int, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, c.ref))
	if err != nil {
		return 0, 0, err
	}
	var ref struct {
		IDs []int `json:"prompt_token_ids"`
		KV  struct {
			Logits [][]float32 `json:"prompt_logits"`
			Greedy []int       `json:"greedy_ids"`
		} `json:"kv_f16"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		return 0, 0, err
	}
	if len(ref.KV.Logits) != len(ref.IDs) || len(ref.KV.Greedy) == 0 {
		return 0, 0, fmt.Errorf("%s: no kv_f16 reference", c.ref)
	}
	m, done := load(t, c.model)
	defer done()
	pool := kernels.NewPool(1)
	defer pool.Close()
	st, err := m.NewStateWith(pool, model.StateOptions{Capacity: 128, KV: kvcache.Options{Type: kvcache.F16}})
	if err != nil {
		return 0, 0, err
	}
	first = -1
	for pos, id := range ref.IDs {
		if err := st.Forward(id, pos, true); err != nil {
			return 0, 0, err
		}
		var w float64
		for i, v := range st.Logits {
			w = math.Max(w, math.Abs(float64(v-ref.KV.Logits[pos][i])))
		}
		if w > 0 && first < 0 {
			first = pos
		}
		worst = math.Max(worst, w)
	}
	if !greedy {
		return worst, first, nil
	}
	pos := len(ref.IDs)
	for step, want := range ref.KV.Greedy {
		got := 0
		for i, v := range st.Logits {
			if v > st.Logits[got] {
				got = i
			}
		}
		if got != want {
			return worst, first, fmt.Errorf("greedy step %d: token %d, llama.cpp %d (max prompt |logit diff| %.3g)", step, got, want, worst)
		}
		if err := st.Forward(got, pos, true); err != nil {
			return worst, first, err
		}
		pos++
	}
	return worst, first, nil
}

// TestF16KVWindow runs past the capacity of an f16 cache with a sliding
// window, which overwrites the oldest slot of the cache: until
// the cache is full the logits must equal those of a cache without
// eviction, and after it they must stay close to an f32 window's.
func TestF16KVWindow(t *testing.T) {
	dir := testfiles.Dir(t)
	for _, tc := range []struct {
		name string
		tol  float64 // f16 against f32 (llama.cpp's differ by 0.008–0.03 on synth-qwen2-f32)
	}{{"models/gguf/stories260K-f32.gguf", 0.05}, {"models/synthetic/synth-qwen2-f32.gguf", 0.2}} {
		t.Run(filepath.Base(tc.name), func(t *testing.T) {
			m, done := load(t, filepath.Join(dir, tc.name))
			defer done()
			pool := kernels.NewPool(2)
			defer pool.Close()
			const capacity, steps = 24, 80
			states := make([]*model.State, 3)
			for i, o := range []kvcache.Options{{Type: kvcache.F16}, {Type: kvcache.F16, Policy: kvcache.Window{}}, {Type: kvcache.F32, Policy: kvcache.Window{}}} {
				c := capacity
				if o.Policy == nil {
					c = steps
				}
				st, err := m.NewStateWith(pool, model.StateOptions{Capacity: c, KV: o})
				if err != nil {
					t.Fatal(err)
				}
				states[i] = st
			}
			var worst float64
			for pos := range steps {
				tok := (pos*131 + 7) % m.Vocab
				for _, st := range states {
					if err := st.Forward(tok, pos, true); err != nil {
						t.Fatal(err)
					}
				}
				same, d := true, 0.0
				for i, v := range states[1].Logits {
					same = same && math.Float32bits(v) == math.Float32bits(states[0].Logits[i])
					d = math.Max(d, math.Abs(float64(v-states[2].Logits[i])))
				}
				if pos < capacity && !same {
					t.Fatalf("position %d: an f16 window before eviction differs from an f16 cache", pos)
				}
				if math.IsNaN(d) || d > tc.tol {
					t.Fatalf("position %d: f16 and f32 windows differ by %.3g", pos, d)
				}
				worst = math.Max(worst, d)
			}
			t.Logf("max |logit diff| f16 vs f32 window: %.3g", worst)
		})
	}
}
