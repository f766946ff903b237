package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// tileOut sets up the output pointers of an eight-activation tile: R8
// out, R14 the output stride in bytes, R15 three strides; activation t
// is at R8 + t·R14 (R12 = R8 + 4·R14 for t >= 4, set by tileDst's caller).
func tileOut() {
	Load(Param("out"), R8)
	Load(Param("ostride"), R14)
	SHLQ(U8(2), R14)
	LEAQ(mi(R14, 0, R14, 2), R15)
}

// tileDst returns where activation t's dot of the current row goes.
func tileDst(t int) Mem {
	base := []Register{R8, R12}[t/4]
	switch t % 4 {
	case 0:
		return m(base, 0)
	case 1:
		return mi(base, 0, R14, 1)
	case 2:
		return mi(base, 0, R14, 2)
	}
	return mi(base, 0, R15, 1)
}

// q4KT8 is dotQ4_KT8AVX512: the Q4_K tile of eight activations (four
// pairs p: activations 2p in lanes 0..7, 2p+1 in lanes 8..15) against
// rows one at a time, each block's nibbles and scales unpacked once for
// the eight. The activations come packed by packQ8_KT8Z: per block (2560
// bytes), sub-block s of pair p's quants at 512p+64s (32 of each
// activation), the pair's da as [da0 ×8, da1 ×8] at 2048+64p and [da0 ×4,
// da1 ×4] at 2304+32p, its sums of 32 quants as [act0, act1] at 2432+32p.
//
// Registers: Z0..Z3 the sums' float accumulators of pairs 0..3, Y4..Y7
// their mins', Z24..Z31 the block's integer sums (two per pair: quads
// 0, 2 and 1, 3), Z8 the row's scales as int16 in every 128-bit lane, Z15
// the nibble mask, Z20..Z23 the controls that pair scales 2j, 2j+1, K1
// the odd words.
func q4KT8(k4Pair Mem) {
	const fn = "q4kt8"
	TEXT("dotQ4_KT8AVX512", NOSPLIT, "func(out *float32, ostride, rows int, w *byte, nb int, packed *byte)")
	Pragma("noescape")
	Doc("dotQ4_KT8AVX512 multiplies Q4_K rows with eight Q8_K activations packed by packQ8_KT8Z.")
	tileOut()
	Load(Param("rows"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("packed"), R11)

	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z15) // low nibble mask
	MOVL(U32(0xaaaaaaaa), EAX)
	KMOVD(EAX, K1) // the odd words
	for j := 0; j < 4; j++ {
		VBROADCASTI32X4(k4Pair.Offset(16*j), zr[20+j])
	}

	Label(label(fn, "row"))
	for p := 0; p < 4; p++ {
		VPXORD(zr[p], zr[p], zr[p])
	}
	for p := 0; p < 4; p++ {
		y := zr[4+p].AsY()
		VPXORD(y, y, y)
	}
	MOVQ(R11, RDI)
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	k4scales(RSI, RAX, RBX, RDX, R12, R13)
	VMOVQ(RAX, X8)
	VPMOVZXBW(X8, X8)
	VPERMQ(U8(0x44), Y8, Y8)
	VINSERTI64X4(U8(1), Y8, Z8, Z8) // scales as int16, in every 128-bit lane

	for j := 0; j < 4; j++ {
		VBROADCASTI32X8(m(RSI, 16+32*j), Z9)
		VPSRLW(U8(4), Z9, Z10)
		VPANDD(Z15, Z9, Z9)
		VPANDD(Z15, Z10, Z10)
		VPSHUFB(zr[20+j], Z8, Z11) // [sc(2j), sc(2j+1)] in every dword
		for p := 0; p < 4; p++ {
			// Pair p's part of sub-blocks 2j, 2j+1: each sub-block's
			// four-element sums (VPDPBUSD, lane l the elements 4l..4l+3
			// as in the AVX2 kernel), as int16 (|sum| <= 4·15·128), the
			// two sub-blocks' interleaved in each dword, times their
			// scales and added (VPDPWSSD); the first pair of sub-blocks
			// of each accumulator starts its sums.
			lo, hi := zr[12], zr[13]
			VPXORD(lo, lo, lo)
			VPXORD(hi, hi, hi)
			vpdpbusd(m(RDI, 512*p+128*j), Z9, lo)
			vpdpbusd(m(RDI, 512*p+128*j+64), Z10, hi)
			VPSLLD(U8(16), hi, hi)
			VPBLENDMW(hi, lo, K1, lo)
			if acc := zr[24+2*p+j%2]; j < 2 {
				VPMADDWD(Z11, lo, acc)
			} else {
				vpdpwssd(Z11, lo, acc)
			}
		}
	}

	VMOVQ(RBX, X9)
	VPMOVZXBW(X9, X9)
	VPERMQ(U8(0x44), Y9, Y18) // mins as int16, in both halves
	VMOVD(m(RSI, 0), X9)
	VCVTPH2PS(X9, X9) // [d, dmin]
	VBROADCASTSS(X9, Z16)
	VMOVSHDUP(X9, X10)
	VBROADCASTSS(X10, Y17)
	for p := 0; p < 4; p++ {
		// Pair p's block: its integer sums, fp32(d) in every lane of
		// Z16, fp32(dmin) in Y17, the mins in both halves of Y18.
		ilo, ihi := zr[24+2*p], zr[25+2*p]
		VPADDD(ihi, ilo, ilo)
		VCVTDQ2PS(ilo, ilo)
		VMULPS(m(RDI, 2048+64*p), Z16, Z19)
		VFMADD231PS(Z19, ilo, zr[p])
		VPMADDWD(m(RDI, 2432+32*p), Y18, Y13)
		VCVTDQ2PS(Y13, Y13)
		VMULPS(m(RDI, 2304+32*p), Y17, Y14)
		VFMADD231PS(Y14, Y13, zr[4+p].AsY())
	}

	ADDQ(U32(144), RSI)
	ADDQ(U32(2560), RDI)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "block")))

	LEAQ(mi(R8, 0, R14, 4), R12)
	for p := 0; p < 4; p++ {
		// Pair p's accumulators reduced as dotQ4_KAVX2 does.
		acc, macc := zr[p], zr[4+p]
		VEXTRACTF64X4(U8(1), acc, Y12)
		VEXTRACTF128(U8(1), macc.AsY(), X13)
		hsum8(acc.AsY(), acc.AsX(), X9)
		hsum4m(macc.AsX(), X10)
		VSUBSS(macc.AsX(), acc.AsX(), acc.AsX())
		VMOVSS(acc.AsX(), tileDst(2*p))
		hsum8(Y12, X12, X9)
		hsum4m(X13, X10)
		VSUBSS(X13, X12, X12)
		VMOVSS(X12, tileDst(2*p+1))
	}
	ADDQ(U32(4), R8)
	DECQ(R9)
	JNZ(LabelRef(label(fn, "row")))
	VZEROUPPER()
	RET()
}

