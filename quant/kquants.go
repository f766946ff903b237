package quant

import (
	"encoding/binary"
	"math"
)

// K-quants: 256-element super-blocks. Weight quantizers are ggml's
// quantize_row_qX_K_ref (what llama-quantize runs without an imatrix);
// Q8_K's quantizer is quantize_row_q8_K_ref, which is also what the x86 CPU
// backend uses for activations.
//
// Block layouts (little endian, byte offsets):
//
//	Q2_K  scales[16]@0 (low nibble scale, high nibble min) qs[64]@16 d@80 dmin@82
//	Q3_K  hmask[32]@0 qs[64]@32 scales[12]@96 (6-bit, packed) d@108
//	Q4_K  d@0 dmin@2 scales[12]@4 (6-bit scale+min ×8) qs[128]@16
//	Q5_K  d@0 dmin@2 scales[12]@4 qh[32]@16 qs[128]@48
//	Q6_K  ql[128]@0 qh[64]@128 scales[16]int8@192 d@208
//	Q8_K  d:f32@0 qs[256]int8@4 bsums[16]int16@260 (sums of 16 quants)

const qkK = 256

func init() {
	register(&Traits{Type: Q2_K, BlockSize: qkK, BlockBytes: 84, VecDot: Q8_K,
		Dequantize: dequantQ2_K, Quantize: quantQ2_K, Dot: dotQ2_K})
	register(&Traits{Type: Q3_K, BlockSize: qkK, BlockBytes: 110, VecDot: Q8_K,
		Dequantize: dequantQ3_K, Quantize: quantQ3_K, Dot: dotQ3_K})
	register(&Traits{Type: Q4_K, BlockSize: qkK, BlockBytes: 144, VecDot: Q8_K,
		Dequantize: dequantQ4_K, Quantize: quantQ4_K, Dot: dotQ4_K})
	register(&Traits{Type: Q5_K, BlockSize: qkK, BlockBytes: 176, VecDot: Q8_K,
		Dequantize: dequantQ5_K, Quantize: quantQ5_K, Dot: dotQ5_K})
	register(&Traits{Type: Q6_K, BlockSize: qkK, BlockBytes: 210, VecDot: Q8_K,
		Dequantize: dequantQ6_K, Quantize: quantQ6_K, Dot: dotQ6_K})
	register(&Traits{Type: Q8_K, BlockSize: qkK, BlockBytes: 292, VecDot: Q8_K,
		Dequantize: dequantQ8_K, Quantize: quantQ8_K, Dot: dotQ8_K})
}

// ---- element accessors: the quant of element e (0..255) of one block

func q2At(qs []byte, e int) int {
	nb, r := e/128, e%128
	return int(qs[32*nb+r%32]>>(2*(r/32))) & 3
}

// q3At returns the signed 3-bit quant (-4..3).
func q3At(b []byte, e int) int {
	nb, r := e/128, e%128
	j, l := r/32, r%32
	q := int(b[32+32*nb+l]>>(2*j)) & 3
	if b[l]>>(4*nb+j)&1 == 0 {
		q -= 4
	}
	return q
}

// q3Scale returns the signed 6-bit scale (-32..31) of sub-block j.
func q3Scale(sc []byte, j int) int {
	var s int
	if j < 8 {
		s = int(sc[j] & 0xF)
	} else {
		s = int(sc[j-8] >> 4)
	}
	s |= int(sc[8+j%4]>>(2*(j/4))&3) << 4
	return s - 32
}

func q4At(qs []byte, e int) int {
	c, r := e/64, e%64
	if r < 32 {
		return int(qs[32*c+r] & 0xF)
	}
	return int(qs[32*c+r-32] >> 4)
}

func q5At256(b []byte, e int) int {
	q := q4At(b[48:], e)
	return q | int(b[16+e%32]>>(e/32)&1)<<4
}

// q6At returns the signed 6-bit quant (-32..31).
func q6At(b []byte, e int) int {
	nb, r := e/128, e%128
	g, l := r/32, r%32
	v := b[64*nb+l+32*(g&1)]
	if g >= 2 {
		v >>= 4
	} else {
		v &= 0xF
	}
	h := b[128+32*nb+l] >> (2 * g) & 3
	return int(v|h<<4) - 32
}

