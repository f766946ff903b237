package qsf_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
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
