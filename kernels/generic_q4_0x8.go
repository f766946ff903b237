package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// The generic tier's Q4_0x8 kernel multiplies two rows with one 64-bit
// multiplication (signed SWAR). Load 8 bytes v of a block's chunk c:
// bytes 4c..4c+3 of row r's nibbles, then of row r+1's. Masking v with
// m = 0x000F000F000F000F keeps the low nibbles of bytes 0, 2, 4, 6 in the
// four 16-bit lanes of X: x₀, x₁ of row r (elements 4c, 4c+2), x₂, x₃ of
// row r+1 (the same elements). Let U = y₁ + y₀·2¹⁶, the two activation
// quants of those elements as a signed integer (modulo 2⁶⁴). The product
// X·U modulo 2⁶⁴ is Σₖ cₖ·2¹⁶ᵏ with c₁ = x₀y₀ + x₁y₁ (row r's two
// products), c₃ = x₂y₀ + x₃y₁ (row r+1's) and c₀, c₂ the cross terms.
//
// The four such products of a chunk (the low and the high nibbles, v&m
// and v>>4&m, of the even bytes and, v>>8&m and v>>12&m, of the odd ones,
// with multipliers U₀, U₂, U₁, U₃) take one mask less as
// v·U₀ + (v>>4&m)·(U₂−2⁴U₀) + (v>>8&m)·(U₁−2⁸U₀) + (v>>12&m)·(U₃−2¹²U₀),
// since v's lanes are v&m + 2⁴·(v>>4&m) + 2⁸·(v>>8&m) + 2¹²·(v>>12&m). The
// products of all four chunks sum into one accumulator A per pair of rows,
// whose lanes would overflow for the quants q: lanes 1 and 3 sum 32
// products q·y of up to 15·128. For q−8 they do not: Σ(X−8J)·U, J the
// word of four lanes of 1, has lanes of 32 products (q−8)·y in
// [−1016, 1024], so in [−32512, 32768], and lane 0 half as many. A starts
// at K − 8·J·ΣU (prepared once per activation: ΣU over the block's 16
// multipliers, K = 32512·J), so it ends at Σ(X−8J)·U + K, whose four lanes
// all lie in [0, 2¹⁶): they are its base-2¹⁶ digits, and lanes 1 and 3
// minus 32512 are the two rows' Σ(q−8)·y. The integer sums are exact, so
// the float arithmetic (one fma per row and block) is
// quant.DotQ4_0Gemv's.

// q4_0x8PrepBlock is the number of uint64 words of the generic tier's
// prepared Q8_0 activation per block: per chunk c the multipliers W₀..W₃
// of v, v>>4&m, v>>8&m and v>>12&m (U₀, U₂−2⁴U₀, U₁−2⁸U₀, U₃−2¹²U₀), the
// accumulators' initial value K − 8·J·ΣU, then da's float32 bits.
const q4_0x8PrepBlock = 18

// q4_0x8Lane is the offset K of every 16-bit lane of a pair's
// accumulator in the generic Q4_0x8 kernel.
const q4_0x8Lane = 32512

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
		var sum uint64
		for c := 0; c < 4; c++ {
			e := 4 * c
			u0 := y(e+2) + y(e)<<16
			u1 := y(e+3) + y(e+1)<<16
			u2 := y(16+e+2) + y(16+e)<<16
			u3 := y(16+e+3) + y(16+e+1)<<16
			o[4*c], o[4*c+1], o[4*c+2], o[4*c+3] = u0, u2-u0<<4, u1-u0<<8, u3-u0<<12
			sum += u0 + u1 + u2 + u3
		}
		const j = 0x0001000100010001
		o[16] = q4_0x8Lane*j - 8*j*sum
		o[17] = uint64(math.Float32bits(quant.FP16ToFP32(uint16(a[0]) | uint16(a[1])<<8)))
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
	var sums [q4_0x8Span][16]uint64
	for g := 0; g < len(out)/8; g++ {
		q4_0x8Group((*[8]float32)(out[8*g:]), w[g*8*rowBytes:][:nb*q4_0x8Block], u, fp16, &sums)
	}
}

// q4_0x8Span is the number of blocks whose integer sums q4_0x8Group
// computes before it adds up their products.
const q4_0x8Span = 32

