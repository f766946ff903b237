package convert_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// hfTensor is a tensor of the synthetic HF model: its values (as the
// model computes with them), shape in HF order and stored dtype.
type hfTensor struct {
	name  string
	shape []int
	dtype string
	v     []float32
}

// encode returns the stored bytes, and rounds v to what they hold.
func (t *hfTensor) encode() []byte {
	var typ quant.Type
	switch t.dtype {
	case "F32":
		typ = quant.F32
	case "F16":
		typ = quant.F16
	default:
		typ = quant.BF16
	}
	b := make([]byte, len(t.v)*typ.BlockBytes())
	if err := quant.QuantizeRow(typ, b, t.v); err != nil {
		panic(err)
	}
	quant.DequantizeRow(typ, t.v, b)
	return b
}

// writeShards writes the tensors into n safetensors shards with an index.
func writeShards(t *testing.T, dir string, ts []*hfTensor, n int) {
	t.Helper()
	weightMap := map[string]string{}
	for s := range n {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, n)
		hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
		var data []byte
		for i, x := range ts {
			if i%n != s {
				continue
			}
			b := x.encode()
			hdr[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(data), len(data) + len(b)}}
			data = append(data, b...)
			weightMap[x.name] = name
		}
		js, _ := json.Marshal(hdr)
		for len(js)%8 != 0 {
			js = append(js, ' ')
		}
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
		out = append(append(out, js...), data...)
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644)
}

// byteLevelTokenizer writes a GPT-2 style byte-level BPE tokenizer.json:
// the 256 byte symbols, two merges and an <|endoftext|> special token.
func byteLevelTokenizer(t *testing.T, dir string) int {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		bs = append(bs, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		bs = append(bs, b)
	}
	sym := map[int]rune{}
	for _, b := range bs {
		sym[b] = rune(b)
	}
	extra := 0
	for b := range 256 {
		if _, ok := sym[b]; !ok {
			sym[b] = rune(256 + extra)
			extra++
		}
	}
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(sym[b])] = b
	}
	vocab["he"], vocab["ll"] = 256, 257
	js, _ := json.Marshal(map[string]any{
		"added_tokens":  []any{map[string]any{"id": 258, "content": "<|endoftext|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"h e", "l l"}},
	})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	return 259
}

func randTensor(rng *rand.Rand, name, dtype string, scale float32, shape ...int) *hfTensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * float32(rng.NormFloat64())
	}
	return &hfTensor{name: name, shape: shape, dtype: dtype, v: v}
}

func ones(rng *rand.Rand, name, dtype string, n int) *hfTensor {
	t := randTensor(rng, name, dtype, 0.1, n)
	for i := range t.v {
		t.v[i] += 1
	}
	return t
}

// matVec returns W·x for an HF [out, in] weight.
func matVec(w *hfTensor, x []float64) []float64 {
	out, in := w.shape[0], w.shape[1]
	y := make([]float64, out)
	for o := range out {
		var s float64
		for i := range in {
			s += float64(w.v[o*in+i]) * x[i]
		}
		y[o] = s
	}
	return y
}

// conv1D returns x·W + b for a GPT-2 [in, out] weight.
func conv1D(w, b *hfTensor, x []float64) []float64 {
	in, out := w.shape[0], w.shape[1]
	y := make([]float64, out)
	for o := range out {
		s := float64(b.v[o])
		for i := range in {
			s += x[i] * float64(w.v[i*out+o])
		}
		y[o] = s
	}
	return y
}

func rmsNorm(x []float64, w *hfTensor, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i := range x {
		y[i] = x[i] * r * float64(w.v[i])
	}
	return y
}

func layerNorm(x []float64, w, b *hfTensor, eps float64) []float64 {
	var mean, vr float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		vr += (v - mean) * (v - mean)
	}
	r := 1 / math.Sqrt(vr/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i := range x {
		y[i] = (x[i]-mean)*r*float64(w.v[i]) + float64(b.v[i])
	}
	return y
}

