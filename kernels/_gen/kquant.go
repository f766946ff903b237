package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The avx512 tier's Q4_K and Q6_K kernels (kquant_avx512_amd64.s). Per
// (row, activation) each computes exactly what the AVX2 kernels of
// q4_k_amd64.s and q6_k_amd64.s compute: the eight int32 lanes of the
// block's integer sum (lane l: the elements 4l..4l+3 of every 32 quants,
// each weighted by its sub-block's scale; exact, so the order of the
// integer additions is free), converted to float and fma'd into an 8-lane
// accumulator with the block's float32 scale product, the mins' products
// of Q4_K into a 4-lane one, and the same reductions at the end. A zmm
// holds two 8-lane accumulators: two rows (decode) or two activations
// (tiles). VPDPWSSD does the AVX2 kernels' VPMADDWD and VPADDD in one
// instruction (the same int32 sums, without saturation).

// zr returns Z registers n, n+1, ...
var zr = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

// kquantData emits the tables of the kernels.
func kquantData() (dIdx, mIdx, q6Shuf, k4Pair Mem) {
	// VPERMPS indices that spread [d, dmin, d', dmin'] over the lanes of
	// two rows: d to lanes 0..7 and d' to 8..15; dmin to lanes 0..3 and
	// dmin' to 4..7.
	dIdx = u64s("k4zDIdx", append(repeat(4, 0), repeat(4, 0x0000000200000002)...)...)
	mIdx = u64s("k4zMIdx", append(repeat(2, 0x0000000100000001), repeat(2, 0x0000000300000003)...)...)
	// For pair k, the VPSHUFB control that puts int16 scale 2k in the low
	// 128-bit lane and scale 2k+1 in the high one (of each 256-bit half),
	// as q6kScaleShuf does for a ymm.
	var q6 []uint64
	for k := uint64(0); k < 4; k++ {
		lo, hi := wordBroadcast(2*k), wordBroadcast(2*k+1)
		q6 = append(q6, lo, lo, hi, hi)
	}
	q6Shuf = u64s("q6zScaleShuf", q6...)
	// For j in 0..3, the VPSHUFB control (16 bytes) that copies int16
	// words 2j, 2j+1 of a 128-bit lane into each of its dwords.
	var pair []uint64
	for j := uint64(0); j < 4; j++ {
		d := (4*j+3)<<24 | (4*j+2)<<16 | (4*j+1)<<8 | 4*j
		pair = append(pair, d|d<<32, d|d<<32)
	}
	k4Pair = u64s("k4zPairShuf", pair...)
	return
}

// wordBroadcast is 8 bytes of the VPSHUFB control that copies int16 word
// w of a 128-bit lane into four words.
func wordBroadcast(w uint64) uint64 {
	b := (2*w+1)<<8 | 2*w
	return b | b<<16 | b<<32 | b<<48
}