// q4_0x8Group computes the eight dot products acc of a group of rows grp
// (Q4_0x8) with the prepared activation u in two passes per span of up to
// q4_0x8Span blocks: the first computes the blocks' integer sums
// (q4_0x8SpanSums, into sums, per chunk; a pair of rows' accumulator is
// the sum of its four chunks' words, modulo 2⁶⁴), the second the rows' fmas block
// by block, in order, the eight float32 sums held as float64s in
// registers. Its loop makes no calls: a block where some row's fma needs
// fma32Rare leaves it, and those rows' fmas are done (q4_0x8RareRows)
// before the next block. The float arithmetic is that of a block at a
// time, so the sums are the same bits.
func q4_0x8Group(acc *[8]float32, grp []byte, u []uint64, fp16 *[1 << 16]float32, sums *[q4_0x8Span][16]uint64) {
	var a0, a1, a2, a3, a4, a5, a6, a7 float64
	for len(grp) >= q4_0x8Block && len(u) >= q4_0x8PrepBlock {
		n := min(len(grp)/q4_0x8Block, len(u)/q4_0x8PrepBlock, q4_0x8Span)
		q4_0x8SpanSums(sums, grp[:n*q4_0x8Block], u)
		// Block b < n of the span is in bounds: its sums are 128·b
		// bytes into sums, its scales b·q4_0x8Block into grp, and
		// its da at word b·q4_0x8PrepBlock + 17 of u.
		gs, gw, gu := unsafe.Pointer(sums), unsafe.Pointer(unsafe.SliceData(grp)), unsafe.Pointer(unsafe.SliceData(u))
		for b := 0; b < n; b++ {
			var rare uint
			for ; b < n; b++ {
				s := (*[16]uint64)(unsafe.Add(gs, 128*b))
				o := (*[16]byte)(unsafe.Add(gw, q4_0x8Block*b))
				da := math.Float32frombits(uint32(*(*uint64)(unsafe.Add(gu, 8*(q4_0x8PrepBlock*b+17)))))
				s0 := s[0] + s[4] + s[8] + s[12]
				if x := float64(float64(float64(int32(uint16(s0>>16))-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[0:])]*da)) + a0); math.Float64bits(x)<<1 < q4_0x8Exact {
					a0 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a0 = float64(float32(x))
				} else {
					rare |= 1
				}
				if x := float64(float64(float64(int32(s0>>48)-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[2:])]*da)) + a1); math.Float64bits(x)<<1 < q4_0x8Exact {
					a1 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a1 = float64(float32(x))
				} else {
					rare |= 2
				}
				s1 := s[1] + s[5] + s[9] + s[13]
				if x := float64(float64(float64(int32(uint16(s1>>16))-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[4:])]*da)) + a2); math.Float64bits(x)<<1 < q4_0x8Exact {
					a2 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a2 = float64(float32(x))
				} else {
					rare |= 4
				}
				if x := float64(float64(float64(int32(s1>>48)-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[6:])]*da)) + a3); math.Float64bits(x)<<1 < q4_0x8Exact {
					a3 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a3 = float64(float32(x))
				} else {
					rare |= 8
				}
				s2 := s[2] + s[6] + s[10] + s[14]
				if x := float64(float64(float64(int32(uint16(s2>>16))-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[8:])]*da)) + a4); math.Float64bits(x)<<1 < q4_0x8Exact {
					a4 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a4 = float64(float32(x))
				} else {
					rare |= 16
				}
				if x := float64(float64(float64(int32(s2>>48)-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[10:])]*da)) + a5); math.Float64bits(x)<<1 < q4_0x8Exact {
					a5 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a5 = float64(float32(x))
				} else {
					rare |= 32
				}
				s3 := s[3] + s[7] + s[11] + s[15]
				if x := float64(float64(float64(int32(uint16(s3>>16))-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[12:])]*da)) + a6); math.Float64bits(x)<<1 < q4_0x8Exact {
					a6 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a6 = float64(float32(x))
				} else {
					rare |= 64
				}
				if x := float64(float64(float64(int32(s3>>48)-q4_0x8Lane)*float64(fp16[binary.LittleEndian.Uint16(o[14:])]*da)) + a7); math.Float64bits(x)<<1 < q4_0x8Exact {
					a7 = float64(float32(x))
				} else if fma32Fits(math.Float64bits(x)) {
					a7 = float64(float32(x))
				} else {
					rare |= 128
				}
				if rare != 0 {
					break
				}
			}
			if rare != 0 {
				a := [8]float64{a0, a1, a2, a3, a4, a5, a6, a7}
				t := sums[b]
				q4_0x8RareRows(&a, rare, &[4]uint64{t[0] + t[4] + t[8] + t[12], t[1] + t[5] + t[9] + t[13], t[2] + t[6] + t[10] + t[14], t[3] + t[7] + t[11] + t[15]}, (*[16]byte)(grp[b*q4_0x8Block:]), u[b*q4_0x8PrepBlock+17], fp16)
				a0, a1, a2, a3, a4, a5, a6, a7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
			}
		}
		grp, u = grp[n*q4_0x8Block:], u[n*q4_0x8PrepBlock:]
	}
	*acc = [8]float32{float32(a0), float32(a1), float32(a2), float32(a3), float32(a4), float32(a5), float32(a6), float32(a7)}
}