// scaleMinK4 is ggml's get_scale_min_k4.
func scaleMinK4(j int, q []byte) (d, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// ---- Q2_K

func dequantQ2_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*84:]
		d, dmin := f16(b[80:]), f16(b[82:])
		for e := 0; e < qkK; e++ {
			sc := b[e/16]
			dl, ml := d*float32(sc&0xF), float32(dmin*float32(sc>>4))
			dst[i*qkK+e] = float32(dl*float32(q2At(b[16:], e))) - ml
		}
	}
}

func quantQ2_K(dst []byte, src []float32) {
	var L, Laux [qkK]uint8
	var weights [16]float32
	var mins, scales [16]float32
	const q4scale = 15
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : i*qkK+qkK]
		b := dst[i*84 : i*84+84]
		var maxScale, maxMin float32
		for j := 0; j < 16; j++ {
			for l := 0; l < 16; l++ {
				weights[l] = abs32(x[16*j+l])
			}
			scales[j] = makeQkx2Quants(16, 3, x[16*j:], weights[:], L[16*j:], Laux[:], &mins[j], -0.5, 0.1, 15, true)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := 0; j < 16; j++ {
				b[j] = uint8(nearestInt(iscale * scales[j]))
			}
			put16(b[80:], FP32ToFP16(maxScale/q4scale))
		} else {
			for j := 0; j < 16; j++ {
				b[j] = 0
			}
			put16(b[80:], FP32ToFP16(0))
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := 0; j < 16; j++ {
				b[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
			}
			put16(b[82:], FP32ToFP16(maxMin/q4scale))
		} else {
			put16(b[82:], FP32ToFP16(0))
		}
		for j := 0; j < 16; j++ {
			d := f16(b[80:]) * float32(b[j]&0xF)
			if d == 0 {
				continue
			}
			dm := float32(f16(b[82:]) * float32(b[j]>>4))
			for ii := 0; ii < 16; ii++ {
				l := nearestInt((x[16*j+ii] + dm) / d)
				L[16*j+ii] = uint8(max(0, min(3, l)))
			}
		}
		for j := 0; j < qkK; j += 128 {
			for l := 0; l < 32; l++ {
				b[16+j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
			}
		}
	}
}

// dotQ2_K is the AVX2 ggml_vec_dot_q2_K_q8_K: per block, first
// acc = fma(-yd·dmin, mins·bsums pairs, acc), then acc = fma(yd·d, lane
// sums, acc); hsum_float_8 at the end.
func dotQ2_K(n int, w, act []byte) float32 {
	var acc lanes8
	var x [qkK]int32
	for i := 0; i < n/qkK; i++ {
		b, y := w[i*84:], act[i*292:]
		yd := q8kD(y)
		var prod [8]int32
		for k := range prod {
			prod[k] = int32(b[2*k]>>4)*int32(q8kBsum(y, 2*k)) + int32(b[2*k+1]>>4)*int32(q8kBsum(y, 2*k+1))
		}
		acc.fmaInts(-yd*f16(b[82:]), &prod)
		for e := range x {
			x[e] = int32(q2At(b[16:], e))
		}
		s := kLanes(&x, y, func(j int) int32 { return int32(b[j] & 0xF) })
		acc.fmaInts(yd*f16(b[80:]), &s)
	}
	return acc.hsum()
}

// kLanes returns the eight lane sums of one K-quant block as the AVX2
// kernels build them: lane l adds, for each 32-element group g, the
// integer dot product of elements 32g+4l..32g+4l+3 times the scale of their
// 16-element sub-block (sc(2g) for l < 4, sc(2g+1) for l >= 4).
func kLanes(x *[qkK]int32, y []byte, sc func(j int) int32) [8]int32 {
	var s [8]int32
	for g := 0; g < qkK/32; g++ {
		groupLanes(&s, (*[32]int32)(x[32*g:32*g+32]), y[4+32*g:], sc(2*g), sc(2*g+1))
	}
	return s
}