// q4KRows2 is dotQ4_KRows2AVX512: pairs of rows against one activation.
//
// Registers: SI row 0 at the current block, BX row 1, R10 the prefetch
// pointer (ahead bytes past the pair's start, a multiple of 2·rowBytes),
// R15 rowBytes, DI the activation block, Z0 the sums' accumulators of both
// rows, Y13 the mins' (lanes 0..3 row 0, 4..7 row 1), Y15 the block's
// bsums summed in 32s (both halves), X11 da.
func q4KRows2(dIdx, mIdx Mem) {
	const fn = "q4kr"
	TEXT("dotQ4_KRows2AVX512", NOSPLIT, "func(out *float32, pairs int, w *byte, nb, rowBytes int, act *byte, ahead int)")
	Pragma("noescape")
	Doc("dotQ4_KRows2AVX512 multiplies pairs of Q4_K rows (2p, 2p+1 at w + (2p+i)·rowBytes) with a Q8_K",
		"activation: row 2p in lanes 0..7 of every zmm, row 2p+1 in lanes 8..15.")
	Load(Param("out"), R8)
	Load(Param("pairs"), R9)
	Load(Param("w"), RSI)
	Load(Param("rowBytes"), R15)
	Load(Param("act"), R11)

	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z14) // low nibble mask
	for s := 0; s < 8; s++ {
		VBROADCASTI32X8(global("k4ScaleShuf", 32*s), zr[16+s])
	}
	VMOVDQU32(dIdx, Z24)
	VMOVDQU32(mIdx, Y25)

	Label(label(fn, "pair"))
	VPXORD(Z0, Z0, Z0)
	VPXORD(Y13, Y13, Y13)
	LEAQ(mi(RSI, 0, R15, 1), RBX)
	Load(Param("ahead"), R10)
	ADDQ(RSI, R10)
	MOVQ(R11, RDI)
	Load(Param("nb"), RCX)

	Label(label(fn, "block"))
	for l := 0; l < 5; l++ {
		PREFETCHT0(m(R10, 64*l))
	}
	ADDQ(U32(288), R10)

	Comment("bsums summed in 32s, in both halves of Y15.")
	VMOVDQU(m(RDI, 260), Y3)
	VEXTRACTI128(U8(1), Y3, X4)
	VPHADDW(X4, X3, X15)
	VINSERTI128(U8(1), X15, Y15, Y15)

	Comment("Scales and mins of both rows.")
	k4scales(RSI, RAX, R14, RDX, R12, R13)
	VMOVQ(RAX, X1)
	VPMOVZXBW(X1, X1)
	VPERMQ(U8(0x44), Y1, Y1)
	VMOVQ(R14, X2)
	VPMOVZXBW(X2, X2)
	k4scales(RBX, RAX, R14, RDX, R12, R13)
	VMOVQ(RAX, X3)
	VPMOVZXBW(X3, X3)
	VPERMQ(U8(0x44), Y3, Y3)
	VINSERTI64X4(U8(1), Y3, Z1, Z12)
	VMOVQ(R14, X4)
	VPMOVZXBW(X4, X4)
	VINSERTI128(U8(1), X4, Y2, Y2)
	VPMADDWD(Y15, Y2, Y2)
	VCVTDQ2PS(Y2, Y2)

	Comment("[da·d, da·dmin] of both rows, spread over their lanes.")
	VMOVD(m(RSI, 0), X5)
	VPINSRD(U8(1), m(RBX, 0), X5, X5)
	VCVTPH2PS(X5, X5)
	VBROADCASTSS(m(RDI, 0), X11)
	VMULPS(X11, X5, X5)
	VPERMPS(Z5, Z24, Z6) // [da·d ×8 | da·d' ×8]
	VPERMPS(Y5, Y25, Y5) // [da·dmin ×4 | da·dmin' ×4]
	VFMADD231PS(Y5, Y2, Y13)

	for j := 0; j < 4; j++ {
		// Sub-blocks 2j, 2j+1 of both rows: the nibbles of 32 bytes of
		// each, the activation's 64 quants broadcast, the scales of
		// both rows in Z12 (int16, [row 0 ×2 | row 1 ×2] per 128-bit
		// lane).
		VMOVDQU(m(RSI, 16+32*j), Y1)
		VINSERTI64X4(U8(1), m(RBX, 16+32*j), Z1, Z1)
		VPSRLW(U8(4), Z1, Z2)
		VPANDD(Z14, Z1, Z1)
		VPANDD(Z14, Z2, Z2)
		VBROADCASTI32X8(m(RDI, 4+64*j), Z3)
		VBROADCASTI32X8(m(RDI, 36+64*j), Z4)
		VPMADDUBSW(Z3, Z1, Z1)
		VPMADDUBSW(Z4, Z2, Z2)
		VPSHUFB(zr[16+2*j], Z12, Z3)
		VPSHUFB(zr[17+2*j], Z12, Z4)
		if j == 0 { // the first of the sums
			VPMADDWD(Z3, Z1, Z7)
			VPMADDWD(Z4, Z2, Z8)
		} else {
			vpdpwssd(Z3, Z1, Z7)
			vpdpwssd(Z4, Z2, Z8)
		}
	}
	VPADDD(Z8, Z7, Z7)
	VCVTDQ2PS(Z7, Z7)
	VFMADD231PS(Z6, Z7, Z0)

	ADDQ(U32(144), RSI)
	ADDQ(U32(144), RBX)
	ADDQ(U32(292), RDI)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "block")))

	VEXTRACTF64X4(U8(1), Z0, Y9)
	VEXTRACTF128(U8(1), Y13, X10)
	hsum8(Y0, X0, X1)
	hsum4m(X13, X2)
	VSUBSS(X13, X0, X0)
	VMOVSS(X0, m(R8, 0))
	hsum8(Y9, X9, X1)
	hsum4m(X10, X2)
	VSUBSS(X10, X9, X9)
	VMOVSS(X9, m(R8, 4))
	ADDQ(U32(8), R8)
	MOVQ(RBX, RSI) // row 1 ends where the next pair starts
	DECQ(R9)
	JNZ(LabelRef(label(fn, "pair")))
	VZEROUPPER()
	RET()
}

