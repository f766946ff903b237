package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// I2_S is the ternary type bitnet.cpp writes (GGUF tensor type 36). Its
// byte size does not follow from its shape: the same type id is used for
// three layouts, told apart by the size of the tensor's data (see
// DetectI2S). For the purposes of the tensor directory its layout entry is
// the smallest of them, four 2-bit codes per byte; a reader hands the
// whole span of the tensor's data to DetectI2S and ConvertI2S.
//
// In every layout a 2-bit code c means the value i2sValues[c]: 0 → −1,
// 1 → 0, 2 → +1 (3 is never written and reads as 0). Codes are grouped
// most significant pair first: in a group of 4·k elements stored in k
// bytes, element j is bits 6−2·(j/k), 7−2·(j/k) of byte j mod k.
const I2_S Type = 36

// i2sValues maps a 2-bit I2_S code to its ternary value.
var i2sValues = [4]int8{-1, 0, 1, 0}

// I2SLayout is one of the three ways I2_S data is laid out.
type I2SLayout int

// The I2_S layouts, in detection priority order.
const (
	// I2STensorScale: blocks of 256 elements in 64 bytes with no scale of
	// their own (bitnet.cpp's x86 layout: two groups of 128 elements in
	// 32 bytes each), then a 32-byte trailer whose first 4 bytes are the
	// float32 scale of the whole tensor.
	I2STensorScale I2SLayout = iota + 1
	// I2SBlockScale: blocks of 32 elements in 10 bytes, an fp16 scale
	// then 8 bytes of codes.
	I2SBlockScale
	// I2SSiblingScale: blocks of 32 elements in 8 bytes of codes; the
	// scale of block b is element b of the sibling tensor named
	// I2SScalesName(name) (F32 or F16).
	I2SSiblingScale
)

func (l I2SLayout) String() string {
	switch l {
	case I2STensorScale:
		return "I2_S/256 (codes, float32 tensor scale after them)"
	case I2SBlockScale:
		return "I2_S/32+fp16 (10-byte blocks with inline fp16 scale)"
	case I2SSiblingScale:
		return "I2_S/32 (8-byte blocks, scales in a sibling tensor)"
	}
	return fmt.Sprintf("I2SLayout(%d)", int(l))
}

// I2SPadding is how many bytes past a layout's expected size a tensor's
// data may span (alignment padding) and still be taken for that layout.
const I2SPadding = 128

// ErrI2SLayout is returned for I2_S data whose size matches no layout.
var ErrI2SLayout = errors.New("quant: I2_S data matches no layout")

// I2SScalesName returns the name of the sibling tensor that holds the
// per-block scales of an I2SSiblingScale tensor.
func I2SScalesName(name string) string { return name + "_scales" }

// I2SSize returns the bytes an I2_S tensor of n elements occupies in
// layout l without padding, or 0 when n does not fit the layout's blocks.
func I2SSize(l I2SLayout, n int) int {
	switch l {
	case I2STensorScale:
		if n%256 == 0 {
			return n/4 + 32
		}
	case I2SBlockScale:
		if n%32 == 0 {
			return n / 32 * 10
		}
	case I2SSiblingScale:
		if n%32 == 0 {
			return n / 4
		}
	}
	return 0
}

