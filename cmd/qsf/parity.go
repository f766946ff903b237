package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
)

// parityReference is the part of a llama.cpp reference file (schema
// llamacpp-reference/1, see ../shared/reference/README.md) that a parity
// receipt compares with.
type parityReference struct {
	ModelFile      string      `json:"model_file"`
	ModelSHA256    string      `json:"model_sha256"`
	ModelDesc      string      `json:"model_desc"`
	Prompt         string      `json:"prompt"`
	PromptTokenIDs []int       `json:"prompt_token_ids"`
	PromptLogits   [][]float32 `json:"prompt_logits"`
	Greedy         struct {
		IDs []int `json:"ids"`
	} `json:"greedy"`
}

// parityMinCosine is the smallest per-position cosine similarity a receipt
// passes with.
const parityMinCosine = 0.99

// receipt is what qsf parity reports: how closely QSF's prompt logits and
// greedy tokens follow a llama.cpp reference, for which file, and on which
// path they were computed.
type receipt struct {
	Schema          string `json:"schema"`
	ModelFile       string `json:"model_file"`
	ModelSHA256     string `json:"model_sha256"`
	Reference       string `json:"reference"`
	ReferenceSHA256 string `json:"reference_model_sha256"`
	SameFile        bool   `json:"same_file_as_reference"`
	ReferenceType   string `json:"reference_model_desc"`
	Prompt          string `json:"prompt"`
	PromptTokensOK  bool   `json:"prompt_tokens_match"`

	Path struct {
		Tier        string         `json:"tier"`
		Mode        string         `json:"mode"`
		Evaluation  string         `json:"evaluation"`
		WeightTypes map[string]int `json:"weight_types"`
	} `json:"path"`

	Positions   int       `json:"positions"`
	CosineMin   float64   `json:"cosine_min"`
	CosineMean  float64   `json:"cosine_mean"`
	Cosines     []float64 `json:"cosine_per_position"`
	MaxAbsDiff  float64   `json:"max_abs_diff"`
	BitExact    bool      `json:"bit_identical"`
	GreedySteps int       `json:"greedy_steps"`
	GreedyMatch float64   `json:"greedy_exact_match_rate"`
	FirstDiverg *int      `json:"greedy_first_divergence"`
	Pass        bool      `json:"pass"`
	Failures    []string  `json:"failures"`
}

// errParity is returned (exit status 1) when a receipt does not pass.
var errParity = errors.New("parity check failed")

func cmdParity(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("parity", "-m FILE --ref REF.json [--json]", stderr)
	var mf modelFlags
	mf.register(fs)
	refPath := fs.String("ref", "", "llama.cpp reference JSON (schema of ../shared/reference)")
	asJSON := fs.Bool("json", false, "print the receipt as JSON")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *refPath == "" {
		return usagef("no reference: pass --ref REF.json")
	}
	raw, err := os.ReadFile(*refPath)
	if err != nil {
		return err
	}
	var ref parityReference
	if err := json.Unmarshal(raw, &ref); err != nil {
		return fmt.Errorf("%s: %w", *refPath, err)
	}
	if len(ref.PromptTokenIDs) == 0 || len(ref.PromptLogits) != len(ref.PromptTokenIDs) {
		return fmt.Errorf("%s: %d prompt tokens and %d rows of logits", *refPath, len(ref.PromptTokenIDs), len(ref.PromptLogits))
	}
	if mf.ctx == 0 {
		mf.ctx = len(ref.PromptTokenIDs) + len(ref.Greedy.IDs) + 1
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	r, err := parity(m, mf.path, *refPath, &ref)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printReceipt(stdout, r)
	}
	if !r.Pass {
		return fmt.Errorf("%w: %s", errParity, strings.Join(r.Failures, "; "))
	}
	return nil
}

