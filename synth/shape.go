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
	Arch     string  // general.architecture: "llama" or "qwen3"
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
	case s.Arch != "llama" && s.Arch != "qwen3":
		return fmt.Errorf("synth: shape %s: architecture %q is not llama or qwen3", s.Name, s.Arch)
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
