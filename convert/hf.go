package convert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// hfArch is what differs between the Hugging Face architectures.
type hfArch struct {
	gguf      string      // general.architecture
	code      format.Arch // QSF header code
	permuteQK bool        // HF rotate-half q/k rows → llama.cpp interleaved order
	normPlus1 bool        // Gemma stores norm weights minus one
	gpt2      bool        // GPT-2 names, Conv1D (transposed) weights
	alwaysTie bool
}

var hfArchs = map[string]hfArch{
	"llama":   {gguf: "llama", code: format.ArchLlama, permuteQK: true},
	"mistral": {gguf: "llama", code: format.ArchMistral, permuteQK: true},
	"qwen2":   {gguf: "qwen2", code: format.ArchQwen2},
	"qwen3":   {gguf: "qwen3", code: format.ArchQwen3},
	"gemma":   {gguf: "gemma", code: format.ArchGemma, normPlus1: true, alwaysTie: true},
	"phi3":    {gguf: "phi3", code: format.ArchPhi3},
	"gpt2":    {gguf: "gpt2", code: format.ArchGPT2, gpt2: true, alwaysTie: true},
}

// hfConfig is the part of config.json the converter reads.
type hfConfig map[string]any

func (c hfConfig) num(keys ...string) (float64, bool) {
	for _, k := range keys {
		if v, ok := c[k].(float64); ok {
			return v, true
		}
	}
	return 0, false
}

func (c hfConfig) int(def int, keys ...string) int {
	if v, ok := c.num(keys...); ok && v >= 0 && v < 1<<31 && v == float64(int(v)) {
		return int(v)
	}
	return def
}

// id returns a token id that may be given as a number or a list.
func (c hfConfig) id(key string) (int, bool) {
	switch v := c[key].(type) {
	case float64:
		return int(v), v >= 0 && v < 1<<31
	case []any:
		if len(v) > 0 {
			if x, ok := v[0].(float64); ok && x >= 0 && x < 1<<31 {
				return int(x), true
			}
		}
	}
	return 0, false
}

// FromHF converts a Hugging Face model directory (config.json,
// model.safetensors or sharded model-*-of-*.safetensors, tokenizer.json)
// to the QSF file out. Architectures llama, mistral, qwen2, qwen3, gemma,
// phi3 and gpt2 with F32, F16 or BF16 tensors are supported. As llama.cpp's
// converter does, LLaMA/Mistral q and k rows are permuted from HF's
// rotate-half order to the interleaved order, Gemma norms get their +1 and
// GPT-2's Conv1D weights are transposed.
func FromHF(dir, out string, opts Options) (*Result, error) {
	start := time.Now()
	p, files, err := planHF(dir, opts)
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", dir, err)
	}
	return write(p, out, opts, start)
}

