package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// The generic tier's Q4_0x8 kernel multiplies two rows with one 64-bit
// multiplication (signed SWAR). Load 8 bytes of a block's chunk c: bytes
// 4c..4c+3 of row r's nibbles, then of row r+1's. Masking with
// 0x000F000F000F000F keeps the low nibbles of bytes 0, 2, 4, 6 in the four
// 16-bit lanes of X: x₀, x₁ of row r (elements 4c, 4c+2), x₂, x₃ of row r+1
// (the same elements). Let U = y₁ + y₀·2¹⁶, the two activation quants of
// those elements as a signed integer (modulo 2⁶⁴). The product X·U modulo
// 2⁶⁴ is Σₖ cₖ·2¹⁶ᵏ with c₁ = x₀y₀ + x₁y₁ (row r's two products),
// c₃ = x₂y₀ + x₃y₁ (row r+1's) and c₀, c₂ the cross terms. The products
// of the low and high nibbles of the even and odd bytes of the four
// chunks sum into two such accumulators (low nibbles, high nibbles), each
// with |c₀| ≤ 8·15·128 < 2¹⁵ and |c₁|, |c₃| ≤ 16·15·128 < 2¹⁵, so
// c₁ = int16((A + 2¹⁵) >> 16) and c₃ = (A + 2⁴⁷) >> 48 (arithmetic) are
// exact. That gives Σq·y over the nibbles q; the kernel subtracts 8·Σy
// (prepared once per activation) for Σ(q−8)·y. The integer sums are
// exact, so the float arithmetic (one fma per row and block) is
// quant.DotQ4_0Gemv's.

// q4_0x8PrepBlock is the number of uint64 words of the generic tier's
// prepared Q8_0 activation per block: the 16 multipliers U (chunk c,
// then low-even, low-odd, high-even, high-odd), then da's float32 bits
// and 8·Σy as int32 in one word.
const q4_0x8PrepBlock = 17

// prepQ4_0x8SWAR builds the generic Q4_0x8 kernel's prepared activation.
func prepQ4_0x8SWAR(buf, act []byte, cols int) []byte {
	nb := cols / 32
	need := nb * q4_0x8PrepBlock * 8
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	u := words(buf)
	for b := 0; b < nb; b++ {
		a := (*[34]byte)(act[34*b:])
		o := (*[q4_0x8PrepBlock]uint64)(u[q4_0x8PrepBlock*b:])
		y := func(i int) uint64 { return uint64(int64(int8(a[2+i]))) }
		for c := 0; c < 4; c++ {
			e := 4 * c
			o[4*c] = y(e+2) + y(e)<<16
			o[4*c+1] = y(e+3) + y(e+1)<<16
			o[4*c+2] = y(16+e+2) + y(16+e)<<16
			o[4*c+3] = y(16+e+3) + y(16+e+1)<<16
		}
		var sy int32
		for i := 0; i < 32; i++ {
			sy += int32(int8(a[2+i]))
		}
		da := quant.FP16ToFP32(uint16(a[0]) | uint16(a[1])<<8)
		o[16] = uint64(math.Float32bits(da)) | uint64(uint32(8*sy))<<32
	}
	return buf
}

