package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

// referenceFiles returns every llama.cpp reference JSON with the model
// file it was made from.
func referenceFiles(t *testing.T, dir string) (refs, models []string) {
	t.Helper()
	for _, sub := range []struct{ refs, models string }{
		{"reference", "gguf"},
		{"reference/synthetic", "synthetic"},
		{"reference/ternary", "ternary"},
	} {
		m, err := filepath.Glob(filepath.Join(dir, sub.refs, "*__*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m {
			stem, _, _ := strings.Cut(filepath.Base(r), "__")
			refs = append(refs, r)
			models = append(models, filepath.Join(dir, "models", sub.models, stem+".gguf"))
		}
	}
	if len(refs) == 0 {
		t.Fatalf("no reference files under %s", dir)
	}
	return refs, models
}

// runParity runs qsf parity --json and returns its exit status and
// receipt.
func runParity(t *testing.T, model, ref string) (int, receipt, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"parity", "-m", model, "--ref", ref, "--json", "--threads", "1"}, &stdout, &stderr)
	var r receipt
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%s: receipt: %v\nstderr: %s", ref, err, stderr.String())
	}
	return code, r, stdout.String()
}

// TestParityReceipts writes a parity receipt for every reference file (to
// $QSF_PARITY_RECEIPTS when set, else a temporary folder) and requires
// each to pass.
func TestParityReceipts(t *testing.T) {
	if testing.Short() {
		t.Skip("a receipt for every reference: skipped in -short mode")
	}
	dir := testfiles.Dir(t)
	out := os.Getenv("QSF_PARITY_RECEIPTS")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	refs, models := referenceFiles(t, dir)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	var mu sync.Mutex
	exact := 0
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			code, r, text := runParity(t, models[i], refs[i])
			name := strings.TrimSuffix(filepath.Base(refs[i]), ".json") + ".receipt.json"
			if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
				t.Error(err)
			}
			if code != 0 || !r.Pass {
				t.Errorf("%s: exit %d, failures %v", filepath.Base(refs[i]), code, r.Failures)
			}
			if !r.SameFile {
				t.Errorf("%s: model sha256 differs from the reference's", filepath.Base(refs[i]))
			}
			mu.Lock()
			if r.BitExact {
				exact++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("%d receipts in %s, %d with bit-identical prompt logits", len(refs), out, exact)
}

// TestParityPerturbedFails perturbs the synthetic bitnet model's final
// norm and checks that its receipt against the F32 reference fails, on
// the logits and on the tokens.
func TestParityPerturbedFails(t *testing.T) {
	src := testfiles.Path(t, "models", "ternary", "synth-bitnet-f32.gguf")
	ref := testfiles.Path(t, "reference", "ternary", "synth-bitnet-f32__once-upon-a-time.json")
	f, err := format.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tensors []format.WriterTensor
	var payload [][]byte
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		b, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		if ti.Name == "output_norm.weight" && ti.Type == quant.F32 {
			b = append([]byte(nil), b...)
			for j := 0; j < len(b); j += 4 {
				v := math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
				v *= 1 + 0.8*float32(math.Sin(float64(j)))
				binary.LittleEndian.PutUint32(b[j:], math.Float32bits(v))
			}
		}
		tensors = append(tensors, format.WriterTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type})
		payload = append(payload, b)
	}
	path := filepath.Join(t.TempDir(), "perturbed.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := format.WriteGGUF(out, &f.Metadata, tensors, func(i int, w io.Writer) error {
		_, err := w.Write(payload[i])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out.Close()

	code, r, _ := runParity(t, path, ref)
	if code == 0 || r.Pass {
		t.Fatalf("perturbed model: exit %d, pass %v, want a failing receipt", code, r.Pass)
	}
	if r.FirstDiverg == nil || r.SameFile || r.BitExact {
		t.Errorf("perturbed model: first divergence %v, same file %v, bit-identical %v", r.FirstDiverg, r.SameFile, r.BitExact)
	}
	t.Logf("perturbed: cosine min %.4f, first divergence %d, failures %v", r.CosineMin, *r.FirstDiverg, r.Failures)

	// The unperturbed file passes the same check.
	if code, r, _ := runParity(t, src, ref); code != 0 || !r.Pass || !r.BitExact {
		t.Errorf("original model: exit %d, pass %v, bit-identical %v", code, r.Pass, r.BitExact)
	}
}
