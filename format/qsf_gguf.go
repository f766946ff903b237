package format

import (
	"fmt"
	"math"
)

// GGUF metadata keys that the QSF header and ARCH section represent. The
// architecture-specific ones are prefixed with the architecture name.
const (
	keyBOS = "tokenizer.ggml.bos_token_id"
	keyEOS = "tokenizer.ggml.eos_token_id"
	keyPAD = "tokenizer.ggml.padding_token_id"
)

// qsfArchInfo is the default description of an architecture QSF knows.
type qsfArchInfo struct {
	code  Arch
	act   Activation
	norm  Norm
	pos   Position
	rope  RopeStyle
	feats uint16
}

var qsfArchs = map[string]qsfArchInfo{
	"gpt2":  {ArchGPT2, ActGELU, NormLayer, PosLearned, RopeNone, 0},
	"llama": {ArchLlama, ActSiLU, NormRMS, PosRoPE, RopeNormal, FeatGatedFFN},
	"phi3":  {ArchPhi3, ActSiLU, NormRMS, PosRoPE, RopeNeoX, FeatGatedFFN},
	"qwen2": {ArchQwen2, ActSiLU, NormRMS, PosRoPE, RopeNeoX, FeatGatedFFN},
	"qwen3": {ArchQwen3, ActSiLU, NormRMS, PosRoPE, RopeNeoX, FeatGatedFFN},
	"gemma": {ArchGemma, ActGeGLU, NormRMS, PosRoPE, RopeNeoX, FeatGatedFFN | FeatEmbedScale},
}

// archName returns the GGUF architecture name of the file.
func (q *QSF) archName() string {
	if n := q.Header.Arch.GGUFName(); n != "" {
		return n
	}
	s, _ := q.Metadata.String(KeyArchitecture)
	return s
}

// ggufMetadata builds the GGUF metadata the file presents (docs/FORMAT.md,
// "Presented as GGUF").
func (q *QSF) ggufMetadata() (Metadata, error) {
	h, a := &q.Header, &q.Arch
	var md Metadata
	arch := q.archName()
	if h.Arch != ArchCustom {
		md.Set(KeyArchitecture, StringValue(arch))
	}
	u32 := func(key string, v uint32) {
		if v != 0 {
			md.Set(arch+"."+key, Uint32Value(v))
		}
	}
	f32 := func(key string, v float32) {
		if v != 0 {
			md.Set(arch+"."+key, Float32Value(v))
		}
	}
	md.Set(arch+".block_count", Uint32Value(h.Layers))
	u32("embedding_length", h.HiddenDim)
	u32("attention.head_count", h.Heads)
	u32("attention.head_count_kv", h.KVHeads)
	u32("context_length", h.MaxSeqLen)
	u32("feed_forward_length", h.FFNDim)
	u32("attention.key_length", a.KeyDim)
	u32("attention.value_length", a.ValueDim)
	if h.Position == PosRoPE {
		u32("rope.dimension_count", a.RopeDim)
		f32("rope.freq_base", h.RopeTheta)
	}
	if h.Norm == NormLayer {
		f32("attention.layer_norm_epsilon", a.NormEps)
	} else {
		f32("attention.layer_norm_rms_epsilon", a.NormEps)
	}
	u32("attention.sliding_window", a.SlidingWindow)
	if a.RopeScaling != 0 {
		md.Set(arch+".rope.scaling.type", StringValue([]string{"none", "linear", "yarn"}[a.RopeScaling]))
		f32("rope.scaling.factor", a.RopeScale)
		u32("rope.scaling.original_context_length", a.RopeOrigCtx)
	}
	f32("attn_logit_softcapping", a.AttnSoftcap)
	f32("final_logit_softcapping", a.FinalSoftcap)
	for key, id := range map[string]int32{keyBOS: h.BOS, keyEOS: h.EOS, keyPAD: h.PAD} {
		if id >= 0 {
			md.Set(key, Uint32Value(uint32(id)))
		}
	}
	for _, src := range []*Metadata{&q.Tokenizer, &q.Metadata} {
		for _, kv := range src.kvs {
			if !md.add(kv.Key, kv.Value) {
				return Metadata{}, fmt.Errorf("key %q is represented by the header and also stored", kv.Key)
			}
		}
	}
	return md, nil
}

// tensorLoc says where the data of a presented tensor lies.
type tensorLoc struct {
	layer int    // -1 for the embedding and final sections
	off   uint64 // absolute file offset (sections) or offset in the layer payload
	size  uint64
}

