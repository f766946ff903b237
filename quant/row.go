package quant

import (
	"errors"
	"fmt"
)

// ErrLength is returned when a buffer does not match the element count or
// the element count is not a whole number of blocks.
var ErrLength = errors.New("quant: buffer length mismatch")

func rowCheck(t Type, n, nbytes int, op string) (*Traits, error) {
	tr, err := Lookup(t)
	if err != nil {
		return nil, err
	}
	if n%tr.BlockSize != 0 {
		return nil, fmt.Errorf("%w: %s %v: %d elements is not a multiple of %d", ErrLength, op, t, n, tr.BlockSize)
	}
	if want := n / tr.BlockSize * tr.BlockBytes; nbytes != want {
		return nil, fmt.Errorf("%w: %s %v: %d elements need %d bytes, have %d", ErrLength, op, t, n, want, nbytes)
	}
	return tr, nil
}

// QuantizeRow encodes src into dst as type t with the traits' Quantize
// (the activation rounding for the VecDot types). dst must hold exactly
// RowBytes(t, len(src)) bytes.
func QuantizeRow(t Type, dst []byte, src []float32) error {
	tr, err := rowCheck(t, len(src), len(dst), "quantize")
	if err != nil {
		return err
	}
	if tr.Quantize == nil {
		return fmt.Errorf("%w: no quantizer for %v", ErrUnsupported, t)
	}
	tr.Quantize(dst, src)
	return nil
}

// QuantizeRowRef encodes src into dst as type t with the weight quantizer
// llama-quantize uses without an importance matrix, so that the bytes equal
// those of a GGUF file it wrote.
func QuantizeRowRef(t Type, dst []byte, src []float32) error {
	tr, err := rowCheck(t, len(src), len(dst), "quantize")
	if err != nil {
		return err
	}
	if tr.QuantizeRef == nil {
		return fmt.Errorf("%w: no quantizer for %v", ErrUnsupported, t)
	}
	tr.QuantizeRef(dst, src)
	return nil
}

// DequantizeRow decodes len(dst) elements of type t from src, which must
// hold exactly RowBytes(t, len(dst)) bytes.
func DequantizeRow(t Type, dst []float32, src []byte) error {
	tr, err := rowCheck(t, len(dst), len(src), "dequantize")
	if err != nil {
		return err
	}
	tr.Dequantize(dst, src)
	return nil
}

// DotRow returns the dot product of n elements of w (type t) and act (type
// t's VecDot), after checking both lengths.
func DotRow(t Type, n int, w, act []byte) (float32, error) {
	tr, err := rowCheck(t, n, len(w), "dot")
	if err != nil {
		return 0, err
	}
	vt, err := Lookup(tr.VecDot)
	if err != nil {
		return 0, err
	}
	if n%vt.BlockSize != 0 || len(act) != n/vt.BlockSize*vt.BlockBytes {
		return 0, fmt.Errorf("%w: dot %v: activation of %d bytes for %d elements of %v", ErrLength, t, len(act), n, tr.VecDot)
	}
	return tr.Dot(n, w, act), nil
}

// QuantizeRowImportance encodes src into dst as type t, minimising the
// error weighted per element by importance (nil: uniform), for example
// the activation energy of each column of a weight row measured on
// calibration text. Types without an importance-aware quantizer (all of
// ggml's but TQ1_0 and TQ2_0, whose scale and zeros it fits instead of
// taking d = max|x|) ignore importance and use their QuantizeRef.
func QuantizeRowImportance(t Type, dst []byte, src, importance []float32) error {
	tr, err := rowCheck(t, len(src), len(dst), "quantize")
	if err != nil {
		return err
	}
	if importance != nil && len(importance) != len(src) {
		return fmt.Errorf("%w: quantize %v: %d importance weights for %d elements", ErrLength, t, len(importance), len(src))
	}
	switch {
	case tr.QuantizeImportance != nil:
		tr.QuantizeImportance(dst, src, importance)
	case tr.QuantizeRef != nil:
		tr.QuantizeRef(dst, src)
	default:
		return fmt.Errorf("%w: no quantizer for %v", ErrUnsupported, t)
	}
	return nil
}
