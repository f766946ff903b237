package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// quantQ8K is quantQ8_KAVX512 (quantize_avx512_amd64.s):
// quantize_row_q8_K (package quant's quantQ8_K) for nb blocks of 256
// floats, bit for bit: amax as the largest |x| (compared as the integer
// bits of |x|, which order finite floats as their values do), mx the
// first element of that magnitude, iscale = -127/mx, each quant the
// nearest integer to iscale·x, ties to even (VCVTPS2DQ in the default
// rounding mode, as the 1.5·2^23 trick rounds), capped at 127, d =
// 1/iscale and the 16 sums of 16 quants. A block of zeros is all zero. It
// stops at the first block with an infinity or a NaN, or whose amax is
// subnormal, which the caller quantizes in Go, and returns the number of
// blocks done.
func quantQ8K() {
	const fn = "qk"
	TEXT("quantQ8_KAVX512", NOSPLIT, "func(dst *byte, src *float32, nb int) int")
	Pragma("noescape")
	Doc("quantQ8_KAVX512 quantizes nb blocks of 256 floats at src to Q8_K at dst, as package quant",
		"does, up to the first block with an infinity, a NaN or a subnormal maximum; it returns the",
		"number of blocks done.")
	Load(Param("dst"), RDI)
	Load(Param("src"), RSI)
	Load(Param("nb"), R9)
	XORQ(R10, R10) // blocks done

	for _, c := range []struct {
		v uint32
		z VecPhysical
	}{
		{0x7fffffff, Z31}, // |x| mask
		{127, Z30},
		{0x80808080, Z29},
		{0x00010001, Z28}, // int16 ones
		{2048, Z27},       // 16·128, the bias of the unsigned sums
	} {
		MOVL(U32(c.v), EAX)
		VPBROADCASTD(EAX, c.z)
	}
	VPXORD(Z26, Z26, Z26)

	Label(label(fn, "block"))
	CMPQ(R10, R9)
	JGE(LabelRef(label(fn, "end")))

	Comment("amax bits in the low lane of X16.")
	for half := 0; half < 2; half++ {
		// Sixteen zmm of |x| bits, eight at a time, to a maximum.
		r := zr[16:24]
		if half == 1 {
			r = zr[17:25]
		}
		for i, z := range r {
			VPANDD(m(RSI, 512*half+64*i), Z31, z)
		}
		for step := 1; step < 8; step *= 2 {
			for i := 0; i+step < 8; i += 2 * step {
				VPMAXUD(r[i+step], r[i], r[i])
			}
		}
	}
	VPMAXUD(Z17, Z16, Z16)
	VEXTRACTI64X4(U8(1), Z16, Y17)
	VPMAXUD(Y17, Y16, Y16)
	VEXTRACTI32X4(U8(1), Y16, X17)
	VPMAXUD(X17, X16, X16)
	VPSHUFD(U8(0x4e), X16, X17)
	VPMAXUD(X17, X16, X16)
	VPSHUFD(U8(0xb1), X16, X17)
	VPMAXUD(X17, X16, X16)
	VMOVD(X16, EAX)
	CMPL(EAX, U32(0x7f800000))
	JAE(LabelRef(label(fn, "end"))) // an infinity or a NaN: left to the caller
	TESTL(EAX, EAX)
	JZ(LabelRef(label(fn, "zero")))
	CMPL(EAX, U32(0x00800000))
	JAE(LabelRef(label(fn, "find")))
	JMP(LabelRef(label(fn, "end"))) // amax subnormal (iscale may overflow): left to the caller

	Label(label(fn, "zero"))
	Comment("All zero: the block is zero.")
	for _, off := range []int{0, 64, 128, 192, 228} {
		VMOVDQU64(Z26, m(RDI, off))
	}
	JMP(LabelRef(label(fn, "next")))

	Label(label(fn, "find"))
	VPBROADCASTD(X16, Z16)
	XORQ(RBX, RBX) // byte offset of the group of 16 being searched

	Label(label(fn, "scan"))
	VPANDD(mi(RSI, 0, RBX, 1), Z31, Z17)
	VPCMPEQD(Z16, Z17, K1)
	KMOVW(K1, EAX)
	TESTL(EAX, EAX)
	JNZ(LabelRef(label(fn, "found")))
	ADDQ(U32(64), RBX)
	JMP(LabelRef(label(fn, "scan")))

	Label(label(fn, "found"))
	TZCNTL(EAX, EAX)
	LEAQ(mi(RBX, 0, RAX, 4), RBX)
	VMOVSS(mi(RSI, 0, RBX, 1), X17) // mx
	MOVL(U32(0xc2fe0000), EAX)      // -127
	VMOVD(EAX, X18)
	VDIVSS(X17, X18, X18)      // iscale = -127/mx
	MOVL(U32(0x3f800000), EAX) // 1
	VMOVD(EAX, X19)
	VDIVSS(X18, X19, X19) // d = 1/iscale
	VMOVSS(X19, m(RDI, 0))
	VBROADCASTSS(X18, Z18)

	Comment("The quants, 16 at a time.")
	XORQ(RBX, RBX)
	Label(label(fn, "quant"))
	VMULPS(mi(RSI, 0, RBX, 4), Z18, Z17)
	VCVTPS2DQ(Z17, Z17)
	VPMINSD(Z30, Z17, Z17)
	VPMOVDB(Z17, mi(RDI, 4, RBX, 1))
	ADDQ(U32(16), RBX)
	CMPQ(RBX, U32(256))
	JLT(LabelRef(label(fn, "quant")))

	Comment("bsums: each quant +128 as unsigned, summed by 8 (VPSADBW), the",
		"halves of each 16 paired (VPMADDWD), less 16·128.")
	for i := 0; i < 4; i++ {
		VPXORD(m(RDI, 4+64*i), Z29, zr[17+i])
	}
	for i := 0; i < 4; i++ {
		VPSADBW(Z26, zr[17+i], zr[17+i])
	}
	for i := 0; i < 4; i++ {
		VPMOVQW(zr[17+i], zr[17+i].AsX())
	}
	VINSERTI32X4(U8(1), X18, Y17, Y17)
	VINSERTI32X4(U8(1), X20, Y19, Y19)
	VINSERTI64X4(U8(1), Y19, Z17, Z17)
	VPMADDWD(Z28, Z17, Z17)
	VPSUBD(Z27, Z17, Z17)
	VPMOVDW(Z17, m(RDI, 260))

	Label(label(fn, "next"))
	ADDQ(U32(1024), RSI)
	ADDQ(U32(292), RDI)
	INCQ(R10)
	JMP(LabelRef(label(fn, "block")))

	Label(label(fn, "end"))
	Store(R10, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
