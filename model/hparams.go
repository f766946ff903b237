// Package model holds the transformer architectures QSF runs: their
// hyperparameters, read from a model file's metadata, their weights, and
// the forward pass that turns one token into logits.
//
// The forward pass in forward.go is written to be read top to bottom: one
// function per layer step, the architecture differences (biases, QK-norm,
// fused projections, LayerNorm, GELU) as plain branches on Hparams.
package model

import (
	"errors"
	"fmt"
	"math"
)

// ErrArchitecture is returned for a model whose architecture QSF does not
// implement.
var ErrArchitecture = errors.New("model: unsupported architecture")

// ErrMissingTensor is returned when a weight the architecture needs is not
// in the file.
var ErrMissingTensor = errors.New("model: missing tensor")

// ErrMetadata is returned when a required hyperparameter is absent or out
// of range.
var ErrMetadata = errors.New("model: bad metadata")

// Metadata is the read-only view of a model file's key/value metadata that
// the model package needs. *format.Metadata satisfies it.
type Metadata interface {
	String(key string) (string, bool)
	Uint(key string) (uint64, bool)
	Float(key string) (float64, bool)
}

// RopeStyle says how rotary position embedding pairs the dimensions of a
// head.
type RopeStyle int

// Rotary embedding styles.
const (
	RopeNone   RopeStyle = iota // no rotary embedding (learned positions)
	RopeNormal                  // pairs (2i, 2i+1), as LLaMA
	RopeNeoX                    // pairs (i, i+d/2), as GPT-NeoX, Qwen, Gemma, Phi-3
)

// Activation is the FFN non-linearity.
type Activation int

// FFN activations.
const (
	SiLU Activation = iota // SwiGLU: silu(gate)·up
	GELU                   // GeGLU when the FFN has a gate, plain GELU otherwise
)

// Hparams are the hyperparameters of a decoder-only transformer.
type Hparams struct {
	Arch      string // general.architecture, e.g. "llama"
	Layers    int
	Embd      int // residual stream width
	Heads     int
	KVHeads   int
	HeadDimK  int // per-head width of queries and keys
	HeadDimV  int // per-head width of values
	FFN       int // hidden width of the feed-forward block
	Vocab     int
	CtxLen    int // context length the model was trained for
	NormEps   float32
	LayerNorm bool // LayerNorm with bias instead of RMSNorm
	Rope      RopeStyle
	RopeDim   int // dimensions rotated per head (≤ HeadDimK)
	RopeBase  float32
	Act       Activation

	// EmbedScale multiplies the token embedding (Gemma: sqrt(Embd)); 1
	// elsewhere.
	EmbedScale float32
	// LearnedPos says the model adds a learned position embedding (GPT-2).
	LearnedPos bool
	// QPreScale says llama.cpp scales the queries by 1/√d before the
	// scores (Gemma, Phi-3) instead of scaling the scores; the result is
	// the same up to rounding, and QSF follows it to the bit.
	QPreScale bool

	// MoE describes the mixture-of-experts feed-forward blocks; its zero
	// value (no experts) means a dense FFN.
	MoE MoEParams
}

// archInfo is what differs between the architectures that share the
// decoder forward pass.
type archInfo struct {
	rope       RopeStyle
	act        Activation
	layerNorm  bool
	embedScale bool
	learnedPos bool
	qPreScale  bool
	moe        moeInfo
}

var archs = map[string]archInfo{
	"llama":    {rope: RopeNormal, moe: moeInfo{normWeights: true}},
	"qwen2":    {rope: RopeNeoX},
	"qwen3":    {rope: RopeNeoX},
	"qwen2moe": {rope: RopeNeoX, moe: moeInfo{required: true, sharedExpert: true}},
	"qwen3moe": {rope: RopeNeoX, moe: moeInfo{required: true, normWeights: true}},
	"gemma":    {rope: RopeNeoX, act: GELU, embedScale: true, qPreScale: true},
	"phi3":     {rope: RopeNeoX, qPreScale: true},
	"gpt2":     {rope: RopeNone, act: GELU, layerNorm: true, learnedPos: true},
	"bitnet":   {rope: RopeNeoX}, // llama's decoder; sub-norms and scales: bitnet.go
}

// Supported reports whether arch is an architecture QSF runs.
func Supported(arch string) bool { _, ok := archs[arch]; return ok }

