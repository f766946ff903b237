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
// then low-even, low-odd, high-even, high-odd), the initial values Kₗ and
// Kₕ of the low and the high nibbles' accumulators, then da's float32
// bits.
const q4_0x8PrepBlock = 19

// q4_0x8Init returns the initial value of an accumulator of the generic
// Q4_0x8 kernel whose quants pair with activation quants of sum sy: the
// 16-bit lanes 0 and 2 (cross terms) start at 2¹⁵, lanes 1 and 3 (the two
// rows' sums Σq·y) at 2¹⁵ − 8·sy, which turns them into Σ(q−8)·y + 2¹⁵.
// The accumulator sums 16 products per row lane and 8 or 16 per cross
// lane, so every lane stays in [0, 2¹⁶) and they carry into no other
// (see q4_0x8Group).
func q4_0x8Init(sy int32) uint64 {
	row := uint64(uint16(1<<15 - 8*sy))
	return 1<<15 | row<<16 | 1<<47 | row<<48
}

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
		var slo, shi int32
		for i := 0; i < 16; i++ {
			slo += int32(int8(a[2+i]))
			shi += int32(int8(a[18+i]))
		}
		o[16], o[17] = q4_0x8Init(slo), q4_0x8Init(shi)
		o[18] = uint64(math.Float32bits(quant.FP16ToFP32(uint16(a[0]) | uint16(a[1])<<8)))
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
		q4_0x8Group((*[8]float32)(out[8*g:]), w[g*8*rowBytes:][:nb*q4_0x8Block], u, fp16)
	}
}

// q4_0x8Group computes the eight dot products acc of a group of rows grp
// (Q4_0x8) with the prepared activation u, a block at a time.
func q4_0x8Group(acc *[8]float32, grp []byte, u []uint64, fp16 *[1 << 16]float32) {
	*acc = [8]float32{}
	for len(grp) >= q4_0x8Block && len(u) >= q4_0x8PrepBlock {
		q4_0x8Block8(acc, (*[q4_0x8Block]byte)(grp), (*[q4_0x8PrepBlock]uint64)(u), fp16)
		grp, u = grp[q4_0x8Block:], u[q4_0x8PrepBlock:]
	}
}

// q4_0x8Block8 adds the products of the Q4_0x8 block o of eight rows
// with the prepared activation block p to the rows' sums acc.
//
// Chunk by chunk, the chunk's four multipliers stay in registers for the
// four pairs of rows, whose sums of the low nibbles (even k) and of the
// high nibbles (odd k) gather in sum[k], which starts at q4_0x8Init's
// values. Every 16-bit lane of a sum then lies in [0, 2¹⁶): the two rows'
// lanes 1 and 3 hold Σ(q−8)·y + 2¹⁵ over their 16 nibbles. Shifting a
// pair's two sums right by 16 and masking with 0x0000FFFF0000FFFF moves
// those lanes to the bottoms of the two 32-bit halves, where the low and
// the high nibbles' lanes add up to the rows' Σ(q−8)·y + 2¹⁶.
//
// It is a function of its own, and the chunks a loop, so that the
// compiler keeps the chunk's four multipliers and the mask in registers:
// inlined, the values of the caller's loops crowd them out, and unrolled,
// the compiler loads all sixteen multipliers first and spills them.
//
//go:noinline
func q4_0x8Block8(acc *[8]float32, o *[q4_0x8Block]byte, p *[q4_0x8PrepBlock]uint64, fp16 *[1 << 16]float32) {
	klo, khi := p[16], p[17]
	sum := [8]uint64{klo, khi, klo, khi, klo, khi, klo, khi}
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
	da := math.Float32frombits(uint32(p[18]))
	for r := 0; r < 8; r += 2 {
		const m32 = 0x0000FFFF0000FFFF
		t := sum[r]>>16&m32 + sum[r+1]>>16&m32
		s0, s1 := int32(uint32(t))-1<<16, int32(t>>32)-1<<16
		// fma(float32(s), dw·da, acc) per row as quant.FMA32 computes
		// it (fma32Try written out, so that the compiler branches on
		// fma32Fits instead of making a bool); s converts exactly
		// (|s| ≤ 2¹⁵).
		sc := (*[4]byte)(o[2*r:])
		d0 := fp16[binary.LittleEndian.Uint16(sc[0:])] * da
		if x := float64(float64(float64(s0)*float64(d0)) + float64(acc[r])); fma32Fits(math.Float64bits(x)) {
			acc[r] = float32(x)
		} else {
			acc[r] = fma32Rare(float32(s0), d0, acc[r])
		}
		d1 := fp16[binary.LittleEndian.Uint16(sc[2:])] * da
		if x := float64(float64(float64(s1)*float64(d1)) + float64(acc[r+1])); fma32Fits(math.Float64bits(x)) {
			acc[r+1] = float32(x)
		} else {
			acc[r+1] = fma32Rare(float32(s1), d1, acc[r+1])
		}
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