func planHF(dir string, opts Options) (*plan, []*os.File, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	var cfg hfConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, nil, fmt.Errorf("%w: config.json: %v", ErrInput, err)
	}
	mt, _ := cfg["model_type"].(string)
	arch, ok := hfArchs[mt]
	if !ok {
		return nil, nil, fmt.Errorf("%w: model_type %q", ErrUnsupported, mt)
	}
	tensors, files, inBytes, err := openShards(dir)
	if err != nil {
		return nil, files, err
	}
	byName := map[string]*stTensor{}
	for _, t := range tensors {
		byName[t.Name] = t
	}

	// Hyperparameters as llama.cpp's converter writes them.
	embd := cfg.int(0, "hidden_size", "n_embd")
	heads := cfg.int(0, "num_attention_heads", "n_head")
	layers := cfg.int(0, "num_hidden_layers", "n_layer")
	if embd == 0 || heads == 0 || layers == 0 || embd%heads != 0 && cfg.int(0, "head_dim") == 0 {
		return nil, files, fmt.Errorf("%w: config.json lacks hidden_size, num_attention_heads or num_hidden_layers", ErrInput)
	}
	kvHeads := cfg.int(heads, "num_key_value_heads")
	headDim := cfg.int(embd/heads, "head_dim")
	ffn := cfg.int(4*embd, "intermediate_size", "n_inner")
	a := arch.gguf + "."
	md := &format.Metadata{}
	md.Set(format.KeyArchitecture, format.StringValue(arch.gguf))
	if name, ok := cfg["_name_or_path"].(string); ok && name != "" {
		md.Set("general.name", format.StringValue(name))
	} else {
		md.Set("general.name", format.StringValue(filepath.Base(dir)))
	}
	u := func(key string, v int) { md.Set(a+key, format.Uint32Value(uint32(v))) }
	f := func(key string, v float64) { md.Set(a+key, format.Float32Value(float32(v))) }
	u("block_count", layers)
	u("embedding_length", embd)
	u("attention.head_count", heads)
	u("attention.head_count_kv", kvHeads)
	u("feed_forward_length", ffn)
	if n := cfg.int(0, "max_position_embeddings", "n_positions", "n_ctx"); n > 0 {
		u("context_length", n)
	}
	if headDim != embd/heads {
		u("attention.key_length", headDim)
		u("attention.value_length", headDim)
	}
	if arch.gpt2 {
		eps, ok := cfg.num("layer_norm_epsilon")
		if !ok {
			eps = 1e-5
		}
		f("attention.layer_norm_epsilon", eps)
	} else {
		eps, ok := cfg.num("rms_norm_eps")
		if !ok {
			eps = 1e-6
		}
		f("attention.layer_norm_rms_epsilon", eps)
		theta, ok := cfg.num("rope_theta")
		if !ok {
			theta = 10000
		}
		f("rope.freq_base", theta)
		ropeDim := headDim
		if prf, ok := cfg.num("partial_rotary_factor"); ok && prf > 0 && prf <= 1 {
			ropeDim = int(float64(headDim) * prf)
		}
		u("rope.dimension_count", ropeDim)
		if sw := cfg.int(0, "sliding_window"); sw > 0 && mt != "qwen2" && mt != "qwen3" {
			u("attention.sliding_window", sw)
		}
	}
	tok, err := hfTokenizer(dir, cfg)
	if err != nil {
		return nil, files, err
	}
	for key, v := range tok.All() {
		md.Set(key, v)
	}
	qc, err := format.QSFConfigFromGGUF(md)
	if err != nil {
		return nil, files, err
	}
	qc.Header.Arch = arch.code

	p := &plan{kind: "hf", inBytes: inBytes, cfg: qc, layers: make([][]*source, layers)}
	used := map[string]bool{}
	add := func(s *source, place format.QSFPlacement, layer int) {
		switch place {
		case format.PlaceEmbedding:
			p.emb = append(p.emb, s)
		case format.PlaceFinal:
			p.fin = append(p.fin, s)
		default:
			p.layers[layer] = append(p.layers[layer], s)
		}
	}
	for _, t := range tensors {
		role, layer, transpose, skip := hfRole(t.Name, arch)
		if skip {
			used[t.Name] = true
			continue
		}
		if role == 0 {
			return nil, files, fmt.Errorf("%w: tensor %q of %s has no QSF role", ErrUnsupported, t.Name, mt)
		}
		if t.Type != quant.F32 && t.Type != quant.F16 && t.Type != quant.BF16 {
			return nil, files, fmt.Errorf("%w: tensor %q has dtype %s (want F32, F16 or BF16)", ErrUnsupported, t.Name, t.DType)
		}
		if role.InLayer() && layer >= layers {
			return nil, files, fmt.Errorf("%w: tensor %q beyond %d layers", ErrInput, t.Name, layers)
		}
		if role == format.RoleOutput && arch.alwaysTie {
			continue // a copy of the embedding
		}
		s, err := hfSource(t, role, transpose, arch, heads, kvHeads, opts)
		if err != nil {
			return nil, files, err
		}
		used[t.Name] = true
		switch {
		case role.InLayer():
			add(s, format.PlaceLayer, layer)
		case role.InFinal():
			add(s, format.PlaceFinal, 0)
		default:
			add(s, format.PlaceEmbedding, 0)
		}
	}
	// Tie the head when config.json says so or lm_head is absent.
	if tie, ok := cfg["tie_word_embeddings"].(bool); ok && tie {
		p.fin = slices.DeleteFunc(p.fin, func(s *source) bool { return s.out.Role == format.RoleOutput })
	}
	if len(p.emb) == 0 {
		return nil, files, fmt.Errorf("%w: no token embedding", ErrInput)
	}
	qc.Header.Vocab = uint32(p.emb[0].out.Rows())
	qc.Arch.Features = features(p, qc.Arch.Features)
	return p, files, nil
}