// q6KTile is dotQ6_KT8AVX512 (pairs 4; q6KTR2 makes the tiles of 2, 3
// and 4 activations): the Q6_K tile of 2·pairs activations against rows
// one at a time, each block's quants and scales unpacked once for them
// all. The activations come packed by packQ6_KZ with as many pairs: per
// block (1088·pairs bytes), chunk c (quants 32c..32c+31) of pair p at
// 1024p+128c, the quants of both activations (64 bytes), then -32 times
// the sums of their quants 4l..4l+3 (l = 0..7) as int32 (32 bytes each);
// the pair's da as [da0 ×8, da1 ×8] at 1024·pairs+64p. A chunk's int32
// lanes are the AVX2 kernel's as in q6KTR2 (VPDPBUSD of q6 and a onto the
// offsets, VPDPWSSD with [sc, 0]). The rows, one stream, are prefetched
// ahead bytes ahead (four lines per block of 210 bytes): a tile of few
// activations does little more work per byte of weights than decode, and
// waits on memory as decode does without.
//
// Registers: Z16..Z19 the float accumulators of pairs 0..3, Z24..Z27 the
// block's integer sums (one chain a pair: integer sums are exact in any
// order), Z13 the row's scales as int16 in both halves, Z14 and Z15 the
// masks, Z20..Z23 the scale controls, R13 the prefetch distance.
func q6KTile(scaleLo Mem, pairs int) {
	n := 2 * pairs
	fn := fmt.Sprintf("q6kt%d", n)
	name := fmt.Sprintf("dotQ6_KT%dAVX512", n)
	TEXT(name, NOSPLIT, "func(out *float32, ostride, rows int, w *byte, nb int, packed *byte, ahead int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s multiplies Q6_K rows with %d Q8_K activations packed by packQ6_KZ,", name, n),
		"prefetching the rows ahead bytes ahead.")
	tileOut()
	Load(Param("rows"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("packed"), R11)
	Load(Param("ahead"), R13)

	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z14) // low nibble mask
	MOVL(U32(0x30303030), EAX)
	VPBROADCASTD(EAX, Z15) // high-bits mask
	for k := 0; k < 4; k++ {
		VBROADCASTI32X8(scaleLo.Offset(32*k), zr[20+k])
	}

	Label(label(fn, "row"))
	for p := 0; p < pairs; p++ {
		VPXORD(zr[16+p], zr[16+p], zr[16+p])
	}
	MOVQ(R11, RDI)
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	for l := 0; l < 4; l++ {
		PREFETCHT0(mi(RSI, 64*l, R13, 1))
	}
	VPMOVSXBW(m(RSI, 192), Y13)
	VINSERTI64X4(U8(1), Y13, Z13, Z13) // scales as int16, in both halves
	for h := 0; h < 2; h++ {
		VPERMQ(U8(0x44+0xaa*h), Z13, Z9)
		VBROADCASTI32X8(m(RSI, 128+32*h), Z10)
		VBROADCASTI32X8(m(RSI, 64*h), Z11)
		VBROADCASTI32X8(m(RSI, 64*h+32), Z12)
		for k := 0; k < 4; k++ {
			q6KQuants(k)
			VPSHUFB(zr[20+k], Z9, Z3) // [sc, 0] in each dword
			c := 4*h + k
			for p := 0; p < pairs; p++ {
				// Pair p's part of chunk c.
				VMOVDQU64(m(RDI, 1024*p+128*c+64), Z4)
				vpdpbusd(m(RDI, 1024*p+128*c), Z1, Z4)
				if c == 0 { // the first of its sums
					VPMADDWD(Z3, Z4, zr[24+p])
				} else {
					vpdpwssd(Z3, Z4, zr[24+p])
				}
			}
		}
	}

	VPBROADCASTW(m(RSI, 208), Y5)
	VCVTPH2PS(Y5, Z5)
	for p := 0; p < pairs; p++ {
		// Pair p's block: its integer sums, fp32(d) in every lane of Z5.
		ie := zr[24+p]
		VCVTDQ2PS(ie, ie)
		VMULPS(m(RDI, 1024*pairs+64*p), Z5, Z6)
		VFMADD231PS(Z6, ie, zr[16+p])
	}

	ADDQ(U32(210), RSI)
	ADDQ(U32(1088*pairs), RDI)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "block")))

	if pairs > 2 {
		LEAQ(mi(R8, 0, R14, 4), R12)
	}
	for p := 0; p < pairs; p++ {
		// Pair p's accumulator reduced as hsum_float_8.
		VMOVAPS(zr[16+p], Z0)
		VEXTRACTF64X4(U8(1), Z0, Y6)
		hsum8(Y0, X0, X1)
		VMOVSS(X0, tileDst(2*p))
		hsum8(Y6, X6, X1)
		VMOVSS(X6, tileDst(2*p+1))
	}
	ADDQ(U32(4), R8)
	DECQ(R9)
	JNZ(LabelRef(label(fn, "row")))
	VZEROUPPER()
	RET()
}

