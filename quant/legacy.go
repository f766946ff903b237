package quant

import (
	"encoding/binary"
	"math"
)

// Legacy 32-element block types. Weight quantizers are ggml's
// quantize_row_*_ref; the Q8_0/Q8_1 activation quantizers follow the AVX2
// path of ggml-cpu's quantize_row_q8_0/q8_1.
//
// Block layouts (little endian):
//
//	Q4_0  d:f16 qs[16]            x = (nibble-8)·d, low nibbles are 0..15, high 16..31
//	Q4_1  d:f16 m:f16 qs[16]      x = nibble·d + m
//	Q5_0  d:f16 qh[4] qs[16]      x = (nibble|bit<<4 - 16)·d
//	Q5_1  d:f16 m:f16 qh[4] qs[16]
//	Q8_0  d:f16 qs[32]int8
//	Q8_1  d:f16 s:f16 qs[32]int8  s = d·Σqs

const qk = 32

func init() {
	register(&Traits{Type: Q4_0, BlockSize: qk, BlockBytes: 18, VecDot: Q8_0,
		Dequantize: dequantQ4_0, Quantize: quantQ4_0, Dot: dotQ4_0})
	register(&Traits{Type: Q4_1, BlockSize: qk, BlockBytes: 20, VecDot: Q8_1,
		Dequantize: dequantQ4_1, Quantize: quantQ4_1, Dot: dotQ4_1})
	register(&Traits{Type: Q5_0, BlockSize: qk, BlockBytes: 22, VecDot: Q8_0,
		Dequantize: dequantQ5_0, Quantize: quantQ5_0, Dot: dotQ5_0})
	register(&Traits{Type: Q5_1, BlockSize: qk, BlockBytes: 24, VecDot: Q8_1,
		Dequantize: dequantQ5_1, Quantize: quantQ5_1, Dot: dotQ5_1})
	register(&Traits{Type: Q8_0, BlockSize: qk, BlockBytes: 34, VecDot: Q8_0,
		Dequantize: dequantQ8_0, Quantize: quantQ8_0Act, QuantizeRef: QuantizeQ8_0Ref, Dot: dotQ8_0})
	register(&Traits{Type: Q8_1, BlockSize: qk, BlockBytes: 36, VecDot: Q8_1,
		Dequantize: dequantQ8_1, Quantize: quantQ8_1Act, QuantizeRef: quantQ8_1Ref, Dot: dotQ8_1})
}

// absMaxSigned returns the element of largest magnitude (first one on
// ties), as the ref quantizers find "max".
func absMaxSigned(x []float32) (amax, max float32) {
	for _, v := range x {
		if amax < abs32(v) {
			amax = abs32(v)
			max = v
		}
	}
	return amax, max
}

func minMax(x []float32) (min, max float32) {
	min, max = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	return min, max
}

func inv(d float32) float32 {
	if d != 0 {
		return 1 / d
	}
	return 0
}

// ---- Q4_0

func dequantQ4_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*18:]
		d := f16(b)
		for j := 0; j < 16; j++ {
			dst[i*qk+j] = float32(int(b[2+j]&0xF)-8) * d
			dst[i*qk+j+16] = float32(int(b[2+j]>>4)-8) * d
		}
	}
}

func quantQ4_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*18 : i*18+18]
		_, max := absMaxSigned(x)
		d := max / -8
		id := inv(d)
		put16(b, FP32ToFP16(d))
		for j := 0; j < 16; j++ {
			x0 := x[j] * id
			x1 := x[j+16] * id
			xi0 := min(15, int(int8(float32(x0)+8.5)))
			xi1 := min(15, int(int8(float32(x1)+8.5)))
			b[2+j] = uint8(xi0) | uint8(xi1)<<4
		}
	}
}

func decodeQ4_0(b []byte, x *[32]int32) {
	for j := 0; j < 16; j++ {
		x[j] = int32(b[2+j]&0xF) - 8
		x[j+16] = int32(b[2+j]>>4) - 8
	}
}

// ---- Q4_1

