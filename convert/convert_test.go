package convert_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

const prompt = "Once upon a time"

// run tokenizes the prompt, feeds it one token at a time and then decodes
// greedily for steps tokens, returning every logits vector and the ids.
func run(t *testing.T, path string, steps int) ([][]float32, []int) {
	t.Helper()
	m, err := qsf.Load(path, qsf.Config{Threads: 1, ContextLength: 128})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := m.Tokenize(prompt, qsf.TokenizeOptions{})
	var all [][]float32
	var logits []float32
	for _, id := range ids {
		if logits, err = s.Forward(context.Background(), []int{id}); err != nil {
			t.Fatal(err)
		}
		all = append(all, logits)
	}
	for range steps {
		next := argmax(logits)
		ids = append(ids, next)
		if logits, err = s.Forward(context.Background(), []int{next}); err != nil {
			t.Fatal(err)
		}
		all = append(all, logits)
	}
	return all, ids
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestGGUFToQSFBitIdentical converts every stories260K GGUF, with and
// without LZ4, and requires bit-identical logits and the same greedy
// tokens from the QSF file.
func TestGGUFToQSFBitIdentical(t *testing.T) {
	dir := testfiles.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "models", "gguf", "stories260K*.gguf"))
	if len(files) == 0 {
		t.Skip("no stories260K GGUF files")
	}
	tmp := t.TempDir()
	for _, in := range files {
		base := strings.TrimSuffix(filepath.Base(in), ".gguf")
		wantLogits, wantIDs := run(t, in, 12)
		for _, comp := range []format.Compression{format.CompressNone, format.CompressLZ4} {
			t.Run(base+"/"+comp.String(), func(t *testing.T) {
				out := filepath.Join(tmp, base+"-"+comp.String()+".qsf")
				res, err := convert.Convert(in, out, convert.Options{Compression: comp})
				if err != nil {
					t.Fatal(err)
				}
				logits, ids := run(t, out, 12)
				for i := range wantLogits {
					if !sameBits(logits[i], wantLogits[i]) {
						t.Fatalf("position %d: logits differ from the GGUF's", i)
					}
				}
				if !slicesEqual(ids, wantIDs) {
					t.Fatalf("greedy ids %v, want %v", ids, wantIDs)
				}
				var stored, size int64
				for _, e := range res.Layers {
					stored += int64(e.StoredSize)
					size += int64(e.Size)
				}
				t.Logf("%d → %d bytes; layers %d → %d bytes (ratio %.3f)", res.InputBytes, res.OutputBytes, size, stored, float64(stored)/float64(size))
				os.Remove(out)
			})
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLlama2c converts the real stories260K llama2.c checkpoint and checks
// greedy text against the reference, and logits against the GGUF made
// from the same weights.
func TestLlama2c(t *testing.T) {
	bin := testfiles.Path(t, "models", "llama2c", "stories260K.bin")
	tok := testfiles.Path(t, "models", "llama2c", "tok512.bin")
	out := filepath.Join(t.TempDir(), "stories260K.qsf")
	if _, err := convert.FromLlama2c(bin, tok, out, convert.Options{Compression: format.CompressLZ4HC}); err != nil {
		t.Fatal(err)
	}
	m, err := qsf.Load(out, qsf.Config{Threads: 1, ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, want := m.Tokenize(prompt, qsf.TokenizeOptions{}), []int{1, 403, 407, 261, 378}; !slicesEqual(got, want) {
		t.Fatalf("tokens %v, want %v", got, want)
	}
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text strings.Builder
	if _, err := s.Generate(context.Background(), prompt, qsf.GenerateOptions{MaxTokens: 48}, func(tk qsf.Token) error {
		text.WriteString(tk.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const want = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it,"
	if got := prompt + text.String(); got != want {
		t.Fatalf("greedy text\n%q\nwant\n%q", got, want)
	}
	gguf := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	wantLogits, _ := run(t, gguf, 8)
	logits, _ := run(t, out, 8)
	for i := range wantLogits {
		if !sameBits(logits[i], wantLogits[i]) {
			t.Fatalf("position %d: logits differ from stories260K-f32.gguf", i)
		}
	}
}

// TestGGUFToQSFArchitectures converts the synthetic GGUF of every other
// architecture (qwen2, qwen3, gemma, phi3, gpt2, llama) and requires
// bit-identical logits.
func TestGGUFToQSFArchitectures(t *testing.T) {
	dir := testfiles.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "models", "synthetic", "synth-*-Q4_0.gguf"))
	if len(files) == 0 {
		t.Skip("no synthetic GGUF files")
	}
	tmp := t.TempDir()
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			wantLogits, wantIDs := run(t, in, 3)
			out := filepath.Join(tmp, filepath.Base(in)+".qsf")
			if _, err := convert.Convert(in, out, convert.Options{Compression: format.CompressLZ4}); err != nil {
				t.Fatal(err)
			}
			logits, ids := run(t, out, 3)
			for i := range wantLogits {
				if !sameBits(logits[i], wantLogits[i]) {
					t.Fatalf("position %d: logits differ from the GGUF's", i)
				}
			}
			if !slicesEqual(ids, wantIDs) {
				t.Fatalf("greedy ids %v, want %v", ids, wantIDs)
			}
		})
	}
}

// TestQSFInput writes a QSF file (LZ4, with layer importance scores and
// extra metadata) and converts it again, uncompressed and re-quantized:
// the copy keeps every tensor's bytes and the logits, and the scores and
// keys land where they were put.
func TestQSFInput(t *testing.T) {
	// The padded file's zeros make its layers compress.
	bin := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.qsf"), filepath.Join(dir, "b.qsf"), filepath.Join(dir, "c.qsf")
	md := &format.Metadata{}
	md.Set("qsf.test.key", format.StringValue("kept"))
	imp := []float32{0.5, 0.25, 0.125, 0.0625, 0.03125}
	if _, err := convert.Convert(bin, a, convert.Options{Compression: format.CompressLZ4, Metadata: md, LayerImportance: imp}); err != nil {
		t.Fatal(err)
	}
	res, err := convert.Convert(a, b, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Input != "qsf" {
		t.Errorf("input kind %q, want qsf", res.Input)
	}
	fa, err := format.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := format.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	for i, e := range fa.QSF().Layers {
		if e.Compression != format.CompressLZ4 {
			t.Errorf("layer %d is not compressed", i)
		}
		if e.Importance != imp[i] {
			t.Errorf("layer %d: importance %v, want %v", i, e.Importance, imp[i])
		}
		if fb.QSF().Layers[i].Importance != 0 {
			t.Errorf("layer %d of the copy: importance %v, want 0", i, fb.QSF().Layers[i].Importance)
		}
	}
	if v, _ := fa.Metadata.String("qsf.test.key"); v != "kept" {
		t.Errorf("qsf.test.key = %q", v)
	}
	if len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%d tensors, copy %d", len(fa.Tensors), len(fb.Tensors))
	}
	for i := range fa.Tensors {
		x, err := fa.TensorData(&fa.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		y, err := fb.TensorData(&fb.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		if fa.Tensors[i].Name != fb.Tensors[i].Name || string(x) != string(y) {
			t.Errorf("tensor %s differs in the copy", fa.Tensors[i].Name)
		}
	}
	la, _ := run(t, a, 4)
	lb, _ := run(t, b, 4)
	for i := range la {
		if !sameBits(la[i], lb[i]) {
			t.Fatalf("position %d: the copy's logits differ", i)
		}
	}
	if _, err := convert.Convert(a, c, convert.Options{Requantize: true, Type: quant.Q8_0}); err != nil {
		t.Fatal(err)
	}
	if _, err := convert.Convert(bin, c, convert.Options{LayerImportance: imp[:2]}); err == nil || !strings.Contains(err.Error(), "2 layer importance scores for 5 layers") {
		t.Errorf("wrong number of scores: %v", err)
	}
}
