//go:build amd64 && !purego

#include "textflag.h"

// func prepRotX8AVX2(dst, act *byte, nb int)
//
// prepRotX8 (rotx8.go) with AVX2 and F16C, nb ≥ 1 blocks of 64 elements
// (two Q8_0 blocks of 34 bytes in, rotX8PrepBlock = 88 bytes out): the
// dwords of the two halves' quants interleaved (VPUNPCK{L,H}DQ, then
// VPERM2I128 puts the 128-bit lanes in order), −128·Σq of each half's
// sub-blocks 0 and 1 (VPSADBW of q+128 with zero gives Σq+1024 per 8
// bytes, so −128·Σq = 2048·128 − 128·(sum of two)), and the halves' d
// as float32 (VCVTPH2PS; exact, as quant.FP16ToFP32).
TEXT ·prepRotX8AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ act+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL $0x80808080, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $262144, AX
	VMOVD AX, X14
	VPBROADCASTD X14, X14
	VPXOR Y13, Y13, Y13

block:
	VMOVDQU 2(SI), Y1
	VMOVDQU 36(SI), Y2
	VPUNPCKLDQ Y2, Y1, Y3
	VPUNPCKHDQ Y2, Y1, Y4
	VPERM2I128 $0x20, Y4, Y3, Y5
	VPERM2I128 $0x31, Y4, Y3, Y6
	VMOVDQU Y5, 0(DI)
	VMOVDQU Y6, 32(DI)
	VPXOR Y15, Y1, Y1
	VPXOR Y15, Y2, Y2
	VPSADBW Y13, Y1, Y1
	VPSADBW Y13, Y2, Y2
	VPUNPCKLQDQ Y2, Y1, Y3
	VPUNPCKHQDQ Y2, Y1, Y4
	VPADDQ Y4, Y3, Y3
	VPSHUFD $0x08, Y3, Y3
	VPERMQ $0x08, Y3, Y3
	VPSLLD $7, X3, X3
	VPSUBD X3, X14, X3
	VMOVDQU X3, 64(DI)
	MOVWLZX 0(SI), AX
	MOVWLZX 34(SI), BX
	SHLL $16, BX
	ORL BX, AX
	VMOVD AX, X0
	VCVTPH2PS X0, X0
	VMOVQ X0, 80(DI)
	ADDQ $68, SI
	ADDQ $88, DI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET
