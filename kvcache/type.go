package kvcache

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/x448/float16"
)

// Type is how a cache stores keys and values.
type Type uint8

// Storage types. The quantized ones store one code per element with a
// float32 scale and offset, x ≈ offset + scale·code: for values one pair
// per position and KV head (Q8 values are symmetric: offset 0, codes
// −127..127), for keys one pair per channel and group of KeyGroup slots.
const (
	F32 Type = iota // float32, exact
	F16             // IEEE half precision
	Q8              // 8-bit codes
	Q4              // 4-bit codes
	Q2              // 2-bit codes
)

var typeNames = []string{"f32", "f16", "q8", "q4", "q2"}

// String returns the type's name as ParseType accepts it.
func (t Type) String() string {
	if t.valid() {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

func (t Type) valid() bool { return int(t) < len(typeNames) }

// ParseType parses a type name: f32, f16, q8, q4 or q2 (q8_0 and q4_0 are
// accepted as aliases).
func ParseType(s string) (Type, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "", "f32", "float32":
		return F32, nil
	case "f16", "float16":
		return F16, nil
	case "q8", "q8_0":
		return Q8, nil
	case "q4", "q4_0":
		return Q4, nil
	case "q2":
		return Q2, nil
	}
	return 0, fmt.Errorf("kvcache: unknown KV type %q (want f32, f16, q8, q4 or q2)", s)
}

// Bits returns the bits per element, not counting the per-head scales.
func (t Type) Bits() int { return [...]int{32, 16, 8, 4, 2}[t] }

// Less returns the next smaller type, and false for Q2.
func (t Type) Less() (Type, bool) {
	if t >= Q2 {
		return t, false
	}
	return t + 1, true
}

// headHeader is the scale and offset in front of a quantized head.
const headHeader = 8

// headBytes returns the bytes one head of d elements occupies.
func (t Type) headBytes(d int) int {
	switch t {
	case F32:
		return 4 * d
	case F16:
		return 2 * d
	}
	return headHeader + (d*t.Bits()+7)/8
}

// levels is the largest code of an asymmetric quantized type.
func (t Type) levels() int { return 1<<t.Bits() - 1 }

func putF32(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) }
func getF32(b []byte) float32    { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// encodeHeads stores heads heads of d elements of x into dst.
func encodeHeads(t Type, dst []byte, x []float32, heads, d int) {
	hb := t.headBytes(d)
	for h := range heads {
		encodeHead(t, dst[h*hb:(h+1)*hb], x[h*d:(h+1)*d])
	}
}

// encodeHead stores one head.
func encodeHead(t Type, dst []byte, x []float32) {
	switch t {
	case F32:
		for i, v := range x {
			putF32(dst[4*i:], v)
		}
		return
	case F16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], float16.Fromfloat32(v).Bits())
		}
		return
	case Q8:
		var amax float32
		for _, v := range x {
			amax = max(amax, abs(v))
		}
		scale := amax / 127
		inv := float32(0)
		if scale > 0 {
			inv = 1 / scale
		}
		putF32(dst, scale)
		putF32(dst[4:], 0)
		for i, v := range x {
			dst[headHeader+i] = byte(int8(roundClamp(v*inv, -127, 127)))
		}
		return
	}
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	n := t.levels()
	scale := (hi - lo) / float32(n)
	inv := float32(0)
	if scale > 0 {
		inv = 1 / scale
	}
	putF32(dst, scale)
	putF32(dst[4:], lo)
	codes := dst[headHeader:]
	clear(codes)
	bits := t.Bits()
	per := 8 / bits
	for i, v := range x {
		q := byte(roundClamp((v-lo)*inv, 0, float32(n)))
		codes[i/per] |= q << (bits * (i % per))
	}
}

func abs(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func roundClamp(x, lo, hi float32) float32 {
	r := float32(math.Round(float64(x)))
	return min(max(r, lo), hi)
}

// decodeHead writes the d stored elements of one head to dst.
func decodeHead(t Type, dst []float32, src []byte) {
	switch t {
	case F32:
		for i := range dst {
			dst[i] = getF32(src[4*i:])
		}
		return
	case F16:
		for i := range dst {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(src[2*i:])).Float32()
		}
		return
	}
	scale, off := getF32(src), getF32(src[4:])
	codes := src[headHeader:]
	switch t {
	case Q8:
		for i := range dst {
			dst[i] = float32(scale * float32(int8(codes[i])))
		}
	case Q4:
		for i := range dst {
			dst[i] = float32(scale*float32(codes[i/2]>>(4*(i%2))&15)) + off
		}
	case Q2:
		for i := range dst {
			dst[i] = float32(scale*float32(codes[i/4]>>(2*(i%4))&3)) + off
		}
	}
}