// q6KHalfR does half h (128 quants) of both rows (SI, BX), the scales of
// both in Z13, into Z7 and Z8.
func q6KHalfR(h int) {
	VPERMQ(U8(0x44+0xaa*h), Z13, Z9)
	VMOVDQU(m(RSI, 128+32*h), Y10)
	VINSERTI64X4(U8(1), m(RBX, 128+32*h), Z10, Z10)
	VMOVDQU(m(RSI, 64*h), Y11)
	VINSERTI64X4(U8(1), m(RBX, 64*h), Z11, Z11)
	VMOVDQU(m(RSI, 64*h+32), Y12)
	VINSERTI64X4(U8(1), m(RBX, 64*h+32), Z12, Z12)
	for k := 0; k < 4; k++ {
		q6KQuants(k)
		// Quants 32k..32k+31 of half h: the activation's quants and
		// prepared offsets broadcast, into Z7 (k even) or Z8.
		VBROADCASTI32X8(m(RDI, 4+128*h+32*k), Z3)
		VBROADCASTI32X8(m(RDX, 128*h+32*k), Z4)
		VPMADDUBSW(Z3, Z1, Z1)
		VPSUBW(Z4, Z1, Z1)
		VPSHUFB(zr[24+k], Z9, Z3)
		if h == 0 && k < 2 { // the first of its sums
			VPMADDWD(Z3, Z1, zr[7+k%2])
		} else {
			vpdpwssd(Z3, Z1, zr[7+k%2])
		}
	}
}

// q6KQuants sets Z1 to quants 32k..32k+31 (6 bits each) of the half of
// the rows in Z10 (qh), Z11 and Z12 (ql): their low 4 bits from ql (Z11
// for k even, Z12 odd; high nibbles for k >= 2), their bits 4, 5 from qh's
// bits 2k, 2k+1, merged by one VPTERNLOGD (Z15 the high-bits mask).
// Clobbers Z2.
func q6KQuants(k int) {
	ql := []VecPhysical{Z11, Z12}[k%2]
	if k < 2 {
		VPANDD(Z14, ql, Z1)
	} else {
		VPSRLW(U8(4), ql, Z1)
		VPANDD(Z14, Z1, Z1)
	}
	hi := Z2
	switch k {
	case 0:
		VPSLLW(U8(4), Z10, Z2)
	case 1:
		VPSLLW(U8(2), Z10, Z2)
	case 2:
		hi = Z10
	case 3:
		VPSRLW(U8(2), Z10, Z2)
	}
	// Z1 = Z15 ? hi : Z1, bit by bit: imm8 bit 4a+2b+c is the result
	// for Z1 bit a, hi bit b, Z15 bit c.
	VPTERNLOGD(U8(0xd8), Z15, hi, Z1)
}

