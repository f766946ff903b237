package qsf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// reference is the part of a llama.cpp reference file (see
// ../shared/reference/README.md) that the parity tests use.
type reference struct {
	ModelFile      string      `json:"model_file"`
	Prompt         string      `json:"prompt"`
	PromptTokenIDs []int       `json:"prompt_token_ids"`
	PromptLogits   [][]float32 `json:"prompt_logits"`
	Greedy         struct {
		IDs              []int     `json:"ids"`
		Text             string    `json:"text"`
		TopMarginPerStep []float32 `json:"top1_margin_per_step"`
	} `json:"greedy"`
}

type parityRow struct {
	file, prompt    string
	tier            string // the model's kernel tier
	promptOK        bool
	same, total     int     // greedy tokens identical before the first difference
	margin          float32 // llama.cpp's top-1 margin at the first difference
	minCos, maxDiff float64
}

// TestReferenceParity runs every (model, prompt) pair in the reference
// folder and compares prompt tokens, prompt logits and 64 greedy tokens
// with llama.cpp's. Every pair must keep the prompt tokens and all greedy
// tokens, and its prompt logits must be bit-identical, on every tier and
// GOARCH.
func TestReferenceParity(t *testing.T) {
	if testing.Short() {
		t.Skip("the full llama.cpp reference walk is skipped in -short mode")
	}
	dir := testfiles.Dir(t)
	var files []string
	for _, pattern := range []string{"reference/*__*.json", "reference/synthetic/*__*.json", "reference/ternary/*__*.json", "reference/moe/*__*.json"} {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no reference files in %s/reference", dir)
	}
	rows := make([]parityRow, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, path := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i] = runParity(t, dir, path)
		}()
	}
	wg.Wait()

	var b strings.Builder
	fmt.Fprintf(&b, "kernel tier %s, GOARCH %s\n", rows[0].tier, runtime.GOARCH)
	fmt.Fprintf(&b, "%-40s %-30s %6s %8s %8s %10s %9s\n", "file", "prompt", "tokens", "greedy", "margin", "min cos", "max diff")
	identical := 0
	for _, r := range rows {
		margin := "-"
		if r.same < r.total {
			margin = fmt.Sprintf("%.2g", r.margin)
		}
		fmt.Fprintf(&b, "%-40s %-30s %6v %5d/%-2d %8s %10.7f %9.2g\n", r.file, r.prompt, r.promptOK, r.same, r.total, margin, r.minCos, r.maxDiff)
		if r.promptOK && r.same == r.total && r.maxDiff == 0 {
			identical++
		}
		if !r.promptOK {
			t.Errorf("%s %q: prompt tokens differ", r.file, r.prompt)
		}
		if r.same != r.total {
			t.Errorf("%s %q: greedy tokens differ from step %d", r.file, r.prompt, r.same)
		}
		if r.maxDiff > 0 {
			t.Errorf("%s %q: prompt logits differ by up to %.3g, want 0", r.file, r.prompt, r.maxDiff)
		}
	}
	fmt.Fprintf(&b, "pairs with identical tokens and bit-identical logits: %d of %d\n", identical, len(rows))
	t.Log("\n" + b.String())
}

func runParity(t *testing.T, dir, path string) parityRow {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return parityRow{file: filepath.Base(path)}
	}
	var ref reference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Errorf("%s: %v", path, err)
		return parityRow{file: filepath.Base(path)}
	}
	row := parityRow{file: ref.ModelFile, prompt: ref.Prompt, total: len(ref.Greedy.IDs), minCos: 1}
	modelPath := referenceModel(dir, path, ref.ModelFile)
	m, err := qsf.Load(modelPath, qsf.Config{Threads: 1, ContextLength: 128})
	if err != nil {
		t.Errorf("%s: %v", ref.ModelFile, err)
		return row
	}
	defer m.Close()
	row.tier = m.Info().Kernel
	ids := m.Tokenize(ref.Prompt, qsf.TokenizeOptions{})
	row.promptOK = fmt.Sprint(ids) == fmt.Sprint(ref.PromptTokenIDs)

	s, err := m.NewSession()
	if err != nil {
		t.Error(err)
		return row
	}
	defer s.Close()
	ctx := context.Background()
	var logits []float32
	for i, id := range ref.PromptTokenIDs {
		logits, err = s.Forward(ctx, []int{id})
		if err != nil {
			t.Errorf("%s: %v", ref.ModelFile, err)
			return row
		}
		c, d := compare(logits, ref.PromptLogits[i])
		row.minCos = math.Min(row.minCos, c)
		row.maxDiff = math.Max(row.maxDiff, d)
	}
	for step, want := range ref.Greedy.IDs {
		got := argmax(logits)
		if got != want {
			row.margin = ref.Greedy.TopMarginPerStep[step]
			break
		}
		row.same = step + 1
		if logits, err = s.Forward(ctx, []int{got}); err != nil {
			t.Errorf("%s: %v", ref.ModelFile, err)
			break
		}
	}
	return row
}

