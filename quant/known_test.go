package quant_test

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// worstRMS is the MANIFEST's worst RMS relative dequantization error per
// type over the stories260K files.
var worstRMS = map[quant.Type]float64{
	quant.F16: 2.1e-4, quant.BF16: 2.0e-3, quant.Q8_0: 6.2e-3, quant.Q6_K: 2.0e-2,
	quant.Q5_K: 3.9e-2, quant.Q5_1: 4.2e-2, quant.Q5_0: 5.0e-2, quant.Q4_K: 7.8e-2,
	quant.IQ4_NL: 8.4e-2, quant.Q4_1: 8.8e-2, quant.Q4_0: 9.6e-2, quant.Q3_K: 0.165,
	quant.Q2_K: 0.339,
}

var modelFiles = []struct{ file, ref string }{
	{"stories260K-F16.gguf", "stories260K-f32.gguf"},
	{"stories260K-BF16.gguf", "stories260K-f32.gguf"},
	{"stories260K-Q8_0.gguf", "stories260K-f32.gguf"},
	{"stories260K-Q4_0.gguf", "stories260K-f32.gguf"},
	{"stories260K-Q4_1.gguf", "stories260K-f32.gguf"},
	{"stories260K-Q5_0.gguf", "stories260K-f32.gguf"},
	{"stories260K-Q5_1.gguf", "stories260K-f32.gguf"},
	{"stories260K-IQ4_NL.gguf", "stories260K-f32.gguf"},
	{"stories260K-pad256-Q2_K-pure.gguf", "stories260K-pad256-f32.gguf"},
	{"stories260K-pad256-Q3_K-pure.gguf", "stories260K-pad256-f32.gguf"},
	{"stories260K-pad256-Q4_K-pure.gguf", "stories260K-pad256-f32.gguf"},
	{"stories260K-pad256-Q5_K-pure.gguf", "stories260K-pad256-f32.gguf"},
	{"stories260K-pad256-Q6_K-pure.gguf", "stories260K-pad256-f32.gguf"},
	{"stories260K-pad256-Q8_0-pure.gguf", "stories260K-pad256-f32.gguf"},
	{"stories260K-pad256-Q4_K_M.gguf", "stories260K-pad256-f32.gguf"},
}

// f32Tensor returns the F32 tensor called name of the reference file ref.
func f32Tensor(t *testing.T, ref *format.File, name string) []float32 {
	t.Helper()
	ti, ok := ref.Tensor(name)
	if !ok {
		t.Fatalf("%s: no tensor %s", ref.Name(), name)
	}
	if ti.Type != quant.F32 {
		t.Fatalf("%s: reference tensor %s is %v", ref.Name(), name, ti.Type)
	}
	data := tensorData(t, ref, ti)
	out := make([]float32, len(data)/4)
	if err := quant.DequantizeRow(quant.F32, out, data); err != nil {
		t.Fatal(err)
	}
	return out
}

func rmsRel(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// TestDequantizeKnownAnswer dequantizes every tensor of the real quantized
// GGUFs and compares it with the f32 source.
func TestDequantizeKnownAnswer(t *testing.T) {
	worst := map[quant.Type]float64{}
	for _, mf := range modelFiles {
		q := loadModel(t, mf.file)
		ref := loadModel(t, mf.ref)
		for i := range q.Tensors {
			tn := &q.Tensors[i]
			name := tn.Name
			if _, ok := ref.Tensor(name); !ok {
				t.Errorf("%s: %s missing from %s", mf.file, name, mf.ref)
				continue
			}
			want := f32Tensor(t, ref, name)
			got := make([]float32, len(want))
			if err := quant.DequantizeRow(tn.Type, got, tensorData(t, q, tn)); err != nil {
				t.Errorf("%s %s: %v", mf.file, name, err)
				continue
			}
			e := rmsRel(got, want)
			worst[tn.Type] = max(worst[tn.Type], e)
			if lim, ok := worstRMS[tn.Type]; ok && e > 1.1*lim {
				t.Errorf("%s %s (%v): RMS relative error %.3g > 1.1×%.3g", mf.file, name, tn.Type, e, lim)
			}
			if tn.Type == quant.F32 && e != 0 {
				t.Errorf("%s %s: F32 tensor differs from source", mf.file, name)
			}
		}
	}
	var lines []string
	for ty, e := range worst {
		lines = append(lines, fmt.Sprintf("%v=%.3g", ty, e))
	}
	sort.Strings(lines)
	t.Logf("worst RMS relative error per type: %v", lines)
}

// TestQuantizeByteExact re-quantizes the f32 source tensors with the
// reference quantizers and compares the bytes with llama-quantize's output.
func TestQuantizeByteExact(t *testing.T) {
	same := map[quant.Type]int{}
	for _, mf := range modelFiles {
		q := loadModel(t, mf.file)
		ref := loadModel(t, mf.ref)
		for i := range q.Tensors {
			tn := &q.Tensors[i]
			name := tn.Name
			if tn.Type == quant.F32 {
				continue
			}
			src := f32Tensor(t, ref, name)
			data := tensorData(t, q, tn)
			got := make([]byte, len(data))
			if err := quant.QuantizeRowRef(tn.Type, got, src); err != nil {
				t.Errorf("%s %s: %v", mf.file, name, err)
				continue
			}
			if bytes.Equal(got, data) {
				same[tn.Type]++
				continue
			}
			bb := tn.Type.BlockBytes()
			bad := 0
			first := -1
			for i := 0; i < len(got); i += bb {
				if !bytes.Equal(got[i:i+bb], data[i:i+bb]) {
					bad++
					if first < 0 {
						first = i / bb
					}
				}
			}
			t.Errorf("%s %s (%v): %d of %d blocks differ (first %d)", mf.file, name, tn.Type, bad, len(got)/bb, first)
		}
	}
	t.Logf("byte-identical tensors per type: %v", same)
}
