package quant

import (
	"errors"
	"fmt"
)

// Traits is one row of the traits table: everything QSF needs to know to
// store, decode and multiply a tensor of one type. It plays the role of
// ggml's type_traits.
//
// All functions work on whole blocks: n (or len(dst) for Dequantize,
// len(src) for Quantize) must be a multiple of the type's block size.
type Traits struct {
	Type       Type
	BlockSize  int // elements per block
	BlockBytes int // bytes per block

	// VecDot is the type an activation vector is converted to before it
	// is multiplied with a row of this type (ggml's vec_dot_type): Q8_0
	// for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the
	// K-quants, F16 for F16, BF16 for BF16 and F32 for F32.
	VecDot Type

	// RotatedInput reports that the activation must be transformed by
	// Rotate64 before it is converted to VecDot: the type stores its rows
	// rotated (QSF_Q2R, QSF_Q3R, QSF_Q4R).
	RotatedInput bool

	// Dequantize decodes len(dst) elements from src into dst.
	Dequantize func(dst []float32, src []byte)

	// Quantize encodes len(src) elements into dst, which must hold
	// RowBytes(Type, len(src)) bytes. It is nil where llama.cpp has no
	// quantizer for the type. For the activation types (Q8_0, Q8_1, Q8_K,
	// F16, BF16, F32) it rounds exactly as llama.cpp's CPU backend does,
	// so that dot products match it bit for bit.
	Quantize func(dst []byte, src []float32)

	// QuantizeRef is the weight quantizer llama-quantize runs without an
	// importance matrix (ggml's quantize_row_*_ref, or quantize_iq4_nl for
	// IQ4_NL). It equals Quantize except for Q8_0 and Q8_1, whose
	// reference quantizers round ties away from zero where the activation
	// path rounds them to even.
	QuantizeRef func(dst []byte, src []float32)

	// QuantizeImportance, when not nil, encodes src as Quantize does but
	// minimises the error weighted per element by importance (same length
	// as src; nil means uniform): for a weight row, the activation energy
	// of each column measured on calibration text. Only QSF's own types
	// have it.
	QuantizeImportance func(dst []byte, src, importance []float32)

	// Dot returns the dot product of n elements of a row w stored in this
	// type with n elements of an activation act stored in VecDot. It is
	// the scalar reference every SIMD kernel is tested against.
	Dot func(n int, w, act []byte) float32
}

var table = map[Type]*Traits{}

func register(t *Traits) {
	l := layouts[t.Type]
	if l.blockSize != t.BlockSize || l.blockBytes != t.BlockBytes {
		panic(fmt.Sprintf("quant: traits of %v disagree with its layout", t.Type))
	}
	if t.QuantizeRef == nil {
		t.QuantizeRef = t.Quantize
	}
	table[t.Type] = t
}

// Lookup returns the traits of t, or an error naming t when QSF cannot
// compute with it.
func Lookup(t Type) (*Traits, error) {
	if tr, ok := table[t]; ok {
		return tr, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupported, t)
}

// ErrUnsupported is returned for a tensor type that QSF cannot compute with.
var ErrUnsupported = errors.New("quant: unsupported tensor type")