func dequantQ4_1(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*20:]
		d, m := f16(b), f16(b[2:])
		for j := 0; j < 16; j++ {
			dst[i*qk+j] = float32(float32(b[4+j]&0xF)*d) + m
			dst[i*qk+j+16] = float32(float32(b[4+j]>>4)*d) + m
		}
	}
}

func quantQ4_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*20 : i*20+20]
		mn, mx := minMax(x)
		d := (mx - mn) / 15
		id := inv(d)
		put16(b, FP32ToFP16(d))
		put16(b[2:], FP32ToFP16(mn))
		for j := 0; j < 16; j++ {
			x0 := (x[j] - mn) * id
			x1 := (x[j+16] - mn) * id
			xi0 := min(15, int(int8(float32(x0)+0.5)))
			xi1 := min(15, int(int8(float32(x1)+0.5)))
			b[4+j] = uint8(xi0) | uint8(xi1)<<4
		}
	}
}

// dotQ4_1 uses the m·s term: Σ(q·d+m)·(a·da) = d·da·Σq·a + m·s.
func dotQ4_1(n int, w, act []byte) float32 { return dotLanesMin(n, w, 20, blockQ4_1, act) }

func decodeQ4_1(b []byte, x *[32]int32) {
	for j := 0; j < 16; j++ {
		x[j] = int32(b[4+j] & 0xF)
		x[j+16] = int32(b[4+j] >> 4)
	}
}

// ---- Q5_0

func dequantQ5_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*22:]
		d := f16(b)
		qh := binary.LittleEndian.Uint32(b[2:])
		for j := 0; j < 16; j++ {
			h0 := int(qh>>j&1) << 4
			h1 := int(qh>>(j+16)&1) << 4
			dst[i*qk+j] = float32(int(b[6+j]&0xF)|h0-16) * d
			dst[i*qk+j+16] = float32(int(b[6+j]>>4)|h1-16) * d
		}
	}
}

// q5At returns the 5-bit quants of a Q5 block: qh at b[0:4], qs at b[4:20].
func q5At(b []byte, j int) int {
	qh := binary.LittleEndian.Uint32(b)
	if j < 16 {
		return int(b[4+j]&0xF) | int(qh>>j&1)<<4
	}
	return int(b[4+j-16]>>4) | int(qh>>j&1)<<4
}

func quantQ5_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*22 : i*22+22]
		_, max := absMaxSigned(x)
		d := max / -16
		id := inv(d)
		put16(b, FP32ToFP16(d))
		var qh uint32
		for j := 0; j < 16; j++ {
			x0 := x[j] * id
			x1 := x[j+16] * id
			xi0 := uint8(min(31, int(int8(float32(x0)+16.5))))
			xi1 := uint8(min(31, int(int8(float32(x1)+16.5))))
			b[6+j] = xi0&0xF | (xi1&0xF)<<4
			qh |= uint32(xi0>>4&1) << j
			qh |= uint32(xi1>>4&1) << (j + 16)
		}
		binary.LittleEndian.PutUint32(b[2:], qh)
	}
}

func dotQ5_0(n int, w, act []byte) float32 { return dotLanes(n, w, 22, act, 34, blockQ5_0) }

func decodeQ5_0(b []byte, x *[32]int32) {
	for j := range x {
		x[j] = int32(q5At(b[2:], j)) - 16
	}
}

// ---- Q5_1

func dequantQ5_1(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*24:]
		d, m := f16(b), f16(b[2:])
		for j := 0; j < qk; j++ {
			dst[i*qk+j] = float32(float32(q5At(b[4:], j))*d) + m
		}
	}
}

func quantQ5_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*24 : i*24+24]
		mn, mx := minMax(x)
		d := (mx - mn) / 31
		id := inv(d)
		put16(b, FP32ToFP16(d))
		put16(b[2:], FP32ToFP16(mn))
		var qh uint32
		for j := 0; j < 16; j++ {
			x0 := (x[j] - mn) * id
			x1 := (x[j+16] - mn) * id
			xi0 := uint8(float32(x0) + 0.5)
			xi1 := uint8(float32(x1) + 0.5)
			b[8+j] = xi0&0xF | (xi1&0xF)<<4
			qh |= uint32(xi0>>4&1) << j
			qh |= uint32(xi1>>4&1) << (j + 16)
		}
		binary.LittleEndian.PutUint32(b[4:], qh)
	}
}

