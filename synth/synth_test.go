package synth_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/synth"
	"github.com/qsf-llm/qsf/tokenizer"
)

func writeFile(t *testing.T, shape string, ft synth.FileType, seed uint64, threads int) (string, *synth.Plan) {
	t.Helper()
	s, err := synth.LookupShape(shape)
	if err != nil {
		t.Fatal(err)
	}
	p, err := synth.NewPlan(s, ft, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), shape+"-"+ft.String()+".gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f, synth.WriteOptions{Threads: threads}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, p
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestTinyLoadsAndGenerates writes the tiny shape in every file type, reads
// it back, and generates with it.
func TestTinyLoadsAndGenerates(t *testing.T) {
	for _, name := range synth.FileTypeNames() {
		t.Run(name, func(t *testing.T) {
			ft, err := synth.ParseFileType(name)
			if err != nil {
				t.Fatal(err)
			}
			path, p := writeFile(t, "tiny", ft, 1, 2)

			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if want, err := p.FileSize(); err != nil || st.Size() != want {
				t.Errorf("file is %d bytes, FileSize says %d (%v)", st.Size(), want, err)
			}
			f, err := format.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Tensors) != len(p.Tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(p.Tensors))
			}
			for i, ti := range f.Tensors {
				if ti.Name != p.Tensors[i].Name || ti.Type != p.Tensors[i].Type {
					t.Errorf("tensor %d is %s %v, want %s %v", i, ti.Name, ti.Type, p.Tensors[i].Name, p.Tensors[i].Type)
				}
			}
			if got, _ := f.Metadata.Uint("general.file_type"); got != uint64(ft) {
				t.Errorf("general.file_type = %d, want %d", got, ft)
			}

			m, err := qsf.Load(path, qsf.Config{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := s.Generate(context.Background(), "the quick brown fox", qsf.GenerateOptions{MaxTokens: 8}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tokens) == 0 || len(res.PromptTokens) < 2 {
				t.Errorf("prompt %v, generated %v: want a prompt and some tokens", res.PromptTokens, res.Tokens)
			}
			for _, id := range res.Tokens {
				if id < 0 || id >= 1024 {
					t.Errorf("token id %d out of the vocabulary", id)
				}
			}
		})
	}
}

// TestDeterministic checks that a file depends on the seed alone, not on
// the number of threads.
func TestDeterministic(t *testing.T) {
	a, _ := writeFile(t, "tiny", synth.Q4_KM, 7, 1)
	b, _ := writeFile(t, "tiny", synth.Q4_KM, 7, 3)
	c, _ := writeFile(t, "tiny", synth.Q4_KM, 8, 2)
	if sum(t, a) != sum(t, b) {
		t.Error("same seed, different threads: files differ")
	}
	if sum(t, a) == sum(t, c) {
		t.Error("different seeds: files are identical")
	}
}

// TestQuantizedMatchesF32 checks that the quantized file holds the f32
// file's weights, rounded.
func TestQuantizedMatchesF32(t *testing.T) {
	pf, _ := writeFile(t, "tiny", synth.F32, 3, 2)
	pq, _ := writeFile(t, "tiny", synth.Q8_0, 3, 2)
	ff, err := format.Open(pf)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	fq, err := format.Open(pq)
	if err != nil {
		t.Fatal(err)
	}
	defer fq.Close()
	const name = "blk.1.ffn_down.weight"
	wf, wq := tensorData(t, ff, name), tensorData(t, fq, name)
	n := len(wf) / 4
	x, y := make([]float32, n), make([]float32, n)
	f32, _ := quant.Lookup(quant.F32)
	q8, _ := quant.Lookup(quant.Q8_0)
	f32.Dequantize(x, wf)
	q8.Dequantize(y, wq)
	var ss, se float64
	for i := range x {
		d := float64(x[i] - y[i])
		ss += float64(x[i]) * float64(x[i])
		se += d * d
	}
	std := ss / float64(n)
	if want := 1.0 / 512; std < want*0.9 || std > want*1.1 {
		t.Errorf("ffn_down variance %g, want about %g", std, want)
	}
	if se/ss > 1e-4 {
		t.Errorf("q8_0 relative squared error %g, want < 1e-4", se/ss)
	}
}

func tensorData(t *testing.T, f *format.File, name string) []byte {
	t.Helper()
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			b, err := f.TensorData(&f.Tensors[i])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no tensor %s", name)
	return nil
}

func TestVocabLoads(t *testing.T) {
	for _, n := range []int{355, 1024, 32000} {
		v, err := synth.SPMVocab(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Tokens) != n || len(v.Scores) != n || len(v.Types) != n {
			t.Fatalf("SPMVocab(%d): %d tokens", n, len(v.Tokens))
		}
		seen := map[string]bool{}
		for _, tok := range v.Tokens {
			if seen[tok] {
				t.Fatalf("SPMVocab(%d): duplicate %q", n, tok)
			}
			seen[tok] = true
		}
		md := &format.Metadata{}
		md.Set("tokenizer.ggml.model", format.StringValue("llama"))
		md.Set("tokenizer.ggml.tokens", format.StringsValue(v.Tokens))
		md.Set("tokenizer.ggml.scores", format.Float32sValue(v.Scores))
		md.Set("tokenizer.ggml.token_type", format.Int32sValue(v.Types))
		md.Set("tokenizer.ggml.bos_token_id", format.Uint32Value(1))
		md.Set("tokenizer.ggml.eos_token_id", format.Uint32Value(2))
		md.Set("tokenizer.ggml.unknown_token_id", format.Uint32Value(0))
		tk, err := tokenizer.FromGGUF(md)
		if err != nil {
			t.Fatalf("SPMVocab(%d): %v", n, err)
		}
		ids := tk.Encode("Hello world, the people of the state", tokenizer.EncodeOptions{})
		if got := tk.Decode(ids); got != "Hello world, the people of the state" {
			t.Errorf("SPMVocab(%d): round trip gives %q (ids %v)", n, got, ids)
		}
	}
	if _, err := synth.SPMVocab(100); err == nil {
		t.Error("SPMVocab(100) succeeded")
	}
}

func TestLookupErrors(t *testing.T) {
	if _, err := synth.LookupShape("nope"); !errors.Is(err, synth.ErrUnknownShape) {
		t.Errorf("LookupShape(nope) = %v", err)
	}
	if _, err := synth.ParseFileType("q3_k"); !errors.Is(err, synth.ErrUnknownFileType) {
		t.Errorf("ParseFileType(q3_k) = %v", err)
	}
	bad := synth.Shape{Name: "bad", Arch: "llama", Layers: 1, Embd: 64, Heads: 3, KVHeads: 2, HeadDim: 16,
		FFN: 64, Vocab: 400, Context: 16, RopeBase: 1e4, NormEps: 1e-5}
	if _, err := synth.NewPlan(bad, synth.F32, 0); err == nil {
		t.Error("NewPlan accepted 3 heads over 2 KV heads")
	}
}