// openShards opens model.safetensors or the shards named by
// model.safetensors.index.json (or every *.safetensors file).
func openShards(dir string) ([]*stTensor, []*os.File, int64, error) {
	var names []string
	if raw, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json")); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, nil, 0, fmt.Errorf("%w: model.safetensors.index.json: %v", ErrInput, err)
		}
		for _, file := range idx.WeightMap {
			if file != filepath.Base(file) {
				return nil, nil, 0, fmt.Errorf("%w: shard name %q", ErrInput, file)
			}
			if !slices.Contains(names, file) {
				names = append(names, file)
			}
		}
		slices.Sort(names)
	} else {
		m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
		for _, p := range m {
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) == 0 {
		return nil, nil, 0, fmt.Errorf("%w: no safetensors files in %s", ErrInput, dir)
	}
	var all []*stTensor
	var files []*os.File
	var total int64
	seen := map[string]bool{}
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, files, 0, err
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil {
			return nil, files, 0, err
		}
		total += st.Size()
		ts, err := readSafetensors(f, st.Size())
		if err != nil {
			return nil, files, 0, fmt.Errorf("%s: %w", name, err)
		}
		for _, t := range ts {
			if seen[t.Name] {
				return nil, files, 0, fmt.Errorf("%w: tensor %q in two shards", ErrInput, t.Name)
			}
			seen[t.Name] = true
		}
		all = append(all, ts...)
	}
	return all, files, total, nil
}

var (
	hfLayerRe   = regexp.MustCompile(`^(?:model\.)?layers\.(\d+)\.(.+)$`)
	gpt2LayerRe = regexp.MustCompile(`^(?:transformer\.)?h\.(\d+)\.(.+)$`)
)

var hfLayerRoles = map[string]format.Role{
	"input_layernorm.weight":          format.RoleAttnNorm,
	"self_attn.q_proj.weight":         format.RoleQ,
	"self_attn.k_proj.weight":         format.RoleK,
	"self_attn.v_proj.weight":         format.RoleV,
	"self_attn.q_proj.bias":           format.RoleQB,
	"self_attn.k_proj.bias":           format.RoleKB,
	"self_attn.v_proj.bias":           format.RoleVB,
	"self_attn.qkv_proj.weight":       format.RoleQKV,
	"self_attn.o_proj.weight":         format.RoleO,
	"self_attn.q_norm.weight":         format.RoleQNorm,
	"self_attn.k_norm.weight":         format.RoleKNorm,
	"post_attention_layernorm.weight": format.RoleFFNNorm,
	"mlp.gate_proj.weight":            format.RoleGate,
	"mlp.up_proj.weight":              format.RoleUp,
	"mlp.gate_up_proj.weight":         format.RoleUp, // fused; the engine splits it
	"mlp.down_proj.weight":            format.RoleDown,
}

var gpt2LayerRoles = map[string]format.Role{
	"ln_1.weight": format.RoleAttnNorm, "ln_1.bias": format.RoleAttnNormB,
	"attn.c_attn.weight": format.RoleQKV, "attn.c_attn.bias": format.RoleQKVB,
	"attn.c_proj.weight": format.RoleO, "attn.c_proj.bias": format.RoleOB,
	"ln_2.weight": format.RoleFFNNorm, "ln_2.bias": format.RoleFFNNormB,
	"mlp.c_fc.weight": format.RoleUp, "mlp.c_fc.bias": format.RoleUpB,
	"mlp.c_proj.weight": format.RoleDown, "mlp.c_proj.bias": format.RoleDownB,
}