// view builds the GGUF view of the file: metadata with GGUF keys and
// tensors with GGUF names. A tensor's Offset is the file offset of its
// data when it is stored uncompressed, and the offset of its layer's
// stored bytes otherwise; use File.TensorData to read it.
func (q *QSF) view() (*GGUF, []tensorLoc, error) {
	md, err := q.ggufMetadata()
	if err != nil {
		return nil, nil, qsfErr(ErrCorrupt, "metadata", -1, q.Header.MetadataOffset, "%v", err)
	}
	g := &GGUF{Metadata: md, Alignment: QSFAlignment, byName: map[string]int{}}
	var locs []tensorLoc
	add := func(t QSFTensor, layer int, fileOff uint64, loc tensorLoc) error {
		if _, dup := g.byName[t.Name]; dup {
			return qsfErr(ErrCorrupt, placeName(PlaceEmbedding, 0), -1, fileOff, "duplicate tensor %q", t.Name)
		}
		g.byName[t.Name] = len(g.Tensors)
		g.Tensors = append(g.Tensors, TensorInfo{Name: t.Name, Shape: t.Shape, Type: t.Type, Offset: fileOff, Size: t.Size})
		locs = append(locs, loc)
		return nil
	}
	for _, t := range q.Embedding {
		if err := add(t, -1, q.embPayload+t.DataOffset, tensorLoc{-1, q.embPayload + t.DataOffset, t.Size}); err != nil {
			return nil, nil, err
		}
	}
	for i, ts := range q.LayerTensors {
		e := q.Layers[i]
		for _, t := range ts {
			off := e.Offset
			if e.Compression == CompressNone {
				off += t.DataOffset
			}
			if err := add(t, i, off, tensorLoc{i, t.DataOffset, t.Size}); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, t := range q.Final {
		if err := add(t, -1, q.finPayload+t.DataOffset, tensorLoc{-1, q.finPayload + t.DataOffset, t.Size}); err != nil {
			return nil, nil, err
		}
	}
	return g, locs, nil
}

// tensorData returns the data of the presented tensor loc.
func (q *QSF) tensorData(name string, loc tensorLoc) ([]byte, error) {
	if err := q.checkOpen(); err != nil {
		return nil, err
	}
	if loc.layer < 0 {
		if q.data != nil {
			return q.data[loc.off : loc.off+loc.size : loc.off+loc.size], nil
		}
		b := make([]byte, loc.size)
		if _, err := q.r.ReadAt(b, int64(loc.off)); err != nil {
			return nil, fmt.Errorf("qsf: tensor %q: %w", name, err)
		}
		return b, nil
	}
	p, err := q.layerPayload(loc.layer)
	if err != nil {
		return nil, err
	}
	return p[loc.off : loc.off+loc.size : loc.off+loc.size], nil
}

// QSFConfig is the typed description of a model that QSFConfigFromGGUF
// derives from GGUF metadata.
type QSFConfig struct {
	Header    QSFHeader
	Arch      ArchConfig
	Tokenizer *Metadata // tokenizer.* keys except BOS/EOS/PAD
	Metadata  *Metadata // every key the header and ARCH do not represent
}

// QSFConfigFromGGUF splits GGUF metadata into the QSF header fields, the
// ARCH section, the tokenizer keys and the remaining metadata, so that the
// QSF file presents the same hyperparameters again. A key whose value the
// typed fields cannot hold exactly (an array, say) stays in the metadata.
// Header.Vocab is the number of tokens; callers should set it to the rows
// of the token embedding.
func QSFConfigFromGGUF(md *Metadata) (*QSFConfig, error) {
	archName, ok := md.String(KeyArchitecture)
	if !ok || archName == "" {
		return nil, fmt.Errorf("qsf: GGUF metadata without %s", KeyArchitecture)
	}
	info, known := qsfArchs[archName]
	c := &QSFConfig{Tokenizer: &Metadata{}, Metadata: &Metadata{}}
	h, a := &c.Header, &c.Arch
	h.BOS, h.EOS, h.PAD = -1, -1, -1
	consumed := map[string]bool{}
	if known {
		consumed[KeyArchitecture] = true
	} else {
		_, hasBase := md.Get(archName + ".rope.freq_base")
		_, hasDim := md.Get(archName + ".rope.dimension_count")
		info = qsfArchInfo{code: ArchCustom, pos: PosNone}
		if hasBase || hasDim {
			info.pos, info.rope = PosRoPE, RopeNormal
		}
		if _, ok := md.Get(archName + ".attention.layer_norm_epsilon"); ok {
			info.norm = NormLayer
		}
	}
	h.Arch, h.Activation, h.Norm, h.Position = info.code, info.act, info.norm, info.pos
	a.RopeStyle, a.Features = info.rope, info.feats

	u32 := func(key string, dst *uint32) bool {
		v, ok := md.Get(key)
		if !ok {
			return false
		}
		if !v.Type().integer() {
			return false
		}
		x, ok := v.Uint()
		if !ok || x == 0 || x > math.MaxUint32 {
			return false
		}
		*dst, consumed[key] = uint32(x), true
		return true
	}
	f32 := func(key string, dst *float32) bool {
		v, ok := md.Get(key)
		if !ok || (v.Type() != TypeFloat32 && v.Type() != TypeFloat64) {
			return false
		}
		x, _ := v.Float()
		if float64(float32(x)) != x || x == 0 {
			return false
		}
		*dst, consumed[key] = float32(x), true
		return true
	}
	p := archName + "."
	var layers uint32
	u32(p+"block_count", &layers)
	u32(p+"embedding_length", &h.HiddenDim)
	u32(p+"attention.head_count", &h.Heads)
	u32(p+"attention.head_count_kv", &h.KVHeads)
	u32(p+"context_length", &h.MaxSeqLen)
	u32(p+"feed_forward_length", &h.FFNDim)
	u32(p+"attention.key_length", &a.KeyDim)
	u32(p+"attention.value_length", &a.ValueDim)
	h.HeadDim = a.KeyDim
	if h.HeadDim == 0 && h.Heads != 0 {
		h.HeadDim = h.HiddenDim / h.Heads // the engine's default, not stored as a key
	}
	if h.Position == PosRoPE {
		u32(p+"rope.dimension_count", &a.RopeDim)
		f32(p+"rope.freq_base", &h.RopeTheta)
	}
	if h.Norm == NormLayer {
		f32(p+"attention.layer_norm_epsilon", &a.NormEps)
	} else {
		f32(p+"attention.layer_norm_rms_epsilon", &a.NormEps)
	}
	// Where a key is absent, write down the value the engine assumes, so
	// that the typed fields describe the model completely.
	absent := func(key string) bool { _, ok := md.Get(key); return !ok }
	if a.KeyDim == 0 && absent(p+"attention.key_length") {
		a.KeyDim = h.HeadDim
	}
	if a.ValueDim == 0 && absent(p+"attention.value_length") && h.Heads != 0 {
		a.ValueDim = h.HiddenDim / h.Heads
	}
	if h.Position == PosRoPE {
		if a.RopeDim == 0 && absent(p+"rope.dimension_count") {
			a.RopeDim = a.KeyDim
		}
		if h.RopeTheta == 0 && absent(p+"rope.freq_base") {
			h.RopeTheta = 10000
		}
	}
	if a.NormEps == 0 && absent(p+"attention.layer_norm_rms_epsilon") && absent(p+"attention.layer_norm_epsilon") {
		a.NormEps = 1e-5
	}
	u32(p+"attention.sliding_window", &a.SlidingWindow)
	if s, ok := md.String(p + "rope.scaling.type"); ok {
		switch s {
		case "linear":
			a.RopeScaling = 1
		case "yarn":
			a.RopeScaling = 2
		}
		if a.RopeScaling != 0 {
			consumed[p+"rope.scaling.type"] = true
			if !f32(p+"rope.scaling.factor", &a.RopeScale) {
				a.RopeScaling = 0 // keep the scaling keys as they are
				delete(consumed, p+"rope.scaling.type")
			} else {
				u32(p+"rope.scaling.original_context_length", &a.RopeOrigCtx)
			}
		}
	}
	f32(p+"attn_logit_softcapping", &a.AttnSoftcap)
	f32(p+"final_logit_softcapping", &a.FinalSoftcap)
	for key, dst := range map[string]*int32{keyBOS: &h.BOS, keyEOS: &h.EOS, keyPAD: &h.PAD} {
		v, ok := md.Get(key)
		if !ok || !v.Type().integer() {
			continue
		}
		if x, ok := v.Uint(); ok && x <= math.MaxInt32 {
			*dst, consumed[key] = int32(x), true
		}
	}
	if toks, ok := md.Strings("tokenizer.ggml.tokens"); ok {
		h.Vocab = uint32(min(uint64(len(toks)), math.MaxUint32))
	}
	for key, v := range md.All() {
		switch {
		case consumed[key] || key == KeyAlignment:
		case len(key) > 10 && key[:10] == "tokenizer.":
			c.Tokenizer.Set(key, v)
		default:
			c.Metadata.Set(key, v)
		}
	}
	_ = layers // the writer takes the layer count from the tensors
	return c, nil
}

// integer reports whether t is a scalar integer type.
func (t ValueType) integer() bool { return t.signed() || t.unsigned() }