// attend runs causal multi-head attention of q over the cached keys and
// values (GQA: kv head = head / (heads/kvHeads)).
func attend(q []float64, keys, vals [][]float64, heads, kvHeads, hd int) []float64 {
	out := make([]float64, heads*hd)
	for h := range heads {
		kh := h / (heads / kvHeads)
		scores := make([]float64, len(keys))
		maxS := math.Inf(-1)
		for p := range keys {
			var s float64
			for d := range hd {
				s += q[h*hd+d] * keys[p][kh*hd+d]
			}
			scores[p] = s / math.Sqrt(float64(hd))
			maxS = math.Max(maxS, scores[p])
		}
		var sum float64
		for p := range scores {
			scores[p] = math.Exp(scores[p] - maxS)
			sum += scores[p]
		}
		for p := range scores {
			for d := range hd {
				out[h*hd+d] += scores[p] / sum * vals[p][kh*hd+d]
			}
		}
	}
	return out
}

// ropeHalf applies HF's rotate-half RoPE to each head of x.
func ropeHalf(x []float64, heads, hd, pos int, theta float64) {
	for h := range heads {
		for i := range hd / 2 {
			f := float64(pos) * math.Pow(theta, -float64(2*i)/float64(hd))
			c, s := math.Cos(f), math.Sin(f)
			a, b := x[h*hd+i], x[h*hd+i+hd/2]
			x[h*hd+i], x[h*hd+i+hd/2] = a*c-b*s, a*s+b*c
		}
	}
}

func logitsOf(x []float64, head *hfTensor) []float64 { return matVec(head, x) }