// q6KTR2 is dotQ6_KT{n}R2AVX512, n = tokens (2, 3 or 4): the Q6_K tile of
// n activations against pairs of rows, row 2p in lanes 0..7 of every zmm
// and row 2p+1 in lanes 8..15 as in dotQ6_KRows2AVX512, so that each
// block's quants and scales are unpacked once for two rows and n
// activations. The activations come packed by packQ6_KTD: per block
// (1024n+64 bytes), chunk c (quants 32c..32c+31) of activation t at
// 1024t+128c, its 32 quants twice (one copy per row), then -32 times the
// sums of its quants 4l..4l+3 (l = 0..7) as int32, twice; activation t's
// da at 1024n+4t. The pair's rows, one stream, are prefetched ahead bytes
// ahead (seven lines per block of the two rows).
//
// Each int32 lane l of a block's sum is the AVX2 kernel's (ggml's lane
// order), Σ_c sc_c·Σ (q6-32)·a over the lane's quants 4l..4l+3 of each
// chunk c, by another route: VPDPBUSD adds Σ q6·a to -32·Σ a, giving
// Σ (q6-32)·a (|.| <= 4·32·128, an int16), and VPDPWSSD multiplies it by
// sc_c, the high word of each dword times 0. Integer sums are exact in
// any order, so the lanes are the AVX2 kernel's, and the float step
// (d·da, one FMA a lane, the hsum) is its own; against VPMADDUBSW,
// VPSUBW, VPDPWSSD a chunk and activation this is one vector operation
// fewer (the offsets come in with a load).
//
// Registers: SI row 0 at the current block, BX row 1, R12 rowBytes, R13
// the prefetch pointer, DI the activations' block, Z16..Z19 the float
// accumulators of activations 0..3 (both rows), Z24..Z27 the block's
// integer sums of activations 0..3 (one chain each: integer sums are exact
// in any order), Z4..Z7 the chunk's sums, Z8 the rows' d, Z13 their
// scales as int16, Z14 and Z15 the masks, Z20..Z23 the scale controls.
func q6KTR2(scaleLo, gather Mem, tokens int) {
	fn := fmt.Sprintf("q6kt%dr2", tokens)
	name := fmt.Sprintf("dotQ6_KT%dR2AVX512", tokens)
	TEXT(name, NOSPLIT, "func(out *float32, ostride, pairs int, w *byte, nb, rowBytes int, packed *byte, ahead int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s multiplies pairs of Q6_K rows with %d Q8_K activations packed by packQ6_KTD,", name, tokens),
		"prefetching the rows ahead bytes ahead.")
	tileOut()
	Load(Param("pairs"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("rowBytes"), R12)
	Load(Param("packed"), R11)

	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z14) // low nibble mask
	MOVL(U32(0x30303030), EAX)
	VPBROADCASTD(EAX, Z15) // high-bits mask
	for k := 0; k < 4; k++ {
		VBROADCASTI32X8(scaleLo.Offset(32*k), zr[20+k])
	}

	Label(label(fn, "pair"))
	for t := 0; t < 4; t++ { // all four: reduceT4R2 reduces them all
		VPXORD(zr[16+t], zr[16+t], zr[16+t])
	}
	LEAQ(mi(RSI, 0, R12, 1), RBX)
	Load(Param("ahead"), R13)
	ADDQ(RSI, R13)
	MOVQ(R11, RDI)
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	for l := 0; l < 7; l++ {
		PREFETCHT0(m(R13, 64*l))
	}
	ADDQ(U32(420), R13)
	VPMOVSXBW(m(RSI, 192), Y13)
	VPMOVSXBW(m(RBX, 192), Y9)
	VINSERTI64X4(U8(1), Y9, Z13, Z13) // scales as int16, [row 0 | row 1]
	for h := 0; h < 2; h++ {
		VPERMQ(U8(0x44+0xaa*h), Z13, Z9)
		VMOVDQU(m(RSI, 128+32*h), Y10)
		VINSERTI64X4(U8(1), m(RBX, 128+32*h), Z10, Z10)
		VMOVDQU(m(RSI, 64*h), Y11)
		VINSERTI64X4(U8(1), m(RBX, 64*h), Z11, Z11)
		VMOVDQU(m(RSI, 64*h+32), Y12)
		VINSERTI64X4(U8(1), m(RBX, 64*h+32), Z12, Z12)
		for k := 0; k < 4; k++ {
			q6KQuants(k)
			VPSHUFB(zr[20+k], Z9, Z3) // [sc, 0] in each dword
			c := 4*h + k
			for t := 0; t < tokens; t++ {
				// Activation t's part of chunk c, for both rows.
				p := zr[4+t]
				VMOVDQU64(m(RDI, 1024*t+128*c+64), p)
				vpdpbusd(m(RDI, 1024*t+128*c), Z1, p)
				if c == 0 { // the first of its sums
					VPMADDWD(Z3, p, zr[24+t])
				} else {
					vpdpwssd(Z3, p, zr[24+t])
				}
			}
		}
	}

	Comment("fp32(d) of each row over its lanes: [d0 ×8, d1 ×8].")
	VPBROADCASTW(m(RSI, 208), X8)
	VPBROADCASTW(m(RBX, 208), X0)
	VINSERTI128(U8(1), X0, Y8, Y8)
	VCVTPH2PS(Y8, Z8)
	for t := 0; t < tokens; t++ {
		// Activation t's block: its integer sums times d·da.
		ie := zr[24+t]
		VCVTDQ2PS(ie, ie)
		VMULPS_BCST(m(RDI, 1024*tokens+4*t), Z8, Z0)
		VFMADD231PS(Z0, ie, zr[16+t])
	}

	ADDQ(U32(210), RSI)
	ADDQ(U32(210), RBX)
	ADDQ(U32(1024*tokens+64), RDI)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "block")))

	reduceT4R2(gather, tokens)
	ADDQ(U32(8), R8)
	MOVQ(RBX, RSI) // row 1 ends where the next pair starts
	DECQ(R9)
	JNZ(LabelRef(label(fn, "pair")))
	VZEROUPPER()
	RET()
}

