package quant_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

// ternaryFiles pairs each llama-quantize TQ output with its F32 source.
var ternaryFiles = []struct{ file, src string }{
	{"ternary/stories260K-pad256-TQ1_0-pure.gguf", "gguf/stories260K-pad256-f32.gguf"},
	{"ternary/stories260K-pad256-TQ2_0-pure.gguf", "gguf/stories260K-pad256-f32.gguf"},
	{"ternary/synth-bitnet-TQ1_0.gguf", "ternary/synth-bitnet-f32.gguf"},
	{"ternary/synth-bitnet-TQ2_0.gguf", "ternary/synth-bitnet-f32.gguf"},
}

func openShared(t *testing.T, rel string) *format.File {
	t.Helper()
	f, err := format.Open(testfiles.Path(t, filepath.Join("models", rel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestTernaryQuantizeByteExact re-quantizes the F32 sources of the TQ
// files and compares the bytes with llama-quantize's, and checks that
// dequantizing them gives the F32 source where it was ternary already.
func TestTernaryQuantizeByteExact(t *testing.T) {
	for _, tf := range ternaryFiles {
		q, src := openShared(t, tf.file), openShared(t, tf.src)
		n := 0
		for i := range q.Tensors {
			tn := &q.Tensors[i]
			if tn.Type != quant.TQ1_0 && tn.Type != quant.TQ2_0 {
				continue
			}
			n++
			x := f32Tensor(t, src, tn.Name)
			data := tensorData(t, q, tn)
			got := make([]byte, len(data))
			if err := quant.QuantizeRowRef(tn.Type, got, x); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("%s %s (%v): quantized bytes differ from llama-quantize's", tf.file, tn.Name, tn.Type)
			}
			back := make([]float32, len(x))
			if err := quant.DequantizeRow(tn.Type, back, data); err != nil {
				t.Fatal(err)
			}
			// Re-quantizing the dequantized values is the identity.
			again := make([]byte, len(data))
			if err := quant.QuantizeRowRef(tn.Type, again, back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Errorf("%s %s: quantize(dequantize(b)) != b", tf.file, tn.Name)
			}
			if filepath.Base(tf.src) == "synth-bitnet-f32.gguf" && tn.Name != "token_embd.weight" {
				for j := range x {
					if back[j] != x[j] {
						t.Errorf("%s %s: element %d dequantizes to %v, source %v", tf.file, tn.Name, j, back[j], x[j])
						break
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no ternary tensors", tf.file)
		}
	}
}

// TestTernaryDot checks TQ1_0 and TQ2_0 Dot against the float64 dot of the
// dequantized operands, and that both types give the same bits for the
// same values (they encode identical ternary digits and scales).
func TestTernaryDot(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, blocks := range []int{1, 2, 5} {
		n := 256 * blocks
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.IntN(3)-1) * float32(1+r.IntN(4))
		}
		a := randVec(r, n)
		act := encode(t, quant.Q8_K, a, false)
		ad := decode(t, quant.Q8_K, act, n)
		var dots []float32
		for _, ty := range []quant.Type{quant.TQ1_0, quant.TQ2_0} {
			w := encode(t, ty, x, true)
			xd := decode(t, ty, w, n)
			got, err := quant.DotRow(ty, n, w, act)
			if err != nil {
				t.Fatal(err)
			}
			var exact, absSum float64
			for i := range xd {
				p := float64(xd[i]) * float64(ad[i])
				exact += p
				absSum += math.Abs(p)
			}
			if d := math.Abs(float64(got) - exact); d > 2e-6*absSum {
				t.Errorf("%v n=%d: Dot = %v, dequantized dot = %v", ty, n, got, exact)
			}
			dots = append(dots, got)
		}
		if math.Float32bits(dots[0]) != math.Float32bits(dots[1]) {
			t.Errorf("n=%d: TQ1_0 dot %v != TQ2_0 dot %v", n, dots[0], dots[1])
		}
	}
}

// TestTernaryDecodeAllBytes checks the TQ1_0 trit decoding of every byte
// value that quantize can write against base-3 arithmetic.
func TestTernaryDecodeAllBytes(t *testing.T) {
	for v := 0; v < 243; v++ {
		x := make([]float32, 256)
		// Put the five trits of v (most significant first) at the
		// elements that share byte 0 of qs: 0, 32, 64, 96, 128.
		d := v
		for n := 4; n >= 0; n-- {
			x[32*n] = float32(d%3 - 1)
			d /= 3
		}
		x[1] = 1 // fix the block scale at 1
		w := encode(t, quant.TQ1_0, x, true)
		back := decode(t, quant.TQ1_0, w, 256)
		for n := 0; n < 5; n++ {
			if back[32*n] != x[32*n] {
				t.Fatalf("value %d trit %d: got %v, want %v", v, n, back[32*n], x[32*n])
			}
		}
	}
}