// DetectI2S returns the layout of the I2_S tensor name of n elements
// whose data spans size bytes: the first layout, in priority order, whose
// expected size e satisfies e ≤ size < e + I2SPadding. Otherwise it fails
// with ErrI2SLayout and a message naming the tensor, the size expected for
// each layout and the size found: it never guesses. The priority decides
// where ranges overlap: codes-only data padded by 32 bytes or more reads
// as I2STensorScale (GGUF pads to 32 bytes, so a sibling-scale tensor
// never is), and below about 2560 elements the fp16-block size can fall in
// the I2STensorScale range too.
func DetectI2S(name string, n, size int) (I2SLayout, error) {
	for _, l := range []I2SLayout{I2STensorScale, I2SBlockScale, I2SSiblingScale} {
		if e := I2SSize(l, n); e > 0 && size >= e && size < e+I2SPadding {
			return l, nil
		}
	}
	return 0, fmt.Errorf("%w: tensor %s of %d elements has %d bytes; expected %d (%v), %d (%v) or %d (%v), each plus at most %d bytes of padding",
		ErrI2SLayout, name, n, size,
		I2SSize(I2STensorScale, n), I2STensorScale, I2SSize(I2SBlockScale, n), I2SBlockScale,
		I2SSize(I2SSiblingScale, n), I2SSiblingScale, I2SPadding-1)
}

// i2sCode returns code j of a group of 4·k elements stored in g (k bytes).
func i2sCode(g []byte, k, j int) int { return int(g[j%k]>>(6-2*(j/k))) & 3 }

// ConvertI2S decodes an I2_S tensor of rows×cols elements in layout l
// into the fastest type QSF computes with that keeps every value exact:
//
//   - TQ2_0 with block scales of 1 when the whole tensor has one scale
//     (always for I2STensorScale), which is returned as scale, to multiply
//     each product with: the arithmetic of a TQ2_0 file with a .scale;
//   - TQ2_0 with block scale d when each 256-element block has one fp16
//     scale d (scale 1);
//   - Q8_0 otherwise, the codes as int8 values under each 32-element
//     block's fp16 scale (scale 1).
//
// scales holds the sibling tensor of I2SSiblingScale (one per 32
// elements) and is ignored otherwise. TQ2_0 needs rows of whole 256-element
// blocks. ConvertI2S fails when the rows are not whole blocks of the
// target type, the data is too short or a scale is not finite. It is
// PlanI2S followed by ConvertI2SInto.
func ConvertI2S(l I2SLayout, data []byte, rows, cols int, scales []float32) (t Type, out []byte, scale float32, err error) {
	n := rows * cols
	if need := I2SSize(l, n); need == 0 || len(data) < need {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes of %v for %d×%d elements", ErrLength, len(data), l, rows, cols)
	}
	var ts float32
	switch l {
	case I2STensorScale:
		ts = I2STensorScaleOf(data, n)
	case I2SBlockScale:
		scales = make([]float32, n/32)
		I2SBlockScales(scales, data)
	}
	p, err := PlanI2S(l, rows, cols, ts, scales)
	if err != nil {
		return 0, nil, 0, err
	}
	out = make([]byte, p.Bytes(rows, cols))
	if err := ConvertI2SInto(out, p, l, data, rows, cols, scales); err != nil {
		return 0, nil, 0, err
	}
	return p.Type, out, p.Scale, nil
}

// I2SPlan says what ConvertI2SInto makes of an I2_S tensor: data of Type
// (TQ2_0 or Q8_0) and the tensor scale to multiply each product with (1
// for none). PlanI2S decides it from the tensor's scales alone, so that a
// reader can size and type the result before it reads the codes.
type I2SPlan struct {
	Type  Type
	Scale float32
	// blockD: TQ2_0 with each 256-element block's scale as its d (else
	// d = 1 and the one scale is Scale).
	blockD bool
}

// Bytes returns the size of the converted data of a rows×cols tensor.
func (p I2SPlan) Bytes(rows, cols int) int {
	if p.Type == Q8_0 {
		return rows * cols / 32 * 34
	}
	return rows * cols / 256 * 66
}

// I2STensorScaleOf returns the tensor scale stored after the n/4 code
// bytes of I2STensorScale data (data must hold them and the scale).
func I2STensorScaleOf(data []byte, n int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:]))
}

// I2SBlockScales writes the scales stored in the blocks of I2SBlockScale
// data, one per 32 elements, into dst.
func I2SBlockScales(dst []float32, data []byte) {
	for b := range dst {
		dst[b] = f16(data[b*10:])
	}
}