// q6ScaleLo returns, for k in 0..3, the VPSHUFB control that puts int16
// scale 2k in the low word of each dword of the low 128-bit lane and scale
// 2k+1 in those of the high one (of each 256-bit half), zeros in the high
// words.
func q6ScaleLo() Mem {
	var q []uint64
	for k := uint64(0); k < 4; k++ {
		lo, hi := wordLow(2*k), wordLow(2*k+1)
		q = append(q, lo, lo, hi, hi)
	}
	return u64s("q6zScaleLo", q...)
}

// wordLow is 8 bytes of the VPSHUFB control that copies int16 word w of a
// 128-bit lane into the low words of two dwords and zeros their high ones.
func wordLow(w uint64) uint64 {
	b := 0x8080<<16 | (2*w+1)<<8 | 2*w
	return b | b<<32
}

// t4Gather is the VPERMPS index that puts reduceT4R2's eight sums in
// order, activation after activation, row 0 then row 1: the sum of
// activation j/2's row j%2 is in lane 4j of the reduced register, that of
// activation 2+j/2's row j%2 in lane 4j+1.
func t4Gather() Mem {
	return u64s("t4zGather", 4<<32|0, 12<<32|8, 5<<32|1, 13<<32|9, 0, 0, 0, 0)
}

// reduceT4R2 reduces the sums of four activations against a pair of rows,
// Z16..Z19 (activation t: row 0 in lanes 0..7, row 1 in 8..15), each of
// the eight as hsum_float_8 does ((x0+x4) ... as (u0+u2)+(u1+u3), u_i =
// x_i+x_{i+4}), the eight side by side, and stores those of the first
// tokens activations at tileDst(t) (row 0) and 4 bytes on (row 1).
// Clobbers Z0..Z3, Z10.
func reduceT4R2(gather Mem, tokens int) {
	Comment("The eight sums reduced side by side as hsum_float_8: u_i = x_i + x_(i+4).")
	for p := 0; p < 2; p++ {
		a, b := zr[16+2*p], zr[17+2*p]
		VSHUFF32X4(U8(0x88), b, a, Z0) // the low halves of a's rows, then b's
		VSHUFF32X4(U8(0xdd), b, a, Z1) // their high halves
		VADDPS(Z1, Z0, zr[2+p])
	}
	Comment("(u0+u2), (u1+u3) of every sum: Z2's in lanes 0, 1 of each 128 bits, Z3's in 2, 3.")
	VSHUFPS(U8(0x44), Z3, Z2, Z0)
	VSHUFPS(U8(0xee), Z3, Z2, Z1)
	VADDPS(Z1, Z0, Z0)
	Comment("(u0+u2) + (u1+u3): Z2's sum in lane 0 of each 128 bits, Z3's in lane 1.")
	VSHUFPS(U8(0x88), Z0, Z0, Z1)
	VSHUFPS(U8(0xdd), Z0, Z0, Z2)
	VADDPS(Z2, Z1, Z1)
	VMOVDQU32(gather, Z10)
	VPERMPS(Z1, Z10, Z0)
	VMOVLPS(X0, tileDst(0))
	VMOVHPS(X0, tileDst(1))
	if tokens > 2 {
		VEXTRACTF128(U8(1), Y0, X1)
		VMOVLPS(X1, tileDst(2))
	}
	if tokens > 3 {
		VMOVHPS(X1, tileDst(3))
	}
}