// q6KRows2 is dotQ6_KRows2AVX512: pairs of rows against one activation
// and its offsets prepared by prepQ6_K.
//
// Registers: SI row 0 at the current block, BX row 1, R13 the prefetch
// pointer (ahead bytes past the pair's start, a multiple of 2·rowBytes),
// R15 rowBytes, DI the activation block, DX its prepared offsets, Z0 the
// accumulators of both rows.
func q6KRows2(q6Shuf Mem) {
	const fn = "q6kr"
	TEXT("dotQ6_KRows2AVX512", NOSPLIT, "func(out *float32, pairs int, w *byte, nb, rowBytes int, act, aux *byte, ahead int)")
	Pragma("noescape")
	Doc("dotQ6_KRows2AVX512 multiplies pairs of Q6_K rows with a Q8_K activation, aux its offsets",
		"prepared by prepQ6_K: row 2p in lanes 0..7 of every zmm, row 2p+1 in lanes 8..15.")
	Load(Param("out"), R8)
	Load(Param("pairs"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("rowBytes"), R15)
	Load(Param("act"), R11)
	Load(Param("aux"), R12)

	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z14) // low nibble mask
	MOVL(U32(0x30303030), EAX)
	VPBROADCASTD(EAX, Z15) // high-bits mask
	for k := 0; k < 4; k++ {
		VBROADCASTI32X8(q6Shuf.Offset(32*k), zr[24+k])
	}

	Label(label(fn, "pair"))
	VPXORD(Z0, Z0, Z0)
	LEAQ(mi(RSI, 0, R15, 1), RBX)
	Load(Param("ahead"), R13)
	ADDQ(RSI, R13)
	MOVQ(R11, RDI)
	MOVQ(R12, RDX)
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	for l := 0; l < 7; l++ {
		PREFETCHT0(m(R13, 64*l))
	}
	ADDQ(U32(420), R13)

	VPMOVSXBW(m(RSI, 192), Y13)
	VPMOVSXBW(m(RBX, 192), Y9)
	VINSERTI64X4(U8(1), Y9, Z13, Z13) // scales as int16, [row 0 | row 1]
	q6KHalfR(0)
	q6KHalfR(1)
	VPADDD(Z8, Z7, Z7)
	VCVTDQ2PS(Z7, Z7)

	Comment("da·d of each row, as the AVX2 kernel rounds it, over its lanes.")
	MOVWLZX(m(RSI, 208), EAX)
	VMOVD(EAX, X5)
	VCVTPH2PS(X5, X5)
	VMULSS(m(RDI, 0), X5, X5)
	MOVWLZX(m(RBX, 208), EAX)
	VMOVD(EAX, X6)
	VCVTPH2PS(X6, X6)
	VMULSS(m(RDI, 0), X6, X6)
	VBROADCASTSS(X5, Z5)
	VBROADCASTSS(X6, Y6)
	VINSERTF64X4(U8(1), Y6, Z5, Z5)
	VFMADD231PS(Z5, Z7, Z0)

	ADDQ(U32(210), RSI)
	ADDQ(U32(210), RBX)
	ADDQ(U32(292), RDI)
	ADDQ(U32(256), RDX)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "block")))

	VEXTRACTF64X4(U8(1), Z0, Y6)
	hsum8(Y0, X0, X1)
	VMOVSS(X0, m(R8, 0))
	hsum8(Y6, X6, X1)
	VMOVSS(X6, m(R8, 4))
	ADDQ(U32(8), R8)
	MOVQ(RBX, RSI) // row 1 ends where the next pair starts
	DECQ(R9)
	JNZ(LabelRef(label(fn, "pair")))
	VZEROUPPER()
	RET()
}