// referenceModel returns the model file a reference JSON at refPath
// names: models/ternary for reference/ternary, models/synthetic for the
// synth- files, models/gguf for the rest.
func referenceModel(dir, refPath, modelFile string) string {
	switch {
	case filepath.Base(filepath.Dir(refPath)) == "ternary":
		return filepath.Join(dir, "models", "ternary", modelFile)
	case filepath.Base(filepath.Dir(refPath)) == "moe":
		return filepath.Join(dir, "models", "moe", modelFile)
	case strings.HasPrefix(modelFile, "synth-"):
		return filepath.Join(dir, "models", "synthetic", modelFile)
	}
	return filepath.Join(dir, "models", "gguf", modelFile)
}

// compare returns the cosine similarity and the largest absolute
// difference of two logit vectors.
func compare(a, b []float32) (cos, maxDiff float64) {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
		maxDiff = math.Max(maxDiff, math.Abs(x-y))
	}
	return ab / math.Sqrt(aa*bb), maxDiff
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// TestPerplexity compares Model.Perplexity on the TinyStories sample with
// llama-perplexity's figures (f32 KV cache), within 0.2%.
func TestPerplexity(t *testing.T) {
	if testing.Short() {
		t.Skip("perplexity over 17 models is skipped in -short mode")
	}
	dir := testfiles.Dir(t)
	type pplRun struct {
		ModelFile string  `json:"model_file"`
		PPL       float64 `json:"ppl"`
		Chunks    int     `json:"n_chunks"`
		dir       string  // models/<dir>
	}
	var runs []pplRun
	for _, src := range []struct{ json, models string }{
		{"perplexity.json", "gguf"},
		{"ternary/perplexity-ternary.json", "ternary"},
	} {
		raw, err := os.ReadFile(filepath.Join(dir, "reference", src.json))
		if err != nil {
			t.Fatal(err)
		}
		var ref struct {
			Runs map[string][]pplRun `json:"runs"`
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		for _, r := range ref.Runs["kv_f32"] {
			r.dir = src.models
			runs = append(runs, r)
		}
	}
	text, err := os.ReadFile(filepath.Join(dir, "models", "corpus", "tinystories_sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ModelFile < runs[j].ModelFile })
	var b strings.Builder
	for _, r := range runs {
		m, err := qsf.Load(filepath.Join(dir, "models", r.dir, r.ModelFile), qsf.Config{Threads: 2, ContextLength: 128})
		if err != nil {
			t.Errorf("%s: %v", r.ModelFile, err)
			continue
		}
		res, err := m.Perplexity(context.Background(), string(text), qsf.PerplexityOptions{Context: 128}, nil)
		m.Close()
		if err != nil {
			t.Errorf("%s: %v", r.ModelFile, err)
			continue
		}
		rel := math.Abs(res.PPL-r.PPL) / r.PPL
		fmt.Fprintf(&b, "%-36s qsf %9.4f  llama.cpp %9.4f  diff %.3f%%\n", r.ModelFile, res.PPL, r.PPL, 100*rel)
		if res.Chunks != r.Chunks {
			t.Errorf("%s: %d chunks, llama.cpp %d", r.ModelFile, res.Chunks, r.Chunks)
		}
		if rel > 0.002 {
			t.Errorf("%s: perplexity %.4f, llama.cpp %.4f (%.3f%% off)", r.ModelFile, res.PPL, r.PPL, 100*rel)
		}
	}
	t.Log("\n" + b.String())
}