// PlanI2S decides, as ConvertI2S does, what an I2_S tensor of rows×cols
// elements in layout l converts to: from its tensor scale ts
// (I2STensorScale, see I2STensorScaleOf) or its block scales, one per 32
// elements (the sibling tensor of I2SSiblingScale, or I2SBlockScales of
// I2SBlockScale data). It fails when the rows are not whole blocks of the
// target type or a scale is not finite.
func PlanI2S(l I2SLayout, rows, cols int, ts float32, blockScales []float32) (I2SPlan, error) {
	n := rows * cols
	switch l {
	case I2STensorScale:
		if cols%256 != 0 {
			return I2SPlan{}, fmt.Errorf("%w: rows of %d elements are not whole TQ2_0 blocks", ErrLength, cols)
		}
		if math.IsNaN(float64(ts)) || math.IsInf(float64(ts), 0) {
			return I2SPlan{}, fmt.Errorf("quant: I2_S tensor scale %v", ts)
		}
		return I2SPlan{Type: TQ2_0, Scale: ts}, nil
	case I2SBlockScale, I2SSiblingScale:
		if cols%32 != 0 {
			return I2SPlan{}, fmt.Errorf("%w: rows of %d elements are not whole Q8_0 blocks", ErrLength, cols)
		}
		if len(blockScales) != n/32 {
			return I2SPlan{}, fmt.Errorf("%w: %d scales for %d blocks of 32", ErrLength, len(blockScales), n/32)
		}
		for b, s := range blockScales {
			if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				return I2SPlan{}, fmt.Errorf("quant: I2_S block %d scale %v", b, s)
			}
		}
		if cols%256 == 0 {
			one, perBlock := true, true
			for b, s := range blockScales {
				one = one && s == blockScales[0]
				perBlock = perBlock && s == blockScales[b/8*8] && f16Exact(s)
			}
			if one {
				return I2SPlan{Type: TQ2_0, Scale: blockScales[0]}, nil
			}
			if perBlock {
				return I2SPlan{Type: TQ2_0, Scale: 1, blockD: true}, nil
			}
		}
		return I2SPlan{Type: Q8_0, Scale: 1}, nil
	}
	return I2SPlan{}, fmt.Errorf("quant: unknown I2_S layout %d", int(l))
}

