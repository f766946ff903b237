//go:build amd64 && !purego

#include "textflag.h"

// func quantQ8_KAVX512(dst *byte, src *float32, nb int) int
//
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
TEXT ·quantQ8_KAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), R9
	XORQ R10, R10 // blocks done

	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31 // |x| mask
	MOVL $127, AX
	VPBROADCASTD AX, Z30
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z29
	MOVL $0x00010001, AX
	VPBROADCASTD AX, Z28 // int16 ones
	MOVL $2048, AX
	VPBROADCASTD AX, Z27 // 16·128, the bias of the unsigned sums
	VPXORD Z26, Z26, Z26

qkblock:
	CMPQ R10, R9
	JGE  qkend

	// amax bits in the low lane of X16.
	VPANDD (SI), Z31, Z16
	VPANDD 64(SI), Z31, Z17
	VPANDD 128(SI), Z31, Z18
	VPANDD 192(SI), Z31, Z19
	VPANDD 256(SI), Z31, Z20
	VPANDD 320(SI), Z31, Z21
	VPANDD 384(SI), Z31, Z22
	VPANDD 448(SI), Z31, Z23
	VPMAXUD Z17, Z16, Z16
	VPMAXUD Z19, Z18, Z18
	VPMAXUD Z21, Z20, Z20
	VPMAXUD Z23, Z22, Z22
	VPMAXUD Z18, Z16, Z16
	VPMAXUD Z22, Z20, Z20
	VPMAXUD Z20, Z16, Z16
	VPANDD 512(SI), Z31, Z17
	VPANDD 576(SI), Z31, Z18
	VPANDD 640(SI), Z31, Z19
	VPANDD 704(SI), Z31, Z20
	VPANDD 768(SI), Z31, Z21
	VPANDD 832(SI), Z31, Z22
	VPANDD 896(SI), Z31, Z23
	VPANDD 960(SI), Z31, Z24
	VPMAXUD Z18, Z17, Z17
	VPMAXUD Z20, Z19, Z19
	VPMAXUD Z22, Z21, Z21
	VPMAXUD Z24, Z23, Z23
	VPMAXUD Z19, Z17, Z17
	VPMAXUD Z23, Z21, Z21
	VPMAXUD Z21, Z17, Z17
	VPMAXUD Z17, Z16, Z16
	VEXTRACTI64X4 $1, Z16, Y17
	VPMAXUD Y17, Y16, Y16
	VEXTRACTI32X4 $1, Y16, X17
	VPMAXUD X17, X16, X16
	VPSHUFD $0x4e, X16, X17
	VPMAXUD X17, X16, X16
	VPSHUFD $0xb1, X16, X17
	VPMAXUD X17, X16, X16
	VMOVD X16, AX
	CMPL AX, $0x7f800000
	JAE  qkend // an infinity or a NaN: left to the caller
	TESTL AX, AX
	JZ   qkzero
	CMPL AX, $0x00800000
	JAE  qkfind
	JMP  qkend // amax subnormal (iscale may overflow): left to the caller

qkzero:

	// All zero: the block is zero.
	VMOVDQU64 Z26, (DI)
	VMOVDQU64 Z26, 64(DI)
	VMOVDQU64 Z26, 128(DI)
	VMOVDQU64 Z26, 192(DI)
	VMOVDQU64 Z26, 228(DI)
	JMP  qknext

qkfind:
	VPBROADCASTD X16, Z16
	XORQ BX, BX // byte offset of the group of 16 being searched

qkscan:
	VPANDD (SI)(BX*1), Z31, Z17
	VPCMPEQD Z16, Z17, K1
	KMOVW K1, AX
	TESTL AX, AX
	JNZ  qkfound
	ADDQ $64, BX
	JMP  qkscan

qkfound:
	TZCNTL AX, AX
	LEAQ (BX)(AX*4), BX
	VMOVSS (SI)(BX*1), X17 // mx
	MOVL $0xc2fe0000, AX   // -127
	VMOVD AX, X18
	VDIVSS X17, X18, X18 // iscale = -127/mx
	MOVL $0x3f800000, AX // 1
	VMOVD AX, X19
	VDIVSS X18, X19, X19 // d = 1/iscale
	VMOVSS X19, (DI)
	VBROADCASTSS X18, Z18

	// The quants, 16 at a time.
	XORQ BX, BX
	XORQ CX, CX

qkquant:
	VMULPS (SI)(BX*4), Z18, Z17
	VCVTPS2DQ Z17, Z17
	VPMINSD Z30, Z17, Z17
	VPMOVDB Z17, 4(DI)(BX*1)
	ADDQ $16, BX
	CMPQ BX, $256
	JLT  qkquant

	// bsums: each quant +128 as unsigned, summed by 8 (VPSADBW), the
	// halves of each 16 paired (VPMADDWD), less 16·128.
	VPXORD 4(DI), Z29, Z17
	VPXORD 68(DI), Z29, Z18
	VPXORD 132(DI), Z29, Z19
	VPXORD 196(DI), Z29, Z20
	VPSADBW Z26, Z17, Z17
	VPSADBW Z26, Z18, Z18
	VPSADBW Z26, Z19, Z19
	VPSADBW Z26, Z20, Z20
	VPMOVQW Z17, X17
	VPMOVQW Z18, X18
	VPMOVQW Z19, X19
	VPMOVQW Z20, X20
	VINSERTI32X4 $1, X18, Y17, Y17
	VINSERTI32X4 $1, X20, Y19, Y19
	VINSERTI64X4 $1, Y19, Z17, Z17
	VPMADDWD Z28, Z17, Z17
	VPSUBD Z27, Z17, Z17
	VPMOVDW Z17, 260(DI)

qknext:
	ADDQ $1024, SI
	ADDQ $292, DI
	INCQ R10
	JMP  qkblock

qkend:
	MOVQ R10, ret+24(FP)
	VZEROUPPER
	RET
