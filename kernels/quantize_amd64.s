//go:build amd64 && !purego

#include "textflag.h"

// quantQ8_0AVX2 quantizes nb blocks of 32 float32 at src into Q8_0 blocks
// at dst as ggml's AVX2 quantize_row_q8_0 does: per block maxAbs over
// |x|, d = maxAbs/127 stored as fp16 (VCVTPS2PH, nearest even),
// id = 127/maxAbs (0 when maxAbs is 0), q = round-to-even(x·id), the
// float32 products packed to int8 in element order.

DATA q8Perm<>+0(SB)/8, $0x0000000400000000
DATA q8Perm<>+8(SB)/8, $0x0000000500000001
DATA q8Perm<>+16(SB)/8, $0x0000000600000002
DATA q8Perm<>+24(SB)/8, $0x0000000700000003
GLOBL q8Perm<>(SB), RODATA|NOPTR, $32

// func quantQ8_0AVX2(dst *byte, src *float32, nb int)
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ    done

	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // |x| mask
	MOVL $0x42fe0000, AX  // 127.0
	VMOVD AX, X14
	VMOVDQU q8Perm<>(SB), Y13
	VXORPS X12, X12, X12

block:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y2, Y5
	VANDPS Y15, Y3, Y6
	VMAXPS Y6, Y5, Y5
	VMAXPS Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS X5, X4, X4     // maxAbs
	VDIVSS X14, X4, X6    // d = maxAbs/127
	VDIVSS X4, X14, X7    // 127/maxAbs
	VCMPSS $4, X12, X4, X8 // maxAbs != 0
	VANDPS X8, X7, X7     // id
	VBROADCASTSS X7, Y7
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VROUNDPS $0, Y0, Y0
	VROUNDPS $0, Y1, Y1
	VROUNDPS $0, Y2, Y2
	VROUNDPS $0, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, 2(DI)
	VCVTPS2PH $0, X6, X8
	VMOVD X8, AX
	MOVW AX, (DI)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  block
	VZEROUPPER

done:
	RET

// prepQ4_0x8AVX2 writes the prepQ4_0x8 form of nb Q8_0 blocks at act to
// dst: per block the 32 quants, da as float32, 8·Σa as int32.
//
// func prepQ4_0x8AVX2(dst, act *byte, nb int)
TEXT ·prepQ4_0x8AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ act+8(FP), SI
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ    pdone

	MOVL $0x01010101, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // byte ones
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // int16 ones

pblock:
	VMOVDQU 2(SI), Y0
	VMOVDQU Y0, (DI)
	VPMADDUBSW Y0, Y15, Y1 // 1·a pairs (unsigned ones × signed a)
	VPMADDWD Y14, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0x4e, X1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0xb1, X1, X2
	VPADDD X2, X1, X1
	VPSLLD $3, X1, X1
	VMOVD X1, 36(DI)
	MOVWLZX (SI), AX
	VMOVD AX, X3
	VCVTPH2PS X3, X3
	VMOVSS X3, 32(DI)
	ADDQ $34, SI
	ADDQ $40, DI
	DECQ CX
	JNZ  pblock
	VZEROUPPER

pdone:
	RET
