package model_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
)

// TestMoEExact runs every mixture-of-experts reference model on the
// generic and avx2 kernel tiers and requires llama.cpp's prompt logits bit
// for bit. (The experimental avx512 tier's Q8_0 kernel does not round as
// the AVX2 build does.)
func TestMoEExact(t *testing.T) {
	dir := testfiles.Dir(t)
	refs, _ := filepath.Glob(filepath.Join(dir, "reference", "moe", "*__*.json"))
	if len(refs) == 0 {
		t.Skip("no mixture-of-experts references in " + dir)
	}
	defer kernels.SetTier(kernels.Tier())
	for _, tier := range kernels.Tiers() {
		if tier != "generic" && tier != "avx2" {
			continue
		}
		if err := kernels.SetTier(tier); err != nil {
			t.Fatal(err)
		}
		for _, path := range refs {
			stem, _, _ := strings.Cut(filepath.Base(path), "__")
			t.Run(tier+"/"+stem, func(t *testing.T) {
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var ref struct {
					IDs    []int       `json:"prompt_token_ids"`
					Logits [][]float32 `json:"prompt_logits"`
				}
				if err := json.Unmarshal(raw, &ref); err != nil {
					t.Fatal(err)
				}
				m, done := load(t, filepath.Join(dir, "models", "moe", stem+".gguf"))
				defer done()
				pool := kernels.NewPool(1)
				defer pool.Close()
				st, err := m.NewState(64, pool)
				if err != nil {
					t.Fatal(err)
				}
				var worst float64
				first := -1
				for pos, id := range ref.IDs {
					if err := st.Forward(id, pos, true); err != nil {
						t.Fatal(err)
					}
					var w float64
					for i, v := range st.Logits {
						w = math.Max(w, math.Abs(float64(v-ref.Logits[pos][i])))
					}
					if w > 0 && first < 0 {
						first = pos
					}
					worst = math.Max(worst, w)
				}
				if worst > 0 {
					t.Errorf("max |logit diff| %.3g (first inexact position %d of %d), want 0", worst, first, len(ref.IDs))
				}
			})
		}
	}
}
