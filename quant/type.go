// Package quant defines the tensor element types QSF understands — float
// formats and ggml's block-quantized formats — with one row per type in a
// traits table: block size, bytes per block, dequantize, quantize and the
// reference dot product against a quantized activation vector.
//
// The numeric type ids are ggml's (as stored in GGUF files), so a Type read
// from a GGUF tensor info can be used directly.
package quant

import "fmt"

// Type identifies a tensor element type. Values equal ggml's ggml_type ids.
type Type uint32

// Tensor types, numbered as in ggml.
const (
	F32    Type = 0
	F16    Type = 1
	Q4_0   Type = 2
	Q4_1   Type = 3
	Q5_0   Type = 6
	Q5_1   Type = 7
	Q8_0   Type = 8
	Q8_1   Type = 9
	Q2_K   Type = 10
	Q3_K   Type = 11
	Q4_K   Type = 12
	Q5_K   Type = 13
	Q6_K   Type = 14
	Q8_K   Type = 15
	IQ4_NL Type = 20
	I8     Type = 24
	I16    Type = 25
	I32    Type = 26
	I64    Type = 27
	F64    Type = 28
	BF16   Type = 30
	TQ1_0  Type = 34
	TQ2_0  Type = 35
	// I2_S = 36 is declared in i2s.go.
)

var typeNames = map[Type]string{
	F32: "F32", F16: "F16", Q4_0: "Q4_0", Q4_1: "Q4_1", Q5_0: "Q5_0", Q5_1: "Q5_1",
	Q8_0: "Q8_0", Q8_1: "Q8_1", Q2_K: "Q2_K", Q3_K: "Q3_K", Q4_K: "Q4_K", Q5_K: "Q5_K",
	Q6_K: "Q6_K", Q8_K: "Q8_K", IQ4_NL: "IQ4_NL", I8: "I8", I16: "I16", I32: "I32",
	I64: "I64", F64: "F64", BF16: "BF16", TQ1_0: "TQ1_0", TQ2_0: "TQ2_0", I2_S: "I2_S",
}

// String returns ggml's name for the type, e.g. "Q4_K", or "type(N)" for an
// id this package does not know.
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ParseType returns the Type whose name (case-insensitive) is s.
func ParseType(s string) (Type, error) {
	for t, name := range typeNames {
		if equalFold(name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("quant: unknown type %q", s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}

// layout is the storage geometry of a type: elements per block and bytes per
// block. It is kept apart from the traits table so that file parsers can size
// tensors without pulling in any arithmetic.
type layout struct{ blockSize, blockBytes int }

var layouts = map[Type]layout{
	F32: {1, 4}, F16: {1, 2}, BF16: {1, 2}, F64: {1, 8},
	I8: {1, 1}, I16: {1, 2}, I32: {1, 4}, I64: {1, 8},
	Q4_0: {32, 18}, Q4_1: {32, 20}, Q5_0: {32, 22}, Q5_1: {32, 24},
	Q8_0: {32, 34}, Q8_1: {32, 36},
	Q2_K: {256, 84}, Q3_K: {256, 110}, Q4_K: {256, 144}, Q5_K: {256, 176},
	Q6_K: {256, 210}, Q8_K: {256, 292},
	IQ4_NL: {32, 18},
	TQ1_0:  {256, 54}, TQ2_0: {256, 66},
	I2_S: {4, 1}, // the smallest of its layouts; see DetectI2S
}

// Known reports whether t is a type whose storage layout this package knows.
func (t Type) Known() bool { _, ok := layouts[t]; return ok }

// BlockSize returns the number of elements in one block of t (1 for plain
// float and integer types), or 0 for an unknown type.
func (t Type) BlockSize() int { return layouts[t].blockSize }

// BlockBytes returns the number of bytes one block of t occupies, or 0 for an
// unknown type.
func (t Type) BlockBytes() int { return layouts[t].blockBytes }

// RowBytes returns the bytes needed to store n elements of type t. It fails
// when t is unknown or n is not a whole number of blocks.
func RowBytes(t Type, n int) (int, error) {
	l, ok := layouts[t]
	if !ok {
		return 0, fmt.Errorf("quant: unknown type %v", t)
	}
	if n < 0 || n%l.blockSize != 0 {
		return 0, fmt.Errorf("quant: %d elements is not a whole number of %v blocks of %d", n, t, l.blockSize)
	}
	return n / l.blockSize * l.blockBytes, nil
}
