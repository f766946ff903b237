package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The avx512 Q4_0x8 tile of eight activations (q40x8_avx512_amd64.s):
// per (row, activation) the arithmetic of the AVX2 Q4_0x8 kernel
// (q4_0x8_amd64.s): VPDPBUSD forms its exact integer sums, lane r of a
// group's 8 lanes being row r, and each block adds fma(float(isum − 8·Σa),
// dw·da, acc) in the same lanes. A zmm holds two groups of 8 rows (the
// second nb·144 bytes on, R13), as in the hand-written four-activation
// tile of avx512_amd64.s, whose steps x40Load and x40Tok repeat.

// x40Load loads the block at SI of both groups: the rows' scales as
// float32 in Z4, chunk c's low nibbles (quants 4c..4c+3 of each row,
// unsigned q+8) in Z(16+2c), its high ones (16+4c..19+4c) in Z(17+2c).
func x40Load() {
	VMOVDQU(m(RSI, 0), X4)
	VINSERTI128(U8(1), mi(RSI, 0, R13, 1), Y4, Y4)
	VCVTPH2PS(Y4, Z4)
	for c := 0; c < 4; c++ {
		lo, hi := zr[16+2*c], zr[17+2*c]
		VMOVDQU64(m(RSI, 16+32*c), lo.AsY())
		VINSERTI64X4(U8(1), mi(RSI, 16+32*c, R13, 1), lo, lo)
		VPSRLW(U8(4), lo, hi)
		VPANDD(Z31, lo, lo)
		VPANDD(Z31, hi, hi)
	}
}

// x40Tok accumulates into acc the block of one activation, prepared at
// base (q4_0x8TokBlock bytes: 32 quants, da as float32, 8·Σa as int32),
// against the block x40Load loaded; low and high nibbles sum in two
// chains, Z5 and Z6.
func x40Tok(base Mem, acc Op) {
	VPXORD(Z5, Z5, Z5)
	VPXORD(Z6, Z6, Z6)
	for c := 0; c < 4; c++ {
		raw("VPDPBUSD.BCST", base.Offset(4*c), zr[16+2*c], Z5)
		raw("VPDPBUSD.BCST", base.Offset(16+4*c), zr[17+2*c], Z6)
	}
	VPADDD(Z6, Z5, Z5)
	VPSUBD_BCST(base.Offset(36), Z5, Z5)
	VCVTDQ2PS(Z5, Z5)
	VMULPS_BCST(base.Offset(32), Z4, Z6)
	VFMADD231PS(Z6, Z5, acc)
}

// q40x8T8 is dotQ4_0x8T8AVX512: eight activations (packed by
// packQ4_0x8TZ: activation t's prepQ4_0x8 form at t·nb·40) against pairs
// of groups of 8 rows, each block's nibbles unpacked once for the eight.
//
// Registers: DI activations 0..3 at the current block, BX 4..7, R14
// their stride, R15 three strides; Z0..Z3 and Z24..Z27 the accumulators
// of activations 0..7; R8 out (activation t at t·R12), AX four
// activations on.
func q40x8T8() {
	const fn = "x40t8"
	TEXT("dotQ4_0x8T8AVX512", NOSPLIT, "func(out *float32, ostride, pairs int, w *byte, nb int, packed *byte)")
	Pragma("noescape")
	Doc("dotQ4_0x8T8AVX512 multiplies pairs of groups of 8 Q4_0x8 rows with eight Q8_0 activations",
		"packed by packQ4_0x8TZ.")
	Load(Param("out"), R8)
	Load(Param("ostride"), R12)
	SHLQ(U8(2), R12)
	LEAQ(mi(R12, 0, R12, 2), RDX)
	Load(Param("pairs"), R9)
	Load(Param("w"), RSI)
	Load(Param("nb"), R10)
	Load(Param("packed"), R11)
	MOVQ(R10, R13)
	IMUL3Q(U32(144), R13, R13)
	MOVQ(R10, R14)
	IMUL3Q(U32(40), R14, R14) // activation stride
	LEAQ(mi(R14, 0, R14, 2), R15)
	MOVL(U32(0x0f0f0f0f), EAX)
	VPBROADCASTD(EAX, Z31)

	accs := []VecPhysical{Z0, Z1, Z2, Z3, Z24, Z25, Z26, Z27}
	Label(label(fn, "pair"))
	for _, a := range accs {
		VPXORD(a, a, a)
	}
	MOVQ(R11, RDI)
	LEAQ(mi(R11, 0, R14, 4), RBX)
	MOVQ(R10, RCX)

	Label(label(fn, "block"))
	x40Load()
	for t, a := range accs {
		base := []Register{RDI, RBX}[t/4]
		var src Mem
		switch t % 4 {
		case 0:
			src = m(base, 0)
		case 1:
			src = mi(base, 0, R14, 1)
		case 2:
			src = mi(base, 0, R14, 2)
		case 3:
			src = mi(base, 0, R15, 1)
		}
		x40Tok(src, a)
	}
	ADDQ(U32(144), RSI)
	ADDQ(U32(40), RDI)
	ADDQ(U32(40), RBX)
	DECQ(RCX)
	JNZ(LabelRef(label(fn, "block")))

	LEAQ(mi(R8, 0, R12, 4), RAX)
	for t, a := range accs {
		base := []Register{R8, RAX}[t/4]
		var dst Mem
		switch t % 4 {
		case 0:
			dst = m(base, 0)
		case 1:
			dst = mi(base, 0, R12, 1)
		case 2:
			dst = mi(base, 0, R12, 2)
		case 3:
			dst = mi(base, 0, RDX, 1)
		}
		VMOVUPS(a, dst)
	}
	ADDQ(U32(64), R8)
	ADDQ(R13, RSI) // past the second group
	DECQ(R9)
	JNZ(LabelRef(label(fn, "pair")))
	VZEROUPPER()
	RET()
}