// q4_0x8RareRows does the fmas of the rows r in the set rare (bit r) of
// a block with sums s, row scales o and the activation's scale bits da
// with fma32Rare, on the sums a.
//
//go:noinline
func q4_0x8RareRows(a *[8]float64, rare uint, s *[4]uint64, o *[16]byte, da uint64, fp16 *[1 << 16]float32) {
	for r := range a {
		if rare>>r&1 == 0 {
			continue
		}
		v := int32(uint16(s[r/2]>>16)) - q4_0x8Lane
		if r%2 == 1 {
			v = int32(s[r/2]>>48) - q4_0x8Lane
		}
		d := fp16[binary.LittleEndian.Uint16(o[2*r:])] * math.Float32frombits(uint32(da))
		a[r] = float64(fma32Rare(float32(v), d, float32(a[r])))
	}
}

// q4_0x8SpanSums sets sums[b] to the parts of the four pairs of rows'
// accumulators of block b of grp with the prepared activation block b of
// u, for the blocks of grp (at most q4_0x8Span): word 4c+r holds chunk
// c's products of pair r (and, for c = 0, the initial value K − 8·J·ΣU),
// so that the pair's accumulator is the sum of words r, 4+r, 8+r and
// 12+r, modulo 2⁶⁴. It is a function of its own so that
// q4_0x8Group's float sums need not be kept across its calls, and so that
// the compiler keeps a chunk's four multipliers and the mask in registers
// for the chunk's four pairs (inlined, the values of the caller crowd them
// out). The chunks are written out, each pair's part stored before the
// next chunk's multipliers are loaded (the stores keep the compiler from
// loading all sixteen first), each to a word of its own (sums added up
// across chunks stay in registers and spill the multipliers), K read from
// memory; about 20% less time per block than a call per block with a
// loop over the chunks adding into sums. Its words are byte
// expressions, which the compiler combines into one load each, and not
// binary.LittleEndian.Uint64, whose inlining left a no-op instruction (the
// call's inline mark) per word.
//
//go:noinline
func q4_0x8SpanSums(sums *[q4_0x8Span][16]uint64, grp []byte, u []uint64) {
	n := min(len(grp)/q4_0x8Block, len(u)/q4_0x8PrepBlock, q4_0x8Span)
	// Block b < n is in bounds: its sums are 128·b bytes into sums, its
	// quants at b·q4_0x8Block + 16 of grp, its multipliers at word
	// b·q4_0x8PrepBlock of u.
	if n <= 0 {
		return
	}
	s, o, p := unsafe.Pointer(sums), unsafe.Pointer(unsafe.SliceData(grp)), unsafe.Pointer(unsafe.SliceData(u))
	for {
		const m = 0x000F000F000F000F
		sum := (*[16]uint64)(s)
		// Chunk by chunk (8 bytes per pair of rows), its multipliers in
		// registers for its four pairs.
		w, b := (*[q4_0x8PrepBlock]uint64)(p)[:], (*[q4_0x8Block]byte)(o)[16:]
		w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
		v := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		sum[0] = w[16] + v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 | uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48 | uint64(b[15])<<56
		sum[1] = w[16] + v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[16]) | uint64(b[17])<<8 | uint64(b[18])<<16 | uint64(b[19])<<24 | uint64(b[20])<<32 | uint64(b[21])<<40 | uint64(b[22])<<48 | uint64(b[23])<<56
		sum[2] = w[16] + v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[24]) | uint64(b[25])<<8 | uint64(b[26])<<16 | uint64(b[27])<<24 | uint64(b[28])<<32 | uint64(b[29])<<40 | uint64(b[30])<<48 | uint64(b[31])<<56
		sum[3] = w[16] + v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		w, b = (*[q4_0x8PrepBlock]uint64)(p)[4:], (*[q4_0x8Block]byte)(o)[48:]
		w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
		v = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		sum[4] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 | uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48 | uint64(b[15])<<56
		sum[5] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[16]) | uint64(b[17])<<8 | uint64(b[18])<<16 | uint64(b[19])<<24 | uint64(b[20])<<32 | uint64(b[21])<<40 | uint64(b[22])<<48 | uint64(b[23])<<56
		sum[6] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[24]) | uint64(b[25])<<8 | uint64(b[26])<<16 | uint64(b[27])<<24 | uint64(b[28])<<32 | uint64(b[29])<<40 | uint64(b[30])<<48 | uint64(b[31])<<56
		sum[7] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		w, b = (*[q4_0x8PrepBlock]uint64)(p)[8:], (*[q4_0x8Block]byte)(o)[80:]
		w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
		v = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		sum[8] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 | uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48 | uint64(b[15])<<56
		sum[9] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[16]) | uint64(b[17])<<8 | uint64(b[18])<<16 | uint64(b[19])<<24 | uint64(b[20])<<32 | uint64(b[21])<<40 | uint64(b[22])<<48 | uint64(b[23])<<56
		sum[10] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[24]) | uint64(b[25])<<8 | uint64(b[26])<<16 | uint64(b[27])<<24 | uint64(b[28])<<32 | uint64(b[29])<<40 | uint64(b[30])<<48 | uint64(b[31])<<56
		sum[11] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		w, b = (*[q4_0x8PrepBlock]uint64)(p)[12:], (*[q4_0x8Block]byte)(o)[112:]
		w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
		v = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		sum[12] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 | uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48 | uint64(b[15])<<56
		sum[13] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[16]) | uint64(b[17])<<8 | uint64(b[18])<<16 | uint64(b[19])<<24 | uint64(b[20])<<32 | uint64(b[21])<<40 | uint64(b[22])<<48 | uint64(b[23])<<56
		sum[14] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		v = uint64(b[24]) | uint64(b[25])<<8 | uint64(b[26])<<16 | uint64(b[27])<<24 | uint64(b[28])<<32 | uint64(b[29])<<40 | uint64(b[30])<<48 | uint64(b[31])<<56
		sum[15] = v*w0 + v>>4&m*w1 + v>>8&m*w2 + v>>12&m*w3
		// Step to the next block only when there is one: a pointer
		// past the end of its allocation is invalid (checkptr).
		if n--; n == 0 {
			return
		}
		s, o, p = unsafe.Add(s, 128), unsafe.Add(o, q4_0x8Block), unsafe.Add(p, 8*q4_0x8PrepBlock)
	}
}

// The fmas of q4_0x8Group are fma(float32(s), dw·da, a) as quant.FMA32
// computes them, a a float64 holding a float32: s converts exactly
// (|s| ≤ 2¹⁵). The scales dw and da are fp16s, multiples of 2⁻²⁴, so dw·da
// (exact in float32) and the float32 sums are multiples of 2⁻⁴⁸: a
// float64 sum below 2⁵ in magnitude is exact (fewer than 53 bits), and
// its one rounding to float32 the fma's. Only larger sums need
// fma32Fits, and only sums that fail it fma32Rare. (The tests are written
// out, so that the compiler branches on them instead of making a bool.)

// q4_0x8Exact bounds the bits of a float64 shifted left by one (its
// magnitude): below it, it is under 2⁵.
const q4_0x8Exact = (1023 + 5) << 53

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
