package synth

import (
	"errors"
	"fmt"
	"sort"
)

// ErrUnknownShape is returned by LookupShape for a name it does not know.
var ErrUnknownShape = errors.New("synth: unknown shape")

// Shape is the architecture of a decoder-only transformer: everything
// needed to lay out its tensors and write its hyperparameters.
type Shape struct {
	Name     string  // short name, e.g. "12L-768"
	Arch     string  // general.architecture: "llama", "qwen3" or "qwen3moe"
	Layers   int     // transformer blocks
	Embd     int     // residual stream width
	Heads    int     // query heads
	KVHeads  int     // key/value heads
	HeadDim  int     // width of one head
	FFN      int     // feed-forward hidden width
	Vocab    int     // vocabulary size
	Context  int     // trained context length
	RopeBase float64 // rotary embedding frequency base
	NormEps  float64 // RMSNorm epsilon

	// TiedEmbeddings says the model has no output.weight: the token
	// embedding doubles as the LM head.
	TiedEmbeddings bool
	// QKNorm adds per-head RMSNorm weights for queries and keys
	// (attn_q_norm, attn_k_norm), as Qwen3 has.
	QKNorm bool

	// Experts > 0 makes every FFN a mixture of experts: a router
	// (ffn_gate_inp, kept F32 as llama-quantize does) and the stacked 3-D
	// tensors ffn_{gate,up,down}_exps, ExpertsUsed of them per token.
	Experts, ExpertsUsed int
	// ExpertFFN is the hidden width of one expert (qwen3moe's
	// expert_feed_forward_length); llama's experts are FFN wide, and 0
	// means that.
	ExpertFFN int
}

var shapes = []Shape{
	{Name: "tiny", Arch: "llama", Layers: 2, Embd: 256, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 512, Vocab: 1024, Context: 256, RopeBase: 10000, NormEps: 1e-5},
	{Name: "12L-768", Arch: "llama", Layers: 12, Embd: 768, Heads: 12, KVHeads: 12, HeadDim: 64,
		FFN: 2048, Vocab: 32000, Context: 1024, RopeBase: 10000, NormEps: 1e-5},
	{Name: "tinyllama-1.1b", Arch: "llama", Layers: 22, Embd: 2048, Heads: 32, KVHeads: 4, HeadDim: 64,
		FFN: 5632, Vocab: 32000, Context: 2048, RopeBase: 10000, NormEps: 1e-5},
	{Name: "llama2-7b", Arch: "llama", Layers: 32, Embd: 4096, Heads: 32, KVHeads: 32, HeadDim: 128,
		FFN: 11008, Vocab: 32000, Context: 4096, RopeBase: 10000, NormEps: 1e-5},
	{Name: "qwen3-0.6b", Arch: "qwen3", Layers: 28, Embd: 1024, Heads: 16, KVHeads: 8, HeadDim: 128,
		FFN: 3072, Vocab: 151936, Context: 40960, RopeBase: 1e6, NormEps: 1e-6,
		TiedEmbeddings: true, QKNorm: true},
	// Mixtures of experts: a small Mixtral-style one for tests, and the
	// shapes of Qwen3-30B-A3B and Mixtral 8x7B.
	{Name: "tiny-moe", Arch: "llama", Layers: 2, Embd: 256, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 512, Vocab: 1024, Context: 256, RopeBase: 1e6, NormEps: 1e-5, Experts: 8, ExpertsUsed: 2},
	{Name: "qwen3-30b-a3b", Arch: "qwen3moe", Layers: 48, Embd: 2048, Heads: 32, KVHeads: 4, HeadDim: 128,
		FFN: 6144, Vocab: 151936, Context: 40960, RopeBase: 1e6, NormEps: 1e-6, QKNorm: true,
		Experts: 128, ExpertsUsed: 8, ExpertFFN: 768},
	{Name: "mixtral-8x7b", Arch: "llama", Layers: 32, Embd: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
		FFN: 14336, Vocab: 32000, Context: 32768, RopeBase: 1e6, NormEps: 1e-5, Experts: 8, ExpertsUsed: 2},
}