func dotQ5_1(n int, w, act []byte) float32 { return dotLanesMin(n, w, 24, blockQ5_1, act) }

func decodeQ5_1(b []byte, x *[32]int32) {
	for j := range x {
		x[j] = int32(q5At(b[4:], j))
	}
}

// ---- Q8_0

func dequantQ8_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*34:]
		d := f16(b)
		for j := 0; j < qk; j++ {
			dst[i*qk+j] = float32(int8(b[2+j])) * d
		}
	}
}

// QuantizeQ8_0Ref encodes src as Q8_0 with ggml's quantize_row_q8_0_ref, the
// quantizer llama-quantize uses for Q8_0 weights: d = amax/127,
// q = roundf(x/d) with ties away from zero. (The Traits Quantize of Q8_0 is
// the activation quantizer, which rounds differently.)
func QuantizeQ8_0Ref(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*34 : i*34+34]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		id := inv(d)
		put16(b, FP32ToFP16(d))
		for j, v := range x {
			b[2+j] = uint8(int8(roundAway(v * id)))
		}
	}
}

// actQ8 quantizes one block of 32 as ggml's AVX2 quantize_row_q8_0 does and
// returns d and Σq. Like the AVX2 code it converts x·id with
// _mm256_cvtps_epi32 semantics (NaN and values outside int32 become
// -2³¹), packs to int8 with signed saturation and sums the int32 values
// with wrap-around: that only shows when 127/maxAbs overflows (a block of
// subnormals), where every quant becomes -128 while d rounds to fp16 zero.
func actQ8(qs []byte, x []float32) (d float32, sum int) {
	// The largest |x| as the largest of the bits without sign, which
	// orders finite floats and infinities as their values do; NaN and
	// infinities, and a 127/maxAbs that overflows, take actQ8Slow.
	var mb uint32
	for _, v := range x {
		mb = max(mb, math.Float32bits(v)&^(1<<31))
	}
	maxAbs := math.Float32frombits(mb)
	var id float32
	if mb != 0 {
		id = 127 / maxAbs
	}
	if mb >= 0x7f800000 || id > math.MaxFloat32 {
		return actQ8Slow(qs, x)
	}
	// Every x·id is now within ±127.00002: adding 1.5·2²³ rounds it to
	// an integer, ties to even, in the low mantissa bits.
	qs = qs[:len(x)]
	var s int32
	for j, v := range x {
		q := int32(math.Float32bits(float32(v*id)+0x1.8p23)) - 0x4b400000
		qs[j] = uint8(int8(q))
		s += q
	}
	return maxAbs / 127, int(s)
}

// actQ8Slow is actQ8 for every block, with the conversion's NaN and
// overflow semantics.
func actQ8Slow(qs []byte, x []float32) (d float32, sum int) {
	var maxAbs float32
	for _, v := range x {
		maxAbs = max(maxAbs, abs32(v))
	}
	d = maxAbs / 127
	var id float32
	if maxAbs != 0 {
		id = 127 / maxAbs
	}
	var s int32
	for j, v := range x {
		q := cvtps2dq(roundEven(v * id))
		qs[j] = uint8(int8(min(127, max(-128, q))))
		s += q
	}
	return d, int(s)
}

// cvtps2dq converts an integral float32 to int32 as CVTPS2DQ does: NaN and
// values outside the int32 range give the "integer indefinite" -2³¹.
func cvtps2dq(v float32) int32 {
	if v != v || v >= 1<<31 || v < -(1<<31) {
		return math.MinInt32
	}
	return int32(v)
}

// quantQ8_0Act is the activation quantizer: AVX2 quantize_row_q8_0.
func quantQ8_0Act(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		b := dst[i*34 : i*34+34]
		d, _ := actQ8(b[2:], src[i*qk:i*qk+qk])
		put16(b, FP32ToFP16(d))
	}
}

func decodeQ8_0(b []byte, x *[32]int32) {
	for j := range x {
		x[j] = int32(int8(b[2+j]))
	}
}

