package quant

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// FP16ToFP32 converts an IEEE 754 half-precision value, given by its bits,
// to float32. The conversion is exact.
func FP16ToFP32(h uint16) float32 {
	if e := h >> 10 & 0x1f; e-1 < 30 { // a normal number: rebias the exponent
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + 112<<23))
	}
	return float16.Frombits(h).Float32()
}

// FP32ToFP16 converts f to IEEE 754 half precision, rounding to nearest with
// ties to even, as F16C's vcvtps2ph and ggml's software fallback do.
func FP32ToFP16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// BF16ToFP32 converts a bfloat16 value, given by its bits, to float32. The
// conversion is exact.
func BF16ToFP32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP32ToBF16 converts f to bfloat16 as ggml does: round to nearest with ties
// to even on the upper 16 bits, and NaN forced to a quiet NaN.
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}

// nearestInt rounds v to the nearest integer, ties to even, with ggml's
// nearest_int trick (adding 1.5·2²³ and reading the mantissa). It is exact
// for |v| < 2²²; outside that range it reproduces ggml's bits, not a
// meaningful rounding.
func nearestInt(v float32) int {
	val := float32(v) + 12582912 // float32(v): no fused multiply-add with the caller's product
	return int(math.Float32bits(val)&0x007fffff) - 0x00400000
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func put16(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }

// f16 reads a little-endian fp16 value from b as float32.
func f16(b []byte) float32 { return FP16ToFP32(le16(b)) }

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// roundAway rounds half away from zero, like C's roundf.
func roundAway(x float32) float32 { return float32(math.Round(float64(x))) }

// roundEven rounds half to even, like _mm256_round_ps(_MM_ROUND_NEAREST).
func roundEven(x float32) float32 { return float32(math.RoundToEven(float64(x))) }