// ---- Q3_K

func dequantQ3_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*110:]
		d := f16(b[108:])
		for e := 0; e < qkK; e++ {
			dl := d * float32(q3Scale(b[96:], e/16))
			dst[i*qkK+e] = dl * float32(q3At(b, e))
		}
	}
}

func quantQ3_K(dst []byte, src []float32) {
	var L [qkK]int8
	var scales [16]float32
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : i*qkK+qkK]
		b := dst[i*110 : i*110+110]
		var maxScale, amax float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQ3Quants(16, 4, x[16*j:], L[16*j:], true)
			if s := abs32(scales[j]); s > amax {
				amax = s
				maxScale = scales[j]
			}
		}
		sc := b[96:108]
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := 0; j < 16; j++ {
				l := int(int8(nearestInt(iscale * scales[j])))
				l = max(-32, min(31, l)) + 32
				if j < 8 {
					sc[j] = uint8(l & 0xF)
				} else {
					sc[j-8] |= uint8(l&0xF) << 4
				}
				l >>= 4
				sc[j%4+8] |= uint8(l << (2 * (j / 4)))
			}
			put16(b[108:], FP32ToFP16(1/iscale))
		} else {
			put16(b[108:], FP32ToFP16(0))
		}
		for j := 0; j < 16; j++ {
			d := f16(b[108:]) * float32(q3Scale(sc, j))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(x[16*j+ii] / d)
				L[16*j+ii] = int8(max(-4, min(3, l)) + 4)
			}
		}
		hmask := b[0:32]
		clear(hmask)
		m, hm := 0, uint8(1)
		for j := 0; j < qkK; j++ {
			if L[j] > 3 {
				hmask[m] |= hm
				L[j] -= 4
			}
			if m++; m == qkK/8 {
				m = 0
				hm <<= 1
			}
		}
		for j := 0; j < qkK; j += 128 {
			for l := 0; l < 32; l++ {
				b[32+j/4+l] = uint8(L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6)
			}
		}
	}
}

// dotQ3_K is the AVX2 ggml_vec_dot_q3_K_q8_K: acc = fma(yd·d, lane sums,
// acc) per block, then hsum_float_8.
func dotQ3_K(n int, w, act []byte) float32 {
	var acc lanes8
	var x [qkK]int32
	for i := 0; i < n/qkK; i++ {
		b, y := w[i*110:], act[i*292:]
		for e := range x {
			x[e] = int32(q3At(b, e))
		}
		s := kLanes(&x, y, func(j int) int32 { return int32(q3Scale(b[96:], j)) })
		acc.fmaInts(q8kD(y)*f16(b[108:]), &s)
	}
	return acc.hsum()
}

// ---- Q4_K and Q5_K share the 6-bit scale/min packing.

func packScalesK4(sc []byte, j int, ls, lm uint8) {
	if j < 4 {
		sc[j] = ls
		sc[j+4] = lm
	} else {
		sc[j+4] = ls&0xF | (lm&0xF)<<4
		sc[j-4] |= (ls >> 4) << 6
		sc[j] |= (lm >> 4) << 6
	}
}

// quantK4Scales runs the sub-block search of quantize_row_q4_K_ref /
// q5_K_ref and writes d, dmin and the packed scales at b[0:16]; it returns
// the final quants in L.
func quantK4Scales(b []byte, x []float32, L []uint8, nmax int, rmin float32, nstep int) {
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		var sumX2 float32
		for l := 0; l < 32; l++ {
			sumX2 += float32(x[32*j+l] * x[32*j+l])
		}
		avX := sqrt32(sumX2 / 32)
		for l := 0; l < 32; l++ {
			weights[l] = avX + abs32(x[32*j+l])
		}
		scales[j] = makeQkx2Quants(32, nmax, x[32*j:], weights[:], L[32*j:], Laux[:], &mins[j], rmin, 0.1, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := b[4:16]
	for j := 0; j < 8; j++ {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		packScalesK4(sc, j, ls, lm)
	}
	put16(b, FP32ToFP16(maxScale/63))
	put16(b[2:], FP32ToFP16(maxMin/63))
	for j := 0; j < 8; j++ {
		s, m := scaleMinK4(j, sc)
		d := f16(b) * float32(s)
		if d == 0 {
			continue
		}
		dm := float32(f16(b[2:]) * float32(m))
		for ii := 0; ii < 32; ii++ {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(nmax, l)))
		}
	}
}