// words views b, which the Go allocator aligned to 8 bytes, as uint64s.
func words(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// q4_0x8SWAR is the generic tier's Q4_0x8 kernel; aux is prepQ4_0x8SWAR's.
func q4_0x8SWAR(out []float32, w []byte, rowBytes, cols int, _, aux []byte) {
	nb := cols / 32
	u := words(aux)[:nb*q4_0x8PrepBlock]
	fp16 := fp16Floats()
	for g := 0; g < len(out)/8; g++ {
		grp := w[g*8*rowBytes:][:nb*q4_0x8Block]
		var a0, a1, a2, a3, a4, a5, a6, a7 float32
		for b := 0; b < nb; b++ {
			o := (*[q4_0x8Block]byte)(grp[b*q4_0x8Block:])
			p := (*[q4_0x8PrepBlock]uint64)(u[q4_0x8PrepBlock*b:])
			sy8 := int32(p[16] >> 32)
			// Chunk by chunk: its four multipliers stay in registers for
			// the four pairs of rows, whose sums of the low nibbles
			// (even r) and of the high nibbles (odd r) gather in sum.
			var sum [8]uint64
			for c := 0; c < 4; c++ {
				const m = 0x000F000F000F000F
				u := (*[4]uint64)(p[4*c:])
				u0, u1, u2, u3 := u[0], u[1], u[2], u[3]
				q := (*[32]byte)(o[16+32*c:]) // 8 bytes per pair of rows
				v := binary.LittleEndian.Uint64(q[0:])
				sum[0] += v&m*u0 + v>>8&m*u1
				sum[1] += v>>4&m*u2 + v>>12&m*u3
				v = binary.LittleEndian.Uint64(q[8:])
				sum[2] += v&m*u0 + v>>8&m*u1
				sum[3] += v>>4&m*u2 + v>>12&m*u3
				v = binary.LittleEndian.Uint64(q[16:])
				sum[4] += v&m*u0 + v>>8&m*u1
				sum[5] += v>>4&m*u2 + v>>12&m*u3
				v = binary.LittleEndian.Uint64(q[24:])
				sum[6] += v&m*u0 + v>>8&m*u1
				sum[7] += v>>4&m*u2 + v>>12&m*u3
			}
			var s [8]int32
			for r := 0; r < 8; r += 2 {
				lo, hi := sum[r], sum[r+1]
				s[r] = int32(int16((lo+1<<15)>>16)) + int32(int16((hi+1<<15)>>16)) - sy8
				s[r+1] = int32(int64(lo+1<<47)>>48) + int32(int64(hi+1<<47)>>48) - sy8
			}
			// fma(float32(s), dw·da, acc) per row as quant.FMA32 computes
			// it (fma32Try written out, so that the compiler branches on
			// fma32Fits instead of making a bool); s converts
			// exactly (|s| ≤ 2¹⁵). The eight rows are written out: a
			// loop over them measured 5-10% slower.
			da := math.Float32frombits(uint32(p[16]))
			d0 := fp16[binary.LittleEndian.Uint16(o[0:])] * da
			if x := float64(float64(float64(s[0])*float64(d0)) + float64(a0)); fma32Fits(math.Float64bits(x)) {
				a0 = float32(x)
			} else {
				a0 = quant.FMA32(float32(s[0]), d0, a0)
			}
			d1 := fp16[binary.LittleEndian.Uint16(o[2:])] * da
			if x := float64(float64(float64(s[1])*float64(d1)) + float64(a1)); fma32Fits(math.Float64bits(x)) {
				a1 = float32(x)
			} else {
				a1 = quant.FMA32(float32(s[1]), d1, a1)
			}
			d2 := fp16[binary.LittleEndian.Uint16(o[4:])] * da
			if x := float64(float64(float64(s[2])*float64(d2)) + float64(a2)); fma32Fits(math.Float64bits(x)) {
				a2 = float32(x)
			} else {
				a2 = quant.FMA32(float32(s[2]), d2, a2)
			}
			d3 := fp16[binary.LittleEndian.Uint16(o[6:])] * da
			if x := float64(float64(float64(s[3])*float64(d3)) + float64(a3)); fma32Fits(math.Float64bits(x)) {
				a3 = float32(x)
			} else {
				a3 = quant.FMA32(float32(s[3]), d3, a3)
			}
			d4 := fp16[binary.LittleEndian.Uint16(o[8:])] * da
			if x := float64(float64(float64(s[4])*float64(d4)) + float64(a4)); fma32Fits(math.Float64bits(x)) {
				a4 = float32(x)
			} else {
				a4 = quant.FMA32(float32(s[4]), d4, a4)
			}
			d5 := fp16[binary.LittleEndian.Uint16(o[10:])] * da
			if x := float64(float64(float64(s[5])*float64(d5)) + float64(a5)); fma32Fits(math.Float64bits(x)) {
				a5 = float32(x)
			} else {
				a5 = quant.FMA32(float32(s[5]), d5, a5)
			}
			d6 := fp16[binary.LittleEndian.Uint16(o[12:])] * da
			if x := float64(float64(float64(s[6])*float64(d6)) + float64(a6)); fma32Fits(math.Float64bits(x)) {
				a6 = float32(x)
			} else {
				a6 = quant.FMA32(float32(s[6]), d6, a6)
			}
			d7 := fp16[binary.LittleEndian.Uint16(o[14:])] * da
			if x := float64(float64(float64(s[7])*float64(d7)) + float64(a7)); fma32Fits(math.Float64bits(x)) {
				a7 = float32(x)
			} else {
				a7 = quant.FMA32(float32(s[7]), d7, a7)
			}
		}
		*(*[8]float32)(out[8*g:]) = [8]float32{a0, a1, a2, a3, a4, a5, a6, a7}
	}
}

// fp16Floats returns the float32 value of every fp16 bit pattern (256 KiB,
// built on first use): the generic Q4_0x8 kernel converts its eight rows'
// block scales with one load each.
var fp16Floats = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for i := range t {
		t[i] = quant.FP16ToFP32(uint16(i))
	}
	return t
})