// ---- Q8_1

func dequantQ8_1(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk; i++ {
		b := src[i*36:]
		d := f16(b)
		for j := 0; j < qk; j++ {
			dst[i*qk+j] = float32(int8(b[4+j])) * d
		}
	}
}

// quantQ8_1Act is the activation quantizer: AVX2 quantize_row_q8_1, with
// s = fp16(d·Σq) computed in float32.
func quantQ8_1Act(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		b := dst[i*36 : i*36+36]
		d, sum := actQ8(b[4:], src[i*qk:i*qk+qk])
		put16(b, FP32ToFP16(d))
		put16(b[2:], FP32ToFP16(d*float32(sum)))
	}
}

func dotQ8_1(n int, w, act []byte) float32 { return dotLanes(n, w, 36, act, 36, blockQ8_1) }

func decodeQ8_1(b []byte, x *[32]int32) {
	for j := range x {
		x[j] = int32(int8(b[4+j]))
	}
}

// quantQ8_1Ref is quantize_row_q8_1_ref: roundf quants, s = fp16(Σq·d).
func quantQ8_1Ref(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk; i++ {
		x := src[i*qk : i*qk+qk]
		b := dst[i*36 : i*36+36]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		id := inv(d)
		put16(b, FP32ToFP16(d))
		sum := 0
		for j, v := range x {
			q := int8(roundAway(v * id))
			b[4+j] = uint8(q)
			sum += int(q)
		}
		put16(b[2:], FP32ToFP16(float32(sum)*d))
	}
}

// dotLanes is the AVX2 loop of ggml_vec_dot_{q4_0,q5_0,q8_0}_q8_0: per
// block, acc = fma(fp16(dw)·fp16(da), lane sums, acc); then hsum_float_8.
// Weight blocks are wb bytes with the fp16 scale first, activation blocks
// ab bytes with the fp16 scale first and the 32 quants last.
func dotLanes(n int, w []byte, wb int, act []byte, ab int, decode legacyBlock) float32 {
	var acc lanes8
	var x [32]int32
	for i := 0; i < n/qk; i++ {
		b, y := w[i*wb:], act[i*ab:]
		decode.decode(b, &x)
		var s [8]int32
		groupLanes(&s, &x, y[ab-qk:], 1, 1)
		acc.fmaInts(f16(b)*f16(y), &s)
	}
	return acc.hsum()
}

// dotLanesMin is the AVX2 loop of ggml_vec_dot_q4_1_q8_1 and q5_1_q8_1:
// dotLanes over unsigned quants plus summs = fma(fp16(m), fp16(s), summs)
// per block, returning hsum_float_8(acc) + summs.
func dotLanesMin(n int, w []byte, wb int, decode legacyBlock, act []byte) float32 {
	var acc lanes8
	var summs float32
	var x [32]int32
	for i := 0; i < n/qk; i++ {
		b, y := w[i*wb:], act[i*36:]
		summs = fma32(f16(b[2:]), f16(y[2:]), summs)
		decode.decode(b, &x)
		var s [8]int32
		groupLanes(&s, &x, y[4:], 1, 1)
		acc.fmaInts(f16(b)*f16(y), &s)
	}
	return acc.hsum() + summs
}

// legacyBlock names a legacy block layout for dotLanes. A switch rather
// than a function value keeps the decoded block on the stack (a call
// through a function value makes it escape), so dot products allocate
// nothing.
type legacyBlock uint8

const (
	blockQ4_0 legacyBlock = iota
	blockQ4_1
	blockQ5_0
	blockQ5_1
	blockQ8_0
	blockQ8_1
)

// decode unpacks the 32 quants of block b into x.
func (k legacyBlock) decode(b []byte, x *[32]int32) {
	switch k {
	case blockQ4_0:
		decodeQ4_0(b, x)
	case blockQ4_1:
		decodeQ4_1(b, x)
	case blockQ5_0:
		decodeQ5_0(b, x)
	case blockQ5_1:
		decodeQ5_1(b, x)
	case blockQ8_0:
		decodeQ8_0(b, x)
	case blockQ8_1:
		decodeQ8_1(b, x)
	}
}