// compare runs the converted model on ids and checks every position's
// logits against want.
func compare(t *testing.T, path string, ids []int, want [][]float64, tol float64) {
	t.Helper()
	m, err := qsf.Load(path, qsf.Config{Threads: 1, ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, id := range ids {
		got, err := s.Forward(context.Background(), []int{id})
		if err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i := range got {
			worst = math.Max(worst, math.Abs(float64(got[i])-want[p][i]))
		}
		if worst > tol {
			t.Errorf("position %d: max |logit diff| %.3g > %.3g", p, worst, tol)
		} else {
			t.Logf("position %d: max |logit diff| %.3g", p, worst)
		}
	}
}

// TestHFDecoders converts synthetic sharded HF directories of the
// llama-family architectures and compares the logits with a direct F32
// computation from the safetensors in HF's conventions (rotate-half RoPE,
// Gemma's (1 + w) norms and scaled embedding, fused Phi-3 projections).
func TestHFDecoders(t *testing.T) {
	cases := []struct {
		modelType          string
		bias, qkNorm, tied bool
		gemma, fused       bool
	}{
		{modelType: "llama"},
		{modelType: "mistral", tied: true},
		{modelType: "qwen2", bias: true},
		{modelType: "qwen3", qkNorm: true, tied: true},
		{modelType: "gemma", gemma: true, tied: true},
		{modelType: "phi3", fused: true},
	}
	for _, c := range cases {
		t.Run(c.modelType, func(t *testing.T) {
			testHFDecoder(t, c.modelType, c.bias, c.qkNorm, c.tied, c.gemma, c.fused)
		})
	}
}

func testHFDecoder(t *testing.T, modelType string, bias, qkNorm, tied, gemma, fused bool) {
	const (
		embd, heads, kvHeads, ffn, layers, vocab = 64, 4, 2, 96, 2, 272
		hd                                       = embd / heads
		eps, theta                               = 1e-5, 10000.0
	)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	byteLevelTokenizer(t, dir)
	cfg := map[string]any{"model_type": modelType, "hidden_size": embd,
		"num_attention_heads": heads, "num_key_value_heads": kvHeads, "intermediate_size": ffn, "num_hidden_layers": layers,
		"vocab_size": vocab, "rms_norm_eps": eps, "rope_theta": theta, "max_position_embeddings": 256,
		"bos_token_id": 258, "eos_token_id": 258, "tie_word_embeddings": tied}
	if gemma {
		cfg["head_dim"] = hd
	}
	js, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644)
	ts := map[string]*hfTensor{}
	var list []*hfTensor
	add := func(x *hfTensor) { ts[x.name] = x; list = append(list, x) }
	norm := func(name, dtype string, n int) {
		if gemma {
			add(randTensor(rng, name, dtype, 0.1, n)) // Gemma stores w for a (1 + w) norm
		} else {
			add(ones(rng, name, dtype, n))
		}
	}
	add(randTensor(rng, "model.embed_tokens.weight", "F32", 0.5, vocab, embd))
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		norm(p+"input_layernorm.weight", "BF16", embd)
		if fused {
			add(randTensor(rng, p+"self_attn.qkv_proj.weight", "F32", 0.2, (heads+2*kvHeads)*hd, embd))
		} else {
			add(randTensor(rng, p+"self_attn.q_proj.weight", "F32", 0.2, heads*hd, embd))
			add(randTensor(rng, p+"self_attn.k_proj.weight", "F32", 0.2, kvHeads*hd, embd))
			add(randTensor(rng, p+"self_attn.v_proj.weight", "F32", 0.2, kvHeads*hd, embd))
		}
		if bias {
			add(randTensor(rng, p+"self_attn.q_proj.bias", "F32", 0.2, heads*hd))
			add(randTensor(rng, p+"self_attn.k_proj.bias", "F32", 0.2, kvHeads*hd))
			add(randTensor(rng, p+"self_attn.v_proj.bias", "F32", 0.2, kvHeads*hd))
		}
		if qkNorm {
			norm(p+"self_attn.q_norm.weight", "F32", hd)
			norm(p+"self_attn.k_norm.weight", "F32", hd)
		}
		add(randTensor(rng, p+"self_attn.o_proj.weight", "F32", 0.2, embd, heads*hd))
		norm(p+"post_attention_layernorm.weight", "BF16", embd)
		if fused {
			add(randTensor(rng, p+"mlp.gate_up_proj.weight", "F32", 0.2, 2*ffn, embd))
		} else {
			add(randTensor(rng, p+"mlp.gate_proj.weight", "F32", 0.2, ffn, embd))
			add(randTensor(rng, p+"mlp.up_proj.weight", "F32", 0.2, ffn, embd))
		}
		add(randTensor(rng, p+"mlp.down_proj.weight", "F32", 0.2, embd, ffn))
	}
	norm("model.norm.weight", "F16", embd)
	if !tied {
		add(randTensor(rng, "lm_head.weight", "F32", 0.3, vocab, embd))
	}
	writeShards(t, dir, list, 3)

	rms := func(x []float64, w *hfTensor) []float64 {
		if !gemma {
			return rmsNorm(x, w, eps)
		}
		w1 := &hfTensor{v: make([]float32, len(w.v))}
		for i, v := range w.v {
			w1.v[i] = v + 1
		}
		return rmsNorm(x, w1, eps)
	}
	addBias := func(y []float64, b *hfTensor) {
		for i := range y {
			y[i] += float64(b.v[i])
		}
	}
	ids := []int{258, 104, 101, 108, 256, 257, 111, 33}
	var want [][]float64
	keys := make([][][]float64, layers)
	vals := make([][][]float64, layers)
	for pos, id := range ids {
		x := make([]float64, embd)
		for i := range x {
			x[i] = float64(ts["model.embed_tokens.weight"].v[id*embd+i])
			if gemma {
				x[i] *= float64(float32(math.Sqrt(embd)))
			}
		}
		for l := range layers {
			p := fmt.Sprintf("model.layers.%d.", l)
			h := rms(x, ts[p+"input_layernorm.weight"])
			var q, k, v []float64
			if fused {
				qkv := matVec(ts[p+"self_attn.qkv_proj.weight"], h)
				q, k, v = qkv[:heads*hd], qkv[heads*hd:(heads+kvHeads)*hd], qkv[(heads+kvHeads)*hd:]
			} else {
				q, k, v = matVec(ts[p+"self_attn.q_proj.weight"], h), matVec(ts[p+"self_attn.k_proj.weight"], h), matVec(ts[p+"self_attn.v_proj.weight"], h)
			}
			if bias {
				addBias(q, ts[p+"self_attn.q_proj.bias"])
				addBias(k, ts[p+"self_attn.k_proj.bias"])
				addBias(v, ts[p+"self_attn.v_proj.bias"])
			}
			if qkNorm {
				for hh := range heads {
					copy(q[hh*hd:], rms(q[hh*hd:(hh+1)*hd], ts[p+"self_attn.q_norm.weight"]))
				}
				for hh := range kvHeads {
					copy(k[hh*hd:], rms(k[hh*hd:(hh+1)*hd], ts[p+"self_attn.k_norm.weight"]))
				}
			}
			ropeHalf(q, heads, hd, pos, theta)
			ropeHalf(k, kvHeads, hd, pos, theta)
			keys[l], vals[l] = append(keys[l], k), append(vals[l], v)
			o := matVec(ts[p+"self_attn.o_proj.weight"], attend(q, keys[l], vals[l], heads, kvHeads, hd))
			for i := range x {
				x[i] += o[i]
			}
			h = rms(x, ts[p+"post_attention_layernorm.weight"])
			var g, u []float64
			if fused {
				gu := matVec(ts[p+"mlp.gate_up_proj.weight"], h)
				g, u = gu[:ffn], gu[ffn:]
			} else {
				g, u = matVec(ts[p+"mlp.gate_proj.weight"], h), matVec(ts[p+"mlp.up_proj.weight"], h)
			}
			for i := range g {
				if gemma {
					g[i] = gelu16(g[i]) * u[i]
				} else {
					g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
				}
			}
			d := matVec(ts[p+"mlp.down_proj.weight"], g)
			for i := range x {
				x[i] += d[i]
			}
		}
		head := ts["lm_head.weight"]
		if head == nil {
			head = ts["model.embed_tokens.weight"]
		}
		want = append(want, logitsOf(rms(x, ts["model.norm.weight"]), head))
	}
	out := filepath.Join(dir, modelType+".qsf")
	if _, err := convert.Convert(dir, out, convert.Options{Compression: format.CompressLZ4}); err != nil {
		t.Fatal(err)
	}
	arch := modelType
	if arch == "mistral" {
		arch = "llama"
	}
	checkPresented(t, out, arch, vocab, tied)
	compare(t, out, ids, want, 2e-4)
}