// parity evaluates the reference prompt one token per call, as the
// references were made, then feeds the reference's greedy tokens and
// compares the argmax before each with it.
func parity(m *qsf.Model, modelPath, refPath string, ref *parityReference) (*receipt, error) {
	r := &receipt{Schema: "qsf-parity/1", ModelFile: modelPath, Reference: refPath,
		ReferenceSHA256: ref.ModelSHA256, ReferenceType: ref.ModelDesc, Prompt: ref.Prompt}
	sum, types, err := fileFacts(modelPath)
	if err != nil {
		return nil, err
	}
	r.ModelSHA256, r.Path.WeightTypes = sum, types
	r.SameFile = strings.EqualFold(sum, ref.ModelSHA256)
	r.Path.Tier = m.Info().Kernel
	r.Path.Mode = "resident"
	if m.Streaming() {
		r.Path.Mode = "streaming"
	}
	r.Path.Evaluation = "one token per Forward call, as llama.cpp's reference"
	r.PromptTokensOK = fmt.Sprint(m.Tokenize(ref.Prompt, qsfTokenizeDefault)) == fmt.Sprint(ref.PromptTokenIDs)
	if !r.PromptTokensOK {
		r.Failures = append(r.Failures, "prompt tokens differ from the reference's")
	}

	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ctx := context.Background()
	var logits []float32
	r.CosineMin, r.BitExact = 1, true
	for i, id := range ref.PromptTokenIDs {
		if logits, err = s.Forward(ctx, []int{id}); err != nil {
			return nil, err
		}
		want := ref.PromptLogits[i]
		if len(want) != len(logits) {
			return nil, fmt.Errorf("%s: %d logits at position %d, the model has %d", refPath, len(want), i, len(logits))
		}
		c, d, exact := compareLogits(logits, want)
		r.Cosines = append(r.Cosines, c)
		r.CosineMin = math.Min(r.CosineMin, c)
		r.CosineMean += c / float64(len(ref.PromptTokenIDs))
		r.MaxAbsDiff = math.Max(r.MaxAbsDiff, d)
		r.BitExact = r.BitExact && exact
	}
	r.Positions = len(ref.PromptTokenIDs)
	if !(r.CosineMin >= parityMinCosine) {
		r.Failures = append(r.Failures, fmt.Sprintf("min cosine %.6f < %.2f", r.CosineMin, parityMinCosine))
	}

	matched := 0
	for step, want := range ref.Greedy.IDs {
		if got := argmaxLogits(logits); got == want {
			matched++
		} else if r.FirstDiverg == nil {
			st := step
			r.FirstDiverg = &st
		}
		if step == len(ref.Greedy.IDs)-1 {
			break
		}
		if logits, err = s.Forward(ctx, []int{want}); err != nil {
			return nil, err
		}
	}
	r.GreedySteps = len(ref.Greedy.IDs)
	if r.GreedySteps > 0 {
		r.GreedyMatch = float64(matched) / float64(r.GreedySteps)
	}
	if r.FirstDiverg != nil && floatReference(ref.ModelDesc) {
		r.Failures = append(r.Failures, fmt.Sprintf("greedy tokens diverge at step %d on a %s reference", *r.FirstDiverg, ref.ModelDesc))
	}
	r.Pass = len(r.Failures) == 0
	if r.Failures == nil {
		r.Failures = []string{}
	}
	return r, nil
}

// floatReference reports whether llama.cpp's model description names
// float weights (F32 or F16), where greedy tokens must not diverge.
func floatReference(desc string) bool {
	for _, w := range strings.Fields(desc) {
		if w == "F32" || w == "F16" {
			return true
		}
	}
	return false
}

// fileFacts returns the sha256 of the file and the count of its tensors
// per type.
func fileFacts(path string) (string, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", nil, err
	}
	mf, err := format.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer mf.Close()
	types := map[string]int{}
	for i := range mf.Tensors {
		types[mf.Tensors[i].Type.String()]++
	}
	return hex.EncodeToString(h.Sum(nil)), types, nil
}

// compareLogits returns the cosine similarity and largest absolute
// difference of a and b, and whether they are equal bit for bit.
func compareLogits(a, b []float32) (cos, maxDiff float64, exact bool) {
	var ab, aa, bb float64
	exact = true
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += float64(x * y)
		aa += float64(x * x)
		bb += float64(y * y)
		maxDiff = math.Max(maxDiff, math.Abs(x-y))
		exact = exact && math.Float32bits(a[i]) == math.Float32bits(b[i])
	}
	return ab / math.Sqrt(aa*bb), maxDiff, exact
}

// argmaxLogits returns the index of the largest logit, the lowest on ties
// (as the references' greedy sampling).
func argmaxLogits(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func printReceipt(w io.Writer, r *receipt) {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "parity %s: %s vs %s\n", verdict, r.ModelFile, r.Reference)
	fmt.Fprintf(w, "  model sha256   %s (reference's file: %v)\n", r.ModelSHA256, r.SameFile)
	fmt.Fprintf(w, "  reference      %s, prompt %q (tokens match: %v)\n", r.ReferenceType, r.Prompt, r.PromptTokensOK)
	fmt.Fprintf(w, "  path           tier %s, %s, %s, weights %v\n", r.Path.Tier, r.Path.Mode, r.Path.Evaluation, r.Path.WeightTypes)
	fmt.Fprintf(w, "  prompt logits  %d positions, cosine min %.7f mean %.7f, max |diff| %.3g, bit-identical %v\n",
		r.Positions, r.CosineMin, r.CosineMean, r.MaxAbsDiff, r.BitExact)
	first := "none"
	if r.FirstDiverg != nil {
		first = fmt.Sprint(*r.FirstDiverg)
	}
	fmt.Fprintf(w, "  greedy         %d steps, exact-match rate %.3f, first divergence %s\n", r.GreedySteps, r.GreedyMatch, first)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  failure: %s\n", f)
	}
}
