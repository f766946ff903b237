package model_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/quant"
)

// TestMoEExactAVX2 runs every mixture-of-experts reference model with the
// avx2 kernels and requires llama.cpp's prompt logits bit for bit, as
// TestForwardExactGeneric does with the generic ones. (The experimental
// avx512 tier's Q8_0 kernel does not round as the AVX2 build does.)
func TestMoEExactAVX2(t *testing.T) {
	dir := testfiles.Dir(t)
	defer kernels.SetTier(kernels.DefaultTier().Name())
	if err := kernels.SetTier("avx2"); err != nil {
		t.Skipf("avx2 tier: %v", err)
	}
	n := 0
	for _, c := range exactCases(t, dir) {
		if !strings.Contains(c.ref, "moe") {
			continue
		}
		n++
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
			m, done := load(t, c.model)
			defer done()
			pool := kernels.NewPool(2)
			defer pool.Close()
			st, err := m.NewState(64, pool)
			if err != nil {
				t.Fatal(err)
			}
			for pos, id := range ref.IDs {
				if err := st.Forward(id, pos, true); err != nil {
					t.Fatal(err)
				}
				for i, v := range st.Logits {
					if math.Float32bits(v) != math.Float32bits(ref.Logits[pos][i]) {
						t.Fatalf("position %d logit %d: %g, llama.cpp %g", pos, i, v, ref.Logits[pos][i])
					}
				}
			}
		})
	}
	if n == 0 {
		t.Skip("no mixture-of-experts models in " + dir)
	}
}

// denseAsMoE writes the dense qwen3 model at path as a qwen3moe file of
// copies identical copies of its FFN, copies of which are used per token,
// with a random F32 router, and returns the new file's path.
func denseAsMoE(t *testing.T, path string, copies, used int) string {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var md format.Metadata
	for k, v := range f.Metadata.All() {
		if rest, ok := strings.CutPrefix(k, "qwen3."); ok {
			k = "qwen3moe." + rest
		}
		md.Set(k, v)
	}
	md.Set("general.architecture", format.StringValue("qwen3moe"))
	md.Set("qwen3moe.expert_count", format.Uint32Value(uint32(copies)))
	md.Set("qwen3moe.expert_used_count", format.Uint32Value(uint32(used)))
	ffn, _ := f.Metadata.Uint("qwen3.feed_forward_length")
	md.Set("qwen3moe.expert_feed_forward_length", format.Uint32Value(uint32(ffn)))

	var tensors []format.WriterTensor
	var data [][]byte
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		d, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		name, shape := ti.Name, ti.Shape
		for _, m := range []string{"ffn_gate", "ffn_up", "ffn_down"} {
			if strings.HasSuffix(name, "."+m+".weight") {
				name = strings.TrimSuffix(name, m+".weight") + m + "_exps.weight"
				shape = []uint64{shape[0], shape[1], uint64(copies)}
				d = bytes.Repeat(d, copies)
			}
		}
		tensors = append(tensors, format.WriterTensor{Name: name, Shape: shape, Type: ti.Type})
		data = append(data, d)
		if strings.HasSuffix(name, ".ffn_norm.weight") {
			embd := ti.Shape[0]
			router := make([]byte, 4*int(embd)*copies)
			for j := 0; j < len(router); j += 4 {
				binary.LittleEndian.PutUint32(router[j:], math.Float32bits(float32(rng.NormFloat64())))
			}
			tensors = append(tensors, format.WriterTensor{Name: strings.TrimSuffix(name, "ffn_norm.weight") + "ffn_gate_inp.weight",
				Shape: []uint64{embd, uint64(copies)}, Type: quant.F32})
			data = append(data, router)
		}
	}
	out := filepath.Join(t.TempDir(), "moe.gguf")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	err = format.WriteGGUF(w, &md, tensors, func(i int, w io.Writer) error { _, err := w.Write(data[i]); return err })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQwen3MoEEqualsDense checks the qwen3moe architecture, for which no
// llama.cpp reference exists here, against the dense qwen3 forward pass:
// a mixture whose experts are all the dense FFN, with renormalised weights
// (one expert used: weight p/p = 1), must give the dense logits bit for
// bit, token by token and in batches, whichever expert the router picks.
func TestQwen3MoEEqualsDense(t *testing.T) {
	dir := testfiles.Dir(t)
	for _, typ := range []string{"f32", "Q8_0", "Q4_0"} {
		for _, copies := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d experts", typ, copies), func(t *testing.T) {
				path := filepath.Join(dir, "models", "synthetic", "synth-qwen3-"+typ+".gguf")
				dense, done := load(t, path)
				defer done()
				moe, done2 := load(t, denseAsMoE(t, path, copies, 1))
				defer done2()
				if moe.Arch != "qwen3moe" || moe.MoE.Experts != copies || moe.MoE.Used != 1 || moe.MoE.ExpertFFN != dense.FFN {
					t.Fatalf("hyperparameters %+v", moe.MoE)
				}
				pool := kernels.NewPool(2)
				defer pool.Close()
				tokens := make([]int, 70)
				for i := range tokens {
					tokens[i] = (i*41 + 3) % dense.Vocab
				}
				a, err := dense.NewState(80, pool)
				if err != nil {
					t.Fatal(err)
				}
				b, err := moe.NewState(80, pool)
				if err != nil {
					t.Fatal(err)
				}
				c, err := moe.NewState(80, pool)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.ForwardBatch(tokens, 0, true); err != nil {
					t.Fatal(err)
				}
				for i, tok := range tokens {
					if err := a.Forward(tok, i, true); err != nil {
						t.Fatal(err)
					}
					if err := b.Forward(tok, i, true); err != nil {
						t.Fatal(err)
					}
					for j := range a.Logits {
						if math.Float32bits(a.Logits[j]) != math.Float32bits(b.Logits[j]) {
							t.Fatalf("position %d logit %d: moe %g, dense %g", i, j, b.Logits[j], a.Logits[j])
						}
					}
				}
				for j := range a.Logits {
					if math.Float32bits(a.Logits[j]) != math.Float32bits(c.Logits[j]) {
						t.Fatalf("batch logit %d: moe %g, dense %g", j, c.Logits[j], a.Logits[j])
					}
				}
			})
		}
	}
}

// TestMoEForwardAllocatesNothing checks that a warm decode step of a
// mixture of experts allocates nothing, as TestForwardAllocatesNothing
// does for dense models.
func TestMoEForwardAllocatesNothing(t *testing.T) {
	for _, file := range []string{"synth-mixtral-Q4_0.gguf", "synth-qwen2moe-Q8_0.gguf"} {
		m, done := load(t, testfiles.Path(t, "models", "moe", file))
		for _, threads := range []int{1, 2} {
			pool := kernels.NewPool(threads)
			st, err := m.NewState(128, pool)
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			step := func() {
				if err := st.Forward(1+pos%100, pos, true); err != nil {
					t.Fatal(err)
				}
				pos++
			}
			step()
			if n := testing.AllocsPerRun(50, step); n != 0 {
				t.Errorf("%s, %d threads: %v allocations per token", file, threads, n)
			}
			pool.Close()
		}
		done()
	}
}
