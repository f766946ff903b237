package model_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
)

// load opens a GGUF model straight through the model package, without the
// tokenizer or the root package.
func load(t *testing.T, path string) (*model.Model, func()) {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	embd, _ := f.Tensor("token_embd.weight")
	hp, err := model.ParseHparams(&f.Metadata, embd.Rows())
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.LoadWeights(&hp, func(name string) (model.Tensor, bool, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return model.Tensor{}, false, nil
		}
		data, err := f.TensorData(ti)
		return model.Tensor{Name: name, Type: ti.Type, Rows: ti.Rows(), Cols: ti.Cols(), Data: data}, true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &model.Model{Hparams: hp, Weights: w}, func() { f.Close() }
}

// TestForwardMatchesLlamaCpp feeds the reference prompt ids of each model
// (no tokenizer involved) and compares the logits after every position.
func TestForwardMatchesLlamaCpp(t *testing.T) {
	dir := testfiles.Dir(t)
	cases := []struct {
		ref, model string
		maxDiff    float64
	}{
		{"reference/stories260K-f32__once-upon-a-time.json", "models/gguf/stories260K-f32.gguf", 1e-4},
		{"reference/stories260K-Q8_0__once-upon-a-time.json", "models/gguf/stories260K-Q8_0.gguf", 1e-3},
		{"reference/synthetic/synth-llama-f32__once-upon-a-time.json", "models/synthetic/synth-llama-f32.gguf", 1e-3},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.model), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, c.ref))
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
			m, done := load(t, filepath.Join(dir, c.model))
			defer done()
			pool := kernels.NewPool(1)
			defer pool.Close()
			st, err := m.NewState(64, pool)
			if err != nil {
				t.Fatal(err)
			}
			for pos, id := range ref.IDs {
				if err := st.Forward(id, pos, true); err != nil {
					t.Fatal(err)
				}
				var worst float64
				for i, v := range st.Logits {
					worst = math.Max(worst, math.Abs(float64(v-ref.Logits[pos][i])))
				}
				if worst > c.maxDiff {
					t.Errorf("position %d: max |logit diff| %.3g > %.3g", pos, worst, c.maxDiff)
				} else {
					t.Logf("position %d: max |logit diff| %.3g", pos, worst)
				}
			}
		})
	}
}