// ParseHparams reads the hyperparameters of a model from its metadata
// (GGUF key names). vocab is the number of rows of the token embedding.
func ParseHparams(md Metadata, vocab int) (Hparams, error) {
	arch, ok := md.String("general.architecture")
	if !ok {
		return Hparams{}, fmt.Errorf("%w: no general.architecture", ErrMetadata)
	}
	info, ok := archs[arch]
	if !ok {
		return Hparams{}, fmt.Errorf("%w: %q", ErrArchitecture, arch)
	}
	var err error
	need := func(key string) int {
		v, ok := md.Uint(arch + "." + key)
		if !ok || v == 0 || v > 1<<24 {
			if err == nil {
				err = fmt.Errorf("%w: %s.%s missing or out of range", ErrMetadata, arch, key)
			}
			return 0
		}
		return int(v)
	}
	opt := func(key string, def int) int {
		v, ok := md.Uint(arch + "." + key)
		if !ok {
			return def
		}
		if v == 0 || v > 1<<24 {
			if err == nil {
				err = fmt.Errorf("%w: %s.%s = %d out of range", ErrMetadata, arch, key, v)
			}
			return def
		}
		return int(v)
	}
	hp := Hparams{
		Arch:       arch,
		Layers:     need("block_count"),
		Embd:       need("embedding_length"),
		Heads:      need("attention.head_count"),
		FFN:        need("feed_forward_length"),
		CtxLen:     opt("context_length", 2048),
		Vocab:      vocab,
		Rope:       info.rope,
		Act:        info.act,
		LayerNorm:  info.layerNorm,
		LearnedPos: info.learnedPos,
		QPreScale:  info.qPreScale,
		EmbedScale: 1,
	}
	if err != nil {
		return Hparams{}, err
	}
	hp.KVHeads = opt("attention.head_count_kv", hp.Heads)
	hp.HeadDimK = opt("attention.key_length", hp.Embd/hp.Heads)
	hp.HeadDimV = opt("attention.value_length", hp.Embd/hp.Heads)
	hp.RopeDim = opt("rope.dimension_count", hp.HeadDimK)
	if err != nil {
		return Hparams{}, err
	}
	epsKey := arch + ".attention.layer_norm_rms_epsilon"
	if hp.LayerNorm {
		epsKey = arch + ".attention.layer_norm_epsilon"
	}
	eps, ok := md.Float(epsKey)
	if !ok {
		eps = 1e-5
	}
	hp.NormEps = float32(eps)
	base, ok := md.Float(arch + ".rope.freq_base")
	if !ok {
		base = 10000
	}
	hp.RopeBase = float32(base)
	if info.embedScale {
		hp.EmbedScale = float32(math.Sqrt(float64(hp.Embd)))
	}
	if hp.MoE, err = parseMoE(md, arch, info.moe, hp.FFN); err != nil {
		return Hparams{}, err
	}
	return hp, hp.validate()
}

func (hp *Hparams) validate() error {
	switch {
	case hp.Vocab <= 0:
		return fmt.Errorf("%w: empty vocabulary", ErrMetadata)
	case hp.Heads%hp.KVHeads != 0:
		return fmt.Errorf("%w: %d heads is not a multiple of %d KV heads", ErrMetadata, hp.Heads, hp.KVHeads)
	case hp.Rope != RopeNone && (hp.RopeDim > hp.HeadDimK || hp.RopeDim%2 != 0):
		return fmt.Errorf("%w: rope dimension %d does not fit head dimension %d", ErrMetadata, hp.RopeDim, hp.HeadDimK)
	case hp.RopeBase <= 0 && hp.Rope != RopeNone:
		return fmt.Errorf("%w: rope base %v", ErrMetadata, hp.RopeBase)
	case !(hp.NormEps >= 0):
		return fmt.Errorf("%w: norm epsilon %v", ErrMetadata, hp.NormEps)
	}
	return nil
}

// QDim is the width of all query heads together.
func (hp *Hparams) QDim() int { return hp.Heads * hp.HeadDimK }

// KDim is the width of all key heads together.
func (hp *Hparams) KDim() int { return hp.KVHeads * hp.HeadDimK }

// VDim is the width of all value heads together.
func (hp *Hparams) VDim() int { return hp.KVHeads * hp.HeadDimV }