// ConvertI2SInto converts the I2_S tensor data of rows×cols elements in
// layout l as p (PlanI2S of the same tensor and scales) says, into dst
// (p.Bytes(rows, cols) bytes), without allocating. scales are the block
// scales PlanI2S was given for I2SSiblingScale and are ignored otherwise.
// It fails when the data or dst is too short, or a tensor scale of 0 comes
// with non-zero weights.
func ConvertI2SInto(dst []byte, p I2SPlan, l I2SLayout, data []byte, rows, cols int, scales []float32) error {
	n := rows * cols
	if need := I2SSize(l, n); need == 0 || len(data) < need {
		return fmt.Errorf("%w: %d bytes of %v for %d×%d elements", ErrLength, len(data), l, rows, cols)
	}
	if len(dst) < p.Bytes(rows, cols) {
		return fmt.Errorf("%w: %d bytes for %d×%d %v", ErrLength, len(dst), rows, cols, p.Type)
	}
	if l == I2SSiblingScale && len(scales) != n/32 {
		return fmt.Errorf("%w: %d scales for %d blocks of 32", ErrLength, len(scales), n/32)
	}
	if l == I2STensorScale {
		if p.Type != TQ2_0 || p.blockD {
			return fmt.Errorf("quant: I2_S %v cannot convert to %v", l, p.Type)
		}
		if p.Scale == 0 { // bitnet.cpp writes max|W|: 0 only for all-zero weights
			for _, c := range data[:n/4] {
				if c != 0x55 {
					return errors.New("quant: I2_S tensor scale 0 with non-zero weights")
				}
			}
		}
		one := FP32ToFP16(1)
		for b := 0; b < n/256; b++ {
			d := dst[b*66 : b*66+66]
			for h := 0; h < 2; h++ {
				g := data[b*64+32*h : b*64+32*h+32]
				for m := 0; m < 32; m++ {
					var q uint8
					for k := 0; k < 4; k++ {
						q |= uint8(i2sValues[i2sCode(g, 32, 32*k+m)]+1) << (2 * k)
					}
					d[32*h+m] = q
				}
			}
			put16(d[64:], one)
		}
		return nil
	}
	// The codes and scale of 32-element block b.
	codes := func(b int) []byte {
		if l == I2SBlockScale {
			return data[b*10+2 : b*10+10]
		}
		return data[b*8 : b*8+8]
	}
	scale := func(b int) float32 {
		if l == I2SBlockScale {
			return f16(data[b*10:])
		}
		return scales[b]
	}
	value := func(e int) int8 { return i2sValues[i2sCode(codes(e/32), 8, e%32)] }
	if p.Type == TQ2_0 {
		for blk := 0; blk < n/256; blk++ {
			d := dst[blk*66 : blk*66+66]
			for h := 0; h < 2; h++ {
				for m := 0; m < 32; m++ {
					var q uint8
					for k := 0; k < 4; k++ {
						q |= uint8(value(blk*256+128*h+32*k+m)+1) << (2 * k)
					}
					d[32*h+m] = q
				}
			}
			if p.blockD {
				put16(d[64:], FP32ToFP16(scale(blk*8)))
			} else {
				put16(d[64:], FP32ToFP16(1))
			}
		}
		return nil
	}
	for b := 0; b < n/32; b++ {
		d := dst[b*34 : b*34+34]
		put16(d[:2], FP32ToFP16(scale(b)))
		for j := 0; j < 32; j++ {
			d[2+j] = uint8(value(32*b + j))
		}
	}
	return nil
}

// f16Exact reports whether x survives a round trip through fp16.
func f16Exact(x float32) bool { return FP16ToFP32(FP32ToFP16(x)) == x }

// EncodeI2S writes ternary values (−1, 0, +1; anything else is an error)
// in layout l: the inverse of ConvertI2S, for tests and converters. scale
// is the tensor scale of I2STensorScale; blockScales (one per 32 values)
// those of I2SBlockScale, rounded to fp16. I2SSiblingScale stores codes
// only; its scales go in the sibling tensor.
func EncodeI2S(l I2SLayout, values []int8, scale float32, blockScales []float32) ([]byte, error) {
	n := len(values)
	size := I2SSize(l, n)
	if size == 0 {
		return nil, fmt.Errorf("%w: %d values do not fill %v blocks", ErrLength, n, l)
	}
	if l == I2SBlockScale && len(blockScales) != n/32 {
		return nil, fmt.Errorf("%w: %d block scales for %d blocks", ErrLength, len(blockScales), n/32)
	}
	out := make([]byte, size)
	put := func(g []byte, k, j int, v int8) error {
		if v < -1 || v > 1 {
			return fmt.Errorf("quant: I2_S value %d is not ternary", v)
		}
		g[j%k] |= uint8(v+1) << (6 - 2*(j/k))
		return nil
	}
	for e, v := range values {
		var err error
		switch l {
		case I2STensorScale:
			err = put(out[e/128*32:], 32, e%128, v)
		case I2SBlockScale:
			b := e / 32
			if e%32 == 0 {
				put16(out[b*10:], FP32ToFP16(blockScales[b]))
			}
			err = put(out[b*10+2:], 8, e%32, v)
		case I2SSiblingScale:
			err = put(out[e/32*8:], 8, e%32, v)
		}
		if err != nil {
			return nil, err
		}
	}
	if l == I2STensorScale {
		binary.LittleEndian.PutUint32(out[n/4:], math.Float32bits(scale))
	}
	return out, nil
}