// Shapes returns the built-in shapes, smallest first.
func Shapes() []Shape {
	return append([]Shape(nil), shapes...)
}

// ShapeNames returns the names of the built-in shapes, sorted.
func ShapeNames() []string {
	names := make([]string, len(shapes))
	for i, s := range shapes {
		names[i] = s.Name
	}
	sort.Strings(names)
	return names
}

// LookupShape returns the built-in shape called name.
func LookupShape(name string) (Shape, error) {
	for _, s := range shapes {
		if s.Name == name {
			return s, nil
		}
	}
	return Shape{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownShape, name, ShapeNames())
}

// Validate reports whether the shape is consistent.
func (s Shape) Validate() error {
	switch {
	case s.Arch != "llama" && s.Arch != "qwen3" && s.Arch != "qwen3moe":
		return fmt.Errorf("synth: shape %s: architecture %q is not llama, qwen3 or qwen3moe", s.Name, s.Arch)
	case s.Arch == "qwen3moe" && s.Experts == 0, s.Arch == "qwen3" && s.Experts != 0:
		return fmt.Errorf("synth: shape %s: architecture %s with %d experts", s.Name, s.Arch, s.Experts)
	case s.Experts < 0 || s.Experts > 1<<10 || (s.Experts > 0 && (s.ExpertsUsed < 1 || s.ExpertsUsed > s.Experts)) ||
		s.ExpertFFN < 0 || s.ExpertFFN > 1<<22 || (s.Arch == "llama" && s.ExpertFFN != 0 && s.ExpertFFN != s.FFN):
		return fmt.Errorf("synth: shape %s: %d experts, %d used, %d wide", s.Name, s.Experts, s.ExpertsUsed, s.ExpertFFN)
	case s.Layers <= 0 || s.Embd <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 || s.FFN <= 0 || s.Context <= 0:
		return fmt.Errorf("synth: shape %s: dimensions must be positive", s.Name)
	case s.Heads%s.KVHeads != 0:
		return fmt.Errorf("synth: shape %s: %d heads is not a multiple of %d KV heads", s.Name, s.Heads, s.KVHeads)
	case s.HeadDim%2 != 0:
		return fmt.Errorf("synth: shape %s: odd head dimension %d", s.Name, s.HeadDim)
	case s.Vocab < minVocab:
		return fmt.Errorf("synth: shape %s: vocabulary %d is smaller than %d", s.Name, s.Vocab, minVocab)
	case s.Layers > 1<<12 || s.Embd > 1<<20 || s.FFN > 1<<22 || s.Vocab > 1<<24 || s.Heads*s.HeadDim > 1<<20:
		return fmt.Errorf("synth: shape %s: dimensions too large", s.Name)
	case !(s.RopeBase > 0) || !(s.NormEps > 0):
		return fmt.Errorf("synth: shape %s: rope base and norm epsilon must be positive", s.Name)
	}
	return nil
}

// Params returns the number of weights of the shape.
func (s Shape) Params() int64 {
	var n int64
	for _, t := range s.tensors() {
		n += t.elements()
	}
	return n
}

// ActiveParams returns the number of weights one token uses: Params less
// the routed experts it is not sent to.
func (s Shape) ActiveParams() int64 {
	var n int64
	for _, t := range s.tensors() {
		if t.ne2 > 0 {
			n += t.elements() / int64(t.ne2) * int64(s.ExpertsUsed)
		} else {
			n += t.elements()
		}
	}
	return n
}

// expertFFN is the hidden width of one expert.
func (s Shape) expertFFN() int {
	if s.ExpertFFN > 0 {
		return s.ExpertFFN
	}
	return s.FFN
}