func TestHFGPT2Sharded(t *testing.T) {
	const (
		embd, heads, layers, vocab, npos = 64, 4, 2, 259, 64
		hd                               = embd / heads
		eps                              = 1e-5
	)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 10))
	byteLevelTokenizer(t, dir)
	js, _ := json.Marshal(map[string]any{"model_type": "gpt2", "n_embd": embd, "n_head": heads, "n_layer": layers,
		"vocab_size": vocab, "n_positions": npos, "layer_norm_epsilon": eps, "bos_token_id": 258, "eos_token_id": 258})
	os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644)
	ts := map[string]*hfTensor{}
	var list []*hfTensor
	add := func(x *hfTensor) { ts[x.name] = x; list = append(list, x) }
	add(randTensor(rng, "transformer.wte.weight", "F32", 0.5, vocab, embd))
	add(randTensor(rng, "transformer.wpe.weight", "F32", 0.1, npos, embd))
	for l := range layers {
		p := fmt.Sprintf("transformer.h.%d.", l)
		add(ones(rng, p+"ln_1.weight", "F32", embd))
		add(randTensor(rng, p+"ln_1.bias", "F16", 0.1, embd))
		add(randTensor(rng, p+"attn.c_attn.weight", "F32", 0.2, embd, 3*embd))
		add(randTensor(rng, p+"attn.c_attn.bias", "F32", 0.1, 3*embd))
		add(randTensor(rng, p+"attn.c_proj.weight", "F32", 0.2, embd, embd))
		add(randTensor(rng, p+"attn.c_proj.bias", "F32", 0.1, embd))
		add(ones(rng, p+"ln_2.weight", "F32", embd))
		add(randTensor(rng, p+"ln_2.bias", "F16", 0.1, embd))
		add(randTensor(rng, p+"mlp.c_fc.weight", "F32", 0.2, embd, 4*embd))
		add(randTensor(rng, p+"mlp.c_fc.bias", "F32", 0.1, 4*embd))
		add(randTensor(rng, p+"mlp.c_proj.weight", "F32", 0.2, 4*embd, embd))
		add(randTensor(rng, p+"mlp.c_proj.bias", "F32", 0.1, embd))
		add(&hfTensor{name: p + "attn.bias", shape: []int{1}, dtype: "F32", v: []float32{1}}) // a buffer, skipped
	}
	add(ones(rng, "transformer.ln_f.weight", "F32", embd))
	add(randTensor(rng, "transformer.ln_f.bias", "F32", 0.1, embd))
	writeShards(t, dir, list, 2)

	gelu := gelu16
	ids := []int{258, 104, 101, 108, 256, 257, 111}
	var want [][]float64
	keys := make([][][]float64, layers)
	vals := make([][][]float64, layers)
	for pos, id := range ids {
		x := make([]float64, embd)
		for i := range x {
			x[i] = float64(ts["transformer.wte.weight"].v[id*embd+i]) + float64(ts["transformer.wpe.weight"].v[pos*embd+i])
		}
		for l := range layers {
			p := fmt.Sprintf("transformer.h.%d.", l)
			h := layerNorm(x, ts[p+"ln_1.weight"], ts[p+"ln_1.bias"], eps)
			qkv := conv1D(ts[p+"attn.c_attn.weight"], ts[p+"attn.c_attn.bias"], h)
			q, k, v := qkv[:embd], qkv[embd:2*embd], qkv[2*embd:]
			keys[l], vals[l] = append(keys[l], k), append(vals[l], v)
			o := conv1D(ts[p+"attn.c_proj.weight"], ts[p+"attn.c_proj.bias"], attend(q, keys[l], vals[l], heads, heads, hd))
			for i := range x {
				x[i] += o[i]
			}
			h = layerNorm(x, ts[p+"ln_2.weight"], ts[p+"ln_2.bias"], eps)
			f := conv1D(ts[p+"mlp.c_fc.weight"], ts[p+"mlp.c_fc.bias"], h)
			for i := range f {
				f[i] = gelu(f[i])
			}
			d := conv1D(ts[p+"mlp.c_proj.weight"], ts[p+"mlp.c_proj.bias"], f)
			for i := range x {
				x[i] += d[i]
			}
		}
		want = append(want, logitsOf(layerNorm(x, ts["transformer.ln_f.weight"], ts["transformer.ln_f.bias"], eps), ts["transformer.wte.weight"]))
	}
	out := filepath.Join(dir, "gpt2.qsf")
	if _, err := convert.Convert(dir, out, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	checkPresented(t, out, "gpt2", vocab, true)
	compare(t, out, ids, want, 2e-4)
}

// gelu16 is llama.cpp's GELU, which the engine matches: the tanh
// approximation evaluated at x rounded to fp16, its result rounded to fp16.
func gelu16(x float64) float64 {
	if math.Abs(x) >= 10 {
		return math.Max(x, 0)
	}
	f16 := func(x float64) float64 {
		var b [2]byte
		v := []float32{float32(x)}
		quant.QuantizeRow(quant.F16, b[:], v)
		quant.DequantizeRow(quant.F16, v, b[:])
		return float64(v[0])
	}
	x = f16(x)
	return f16(0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))))
}

// checkPresented checks the GGUF view of a converted HF model.
func checkPresented(t *testing.T, path, arch string, vocab int, tied bool) {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Architecture() != arch {
		t.Errorf("architecture %q, want %q", f.Architecture(), arch)
	}
	toks, _ := f.Metadata.Strings("tokenizer.ggml.tokens")
	if len(toks) != vocab || !slices.Contains(toks, "<|endoftext|>") {
		t.Errorf("%d tokens, want %d with <|endoftext|>", len(toks), vocab)
	}
	if f.QSF().Header.Tied() != tied {
		t.Errorf("tied = %v", f.QSF().Header.Tied())
	}
}