func dequantQ4_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*144:]
		d, dmin := f16(b), f16(b[2:])
		for j := 0; j < 8; j++ {
			s, m := scaleMinK4(j, b[4:])
			d1, m1 := d*float32(s), float32(dmin*float32(m))
			for e := 32 * j; e < 32*j+32; e++ {
				dst[i*qkK+e] = float32(d1*float32(q4At(b[16:], e))) - m1
			}
		}
	}
}

func quantQ4_K(dst []byte, src []float32) {
	var L [qkK]uint8
	for i := 0; i < len(src)/qkK; i++ {
		b := dst[i*144 : i*144+144]
		clear(b[4:16])
		quantK4Scales(b, src[i*qkK:i*qkK+qkK], L[:], 15, -1, 20)
		for j := 0; j < qkK; j += 64 {
			for l := 0; l < 32; l++ {
				b[16+j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

// dotK4 is the shared body of the Q4_K and Q5_K dots; at returns the
// unsigned quant of element e and hdr is the block's first 16 bytes.
// k4Lanes returns the lane sums of a Q4_K/Q5_K block, whose quants x have
// one 6-bit scale per 32 elements.
func k4Lanes(x *[qkK]int32, hdr, y []byte) [8]int32 {
	return kLanes(x, y, func(j int) int32 {
		s, _ := scaleMinK4(j/2, hdr[4:])
		return int32(s)
	})
}

// k4Mins returns the four int32 lanes of _mm_madd_epi16(mins,
// hadd(bsums)): lane k = m(2k)·(b(4k)+b(4k+1)) + m(2k+1)·(b(4k+2)+b(4k+3)).
func k4Mins(hdr, y []byte) [4]int32 {
	var p [4]int32
	for k := range p {
		for h := 0; h < 2; h++ {
			j := 2*k + h
			_, m := scaleMinK4(j, hdr[4:])
			p[k] += int32(m) * int32(q8kBsum(y, 2*j)+q8kBsum(y, 2*j+1))
		}
	}
	return p
}

// ---- Q5_K

func dequantQ5_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*176:]
		d, dmin := f16(b), f16(b[2:])
		for j := 0; j < 8; j++ {
			s, m := scaleMinK4(j, b[4:])
			d1, m1 := d*float32(s), float32(dmin*float32(m))
			for e := 32 * j; e < 32*j+32; e++ {
				dst[i*qkK+e] = float32(d1*float32(q5At256(b, e))) - m1
			}
		}
	}
}

func quantQ5_K(dst []byte, src []float32) {
	var L [qkK]uint8
	for i := 0; i < len(src)/qkK; i++ {
		b := dst[i*176 : i*176+176]
		clear(b[4:16])
		quantK4Scales(b, src[i*qkK:i*qkK+qkK], L[:], 31, -0.5, 15)
		qh, ql := b[16:48], b[48:176]
		clear(qh)
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < qkK; n += 64 {
			for j := 0; j < 32; j++ {
				l1 := L[n+j]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				l2 := L[n+j+32]
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[n/2+j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
		}
	}
}

// dotQ5_K is the AVX2 ggml_vec_dot_q5_K_q8_K: per block a scalar
// summs = fma(-yd·dmin, Σ mins·bsums, summs) and acc = fma(yd·d, lane sums,
// acc); the result is hsum_float_8(acc) + summs.
func dotQ5_K(n int, w, act []byte) float32 {
	var acc lanes8
	var summs float32
	var x [qkK]int32
	for i := 0; i < n/qkK; i++ {
		b, y := w[i*176:], act[i*292:]
		yd := q8kD(y)
		m := k4Mins(b, y)
		summs = fma32(-yd*f16(b[2:]), float32((m[0]+m[1])+(m[2]+m[3])), summs)
		for e := range x {
			x[e] = int32(q5At256(b, e))
		}
		s := k4Lanes(&x, b, y)
		acc.fmaInts(yd*f16(b), &s)
	}
	return acc.hsum() + summs
}

// ---- Q6_K

func dequantQ6_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*210:]
		d := f16(b[208:])
		for e := 0; e < qkK; e++ {
			dst[i*qkK+e] = d * float32(int8(b[192+e/16])) * float32(q6At(b, e))
		}
	}
}

func quantQ6_K(dst []byte, src []float32) {
	var L [qkK]int8
	var scales [16]float32
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : i*qkK+qkK]
		b := dst[i*210 : i*210+210]
		var maxScale, maxAbsScale float32
		for ib := 0; ib < 16; ib++ {
			scale := makeQxQuants(16, 32, x[16*ib:], L[16*ib:], 1)
			scales[ib] = scale
			if a := abs32(scale); a > maxAbsScale {
				maxAbsScale = a
				maxScale = scale
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(b)
			continue
		}
		iscale := -128 / maxScale
		put16(b[208:], FP32ToFP16(1/iscale))
		for ib := 0; ib < 16; ib++ {
			b[192+ib] = uint8(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		for j := 0; j < 16; j++ {
			d := f16(b[208:]) * float32(int8(b[192+j]))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(x[16*j+ii] / d)
				L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
			}
		}
		ql, qh := b[0:128], b[128:192]
		for j := 0; j < qkK; j += 128 {
			for l := 0; l < 32; l++ {
				q1 := uint8(L[j+l]) & 0xF
				q2 := uint8(L[j+l+32]) & 0xF
				q3 := uint8(L[j+l+64]) & 0xF
				q4 := uint8(L[j+l+96]) & 0xF
				ql[j/2+l] = q1 | q3<<4
				ql[j/2+l+32] = q2 | q4<<4
				qh[j/4+l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 |
					(uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
			}
		}
	}
}

// dotQ6_K is the AVX2 ggml_vec_dot_q6_K_q8_K: acc = fma(yd·d, lane sums,
// acc) per block, then hsum_float_8.

// ---- Q8_K

func q8kD(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

func q8kBsum(b []byte, j int) int { return int(int16(le16(b[260+2*j:]))) }

func dequantQ8_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*292:]
		d := q8kD(b)
		for e := 0; e < qkK; e++ {
			dst[i*qkK+e] = d * float32(int8(b[4+e]))
		}
	}
}

// quantQ8_K is quantize_row_q8_K_ref: the element of largest magnitude (its
// sign kept) maps to -127, q = min(127, nearest_int(-127/max·x)),
// d = 1/iscale as float32, and bsums holds the sums of 16 quants. An
// all-zero block gets d = 0 and zero quants and sums.
func quantQ8_K(dst []byte, src []float32) {
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : i*qkK+qkK]
		b := dst[i*292 : i*292+292]
		var mx, amax float32
		for _, v := range x {
			if ax := abs32(v); ax > amax {
				amax = ax
				mx = v
			}
		}
		if amax == 0 {
			clear(b)
			continue
		}
		iscale := -127 / mx
		for j, v := range x {
			b[4+j] = uint8(int8(min(127, nearestInt(iscale*v))))
		}
		for j := 0; j < 16; j++ {
			sum := 0
			for l := 0; l < 16; l++ {
				sum += int(int8(b[4+16*j+l]))
			}
			put16(b[260+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
	}
}

func dotQ8_K(n int, w, act []byte) float32 {
	var sumf float32
	for i := 0; i < n/qkK; i++ {
		x, y := w[i*292:], act[i*292:]
		isum := 0
		for e := 0; e < qkK; e++ {
			isum += int(int8(x[4+e])) * int(int8(y[4+e]))
		}
		sumf += float32(q8kD(x) * q8kD(y) * float32(isum))
	}
	return sumf
}