// hfRole maps a HF tensor name to its role and layer. transpose marks
// Conv1D weights; skip marks buffers that are not weights.
func hfRole(name string, arch hfArch) (role format.Role, layer int, transpose, skip bool) {
	if arch.gpt2 {
		if m := gpt2LayerRe.FindStringSubmatch(name); m != nil {
			layer, _ = strconv.Atoi(m[1])
			if m[2] == "attn.bias" || m[2] == "attn.masked_bias" {
				return 0, 0, false, true
			}
			role = gpt2LayerRoles[m[2]]
			return role, layer, role == format.RoleQKV || role == format.RoleO || role == format.RoleUp || role == format.RoleDown, false
		}
		switch name {
		case "wte.weight", "transformer.wte.weight":
			return format.RoleTokenEmbd, 0, false, false
		case "wpe.weight", "transformer.wpe.weight":
			return format.RolePosEmbd, 0, false, false
		case "ln_f.weight", "transformer.ln_f.weight":
			return format.RoleOutputNorm, 0, false, false
		case "ln_f.bias", "transformer.ln_f.bias":
			return format.RoleOutputNormB, 0, false, false
		case "lm_head.weight":
			return format.RoleOutput, 0, false, false
		}
		return 0, 0, false, false
	}
	if m := hfLayerRe.FindStringSubmatch(name); m != nil {
		layer, _ = strconv.Atoi(m[1])
		if m[2] == "self_attn.rotary_emb.inv_freq" {
			return 0, 0, false, true
		}
		return hfLayerRoles[m[2]], layer, false, false
	}
	switch name {
	case "model.embed_tokens.weight":
		return format.RoleTokenEmbd, 0, false, false
	case "model.norm.weight":
		return format.RoleOutputNorm, 0, false, false
	case "lm_head.weight":
		return format.RoleOutput, 0, false, false
	}
	return 0, 0, false, false
}

// hfSource describes how to produce a QSF tensor from a HF one.
func hfSource(t *stTensor, role format.Role, transpose bool, arch hfArch, heads, kvHeads int, opts Options) (*source, error) {
	var shape []uint64
	switch len(t.Shape) {
	case 1:
		shape = []uint64{t.Shape[0]}
	case 2:
		shape = []uint64{t.Shape[1], t.Shape[0]} // [out, in] → ggml [cols=in, rows=out]
		if transpose {
			shape = []uint64{t.Shape[0], t.Shape[1]} // Conv1D is [in, out]
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q has shape %v", ErrUnsupported, t.Name, t.Shape)
	}
	s := &source{
		out:     format.QSFTensor{Role: role, Shape: shape, Type: outputType("", shape, t.Type, opts, t.Type)},
		srcType: t.Type,
	}
	cols := int64(shape[0])
	width := int64(t.Type.BlockBytes())
	s.rows = func(dst []byte, lo, hi int) ([]byte, error) {
		return t.readInto(grow(dst, int64(hi-lo)*cols*width), int64(lo)*cols*width)
	}
	switch {
	case transpose:
		in, out := int(t.Shape[0]), int(t.Shape[1])
		s.f32 = func() ([]float32, error) {
			v, err := t.f32()
			if err != nil {
				return nil, err
			}
			tr := make([]float32, len(v))
			for i := range in {
				for o := range out {
					tr[o*in+i] = v[i*out+o]
				}
			}
			return tr, nil
		}
	case arch.normPlus1 && len(shape) == 1 && (role == format.RoleAttnNorm || role == format.RoleFFNNorm || role == format.RoleOutputNorm || role == format.RoleQNorm || role == format.RoleKNorm):
		s.f32 = func() ([]float32, error) {
			v, err := t.f32()
			for i := range v {
				v[i]++
			}
			return v, err
		}
		s.out.Type = quant.F32
	case arch.permuteQK && (role == format.RoleQ || role == format.RoleK):
		n := heads
		if role == format.RoleK {
			n = kvHeads
		}
		rows := int(shape[1])
		if rows%(2*n) != 0 {
			return nil, fmt.Errorf("%w: %s: %d rows do not split into %d heads", ErrInput, t.Name, rows, n)
		}
		half := rows / n / 2
		// Output row (h, j, s) comes from source row (h, s, j), as
		// llama.cpp's permute (reshape to (n, 2, half), swap axes 1, 2).
		s.perm = func(i int) int {
			h, r := i/(2*half), i%(2*half)
			j, sIdx := r/2, r%2
			return h*2*half + sIdx*half + j
		}
	}
	if len(shape) == 1 && s.f32 == nil && s.out.Type != t.Type {
		s.f32 = t.f32 // widen vectors to F32
	}
	return s, nil
}
