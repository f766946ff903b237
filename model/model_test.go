package model_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// exactCase is one model and reference file of TestForwardExactGeneric,
// whose logits must be llama.cpp's bit for bit.
type exactCase struct {
	ref, model string
}

// exactCases lists every stories260K GGUF with its three prompts and every
// synthetic and mixture-of-experts file with "Once upon a time".
func exactCases(t *testing.T, dir string) []exactCase {
	t.Helper()
	var cases []exactCase
	stories, err := filepath.Glob(filepath.Join(dir, "models", "gguf", "stories260K-*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stories {
		stem := strings.TrimSuffix(filepath.Base(m), ".gguf")
		for _, slug := range []string{"once-upon-a-time", "lily-and-ben-went-to-the-park", "the-little-dog-was"} {
			cases = append(cases, exactCase{ref: filepath.Join("reference", stem+"__"+slug+".json"), model: m})
		}
	}
	synth, err := filepath.Glob(filepath.Join(dir, "models", "synthetic", "synth-*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range synth {
		stem := strings.TrimSuffix(filepath.Base(m), ".gguf")
		cases = append(cases, exactCase{ref: filepath.Join("reference", "synthetic", stem+"__once-upon-a-time.json"), model: m})
	}
	// The ternary folder: stories260K forced to TQ1_0/TQ2_0 (three
	// prompts) and the synthetic bitnet model ("Once upon a time").
	ternary, err := filepath.Glob(filepath.Join(dir, "models", "ternary", "*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ternary {
		stem := strings.TrimSuffix(filepath.Base(m), ".gguf")
		refs, err := filepath.Glob(filepath.Join(dir, "reference", "ternary", stem+"__*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			rel, _ := filepath.Rel(dir, r)
			cases = append(cases, exactCase{ref: rel, model: m})
		}
	}
	moe, err := filepath.Glob(filepath.Join(dir, "models", "moe", "synth-*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range moe {
		stem := strings.TrimSuffix(filepath.Base(m), ".gguf")
		cases = append(cases, exactCase{ref: filepath.Join("reference", "moe", stem+"__once-upon-a-time.json"), model: m})
	}
	return cases
}

// TestForwardExactGeneric runs every reference model with the generic
// kernels, whose dot products reproduce the float32 arithmetic of
// llama.cpp's AVX2 CPU backend, and requires the prompt logits to equal
// llama.cpp's bit for bit.
func TestForwardExactGeneric(t *testing.T) {
	if testing.Short() {
		t.Skip("every reference model on every tier: skipped in -short mode (the race-detector pass)")
	}
	dir := testfiles.Dir(t)
	prev := kernels.DefaultTier().Name()
	if err := kernels.SetTier("generic"); err != nil {
		t.Fatal(err)
	}
	defer kernels.SetTier(prev)
	for _, c := range exactCases(t, dir) {
		name := strings.TrimSuffix(filepath.Base(c.ref), ".json")
		t.Run(name, func(t *testing.T) {
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
			m, done := load(t, c.model)
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
