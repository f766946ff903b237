package qsf_test

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

func TestActivationEnergy(t *testing.T) {
	m, err := qsf.Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), qsf.Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun."
	energy, n, err := m.ActivationEnergy(context.Background(), text, qsf.CalibrationOptions{Context: 16})
	if err != nil {
		t.Fatal(err)
	}
	if n < 16 {
		t.Fatalf("evaluated %d tokens", n)
	}
	for _, name := range []string{"blk.0.attn_q.weight", "blk.4.ffn_down.weight", "blk.2.attn_output.weight", "blk.1.ffn_up.weight"} {
		e, ok := energy[name]
		if !ok {
			t.Fatalf("no energy for %s (have %d tensors)", name, len(energy))
		}
		var sum float64
		for _, v := range e {
			if !(v >= 0) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: energy %v", name, v)
			}
			sum += float64(v)
		}
		if sum == 0 {
			t.Errorf("%s: all energy zero", name)
		}
	}
	// Q, K and V read the same normalized input.
	q, k := energy["blk.3.attn_q.weight"], energy["blk.3.attn_k.weight"]
	for j := range q {
		if q[j] != k[j] {
			t.Fatalf("column %d: Q energy %v, K energy %v", j, q[j], k[j])
		}
	}
	if len(energy["blk.0.ffn_down.weight"]) != 172 || len(energy["blk.0.ffn_gate.weight"]) != 64 {
		t.Errorf("widths: down %d, gate %d", len(energy["blk.0.ffn_down.weight"]), len(energy["blk.0.ffn_gate.weight"]))
	}
	if _, _, err := m.ActivationEnergy(context.Background(), "", qsf.CalibrationOptions{}); !errors.Is(err, qsf.ErrCalibrationText) {
		t.Errorf("empty text: err = %v, want ErrCalibrationText", err)
	}
}

// ExampleModel_ActivationEnergy measures the importance of the columns of
// every matrix on a calibration text, for qsf quantize --calibration.
func ExampleModel_ActivationEnergy() {
	m, err := qsf.Load("model.gguf", qsf.Config{})
	if err != nil {
		return
	}
	defer m.Close()
	energy, tokens, err := m.ActivationEnergy(context.Background(), "Once upon a time ...", qsf.CalibrationOptions{})
	if err != nil {
		return
	}
	_ = energy["blk.0.attn_q.weight"] // one weight per column of the matrix
	_ = tokens
}

// TestActivationGram: the second moments are symmetric and their
// diagonals are ActivationEnergy's energies.
func TestActivationGram(t *testing.T) {
	m, err := qsf.Load(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), qsf.Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun."
	opts := qsf.CalibrationOptions{Context: 16}
	energy, n1, err := m.ActivationEnergy(context.Background(), text, opts)
	if err != nil {
		t.Fatal(err)
	}
	gram, n2, err := m.ActivationGram(context.Background(), text, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n1 != n2 || len(gram) != len(energy) {
		t.Fatalf("%d tokens and %d matrices, ActivationEnergy %d and %d", n2, len(gram), n1, len(energy))
	}
	for name, e := range energy {
		g, k := gram[name], len(e)
		if len(g) != k*k {
			t.Fatalf("%s: %d second moments for %d columns", name, len(g), k)
		}
		for i := 0; i < k; i++ {
			if d := g[i*k+i]; math.Abs(d-float64(e[i])) > 1e-5*math.Abs(d)+1e-12 {
				t.Fatalf("%s: diagonal %d is %g, energy %g", name, i, d, e[i])
			}
			for j := 0; j < i; j++ {
				if g[i*k+j] != g[j*k+i] {
					t.Fatalf("%s: not symmetric at %d,%d", name, i, j)
				}
			}
		}
	}
}

// TestMatrixSensitivity: a matrix replaced by itself changes nothing; at
// two bits it does, and a missing name is an error.
func TestMatrixSensitivity(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f, err := format.OpenWith(path, format.OpenOptions{NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const name = "blk.1.ffn_up.weight"
	ti, _ := f.Tensor(name)
	raw, err := f.TensorData(ti)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float32, ti.Elements())
	if err := quant.DequantizeRow(ti.Type, w, raw); err != nil {
		t.Fatal(err)
	}
	q2 := make([]byte, len(w)/64*20)
	if err := quant.QuantizeRow(quant.QSF_Q2R, q2, w); err != nil {
		t.Fatal(err)
	}
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun."
	for _, tc := range []struct {
		typ  quant.Type
		data []byte
		zero bool
	}{{ti.Type, raw, true}, {quant.QSF_Q2R, q2, false}} {
		kl, n, err := m.MatrixSensitivity(context.Background(), text, qsf.SensitivityOptions{Context: 16}, []string{name}, func(string) (quant.Type, []byte, error) {
			return tc.typ, tc.data, nil
		})
		if err != nil || n < 16 {
			t.Fatalf("%v: %v, %d tokens", tc.typ, err, n)
		}
		if (kl[name] == 0) != tc.zero || kl[name] < 0 {
			t.Errorf("%v: KL %g", tc.typ, kl[name])
		}
	}
	if _, _, err := m.MatrixSensitivity(context.Background(), text, qsf.SensitivityOptions{}, []string{"nope"}, nil); !errors.Is(err, qsf.ErrNoMatrix) {
		t.Errorf("missing matrix: %v", err)
	}
}

// TestLayerImportance measures how much each layer of stories260K changes
// its input, and that a layer whose outputs are zeroed (attn_output and
// ffn_down all 0, so it adds nothing to the residual stream) scores 0.
func TestLayerImportance(t *testing.T) {
	src := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	f, err := format.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zeroed := filepath.Join(t.TempDir(), "zeroed.gguf")
	out, err := os.Create(zeroed)
	if err != nil {
		t.Fatal(err)
	}
	var wt []format.WriterTensor
	for _, ti := range f.Tensors {
		wt = append(wt, format.WriterTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type})
	}
	err = format.WriteGGUF(out, &f.Metadata, wt, func(i int, w io.Writer) error {
		b, err := f.TensorData(&f.Tensors[i])
		if err != nil {
			return err
		}
		if n := f.Tensors[i].Name; n == "blk.2.attn_output.weight" || n == "blk.2.ffn_down.weight" {
			b = make([]byte, len(b))
		}
		_, err = w.Write(b)
		return err
	})
	if err := errors.Join(err, out.Close()); err != nil {
		t.Fatal(err)
	}
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun."
	for _, path := range []string{src, zeroed} {
		m, err := qsf.Load(path, qsf.Config{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		imp, n, err := m.LayerImportance(context.Background(), text, qsf.CalibrationOptions{Context: 16})
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(imp) != 5 || n < 16 {
			t.Fatalf("%d scores over %d tokens", len(imp), n)
		}
		for l, v := range imp {
			if path == zeroed && l == 2 {
				if math.Abs(v) > 1e-12 {
					t.Errorf("zeroed layer 2 scores %v, want 0", v)
				}
				continue
			}
			if !(v > 1e-4 && v < 2) {
				t.Errorf("%s: layer %d scores %v", filepath.Base(path), l, v)
			}
		}
		t.Logf("%s: %.4f over %d tokens", filepath.Base(path), imp, n)
	}
}
