//go:build amd64 && !purego

#include "textflag.h"

// quantQ8_KAVX2 quantizes nb blocks of 256 float32 at src into Q8_K
// blocks at dst as package quant's quantQ8_K (ggml's
// quantize_row_q8_K_ref) does, bit for bit: amax = max|x| (NaN ignored),
// mx the first x with |x| = amax, iscale = −127/mx, q = min(127,
// nearestInt(iscale·x)) truncated to int8 (nearestInt adds 12582912 and
// takes the low mantissa bits), the 16 sums of 16 quants as int16,
// d = 1/iscale; a block with amax = 0 is all zero.

DATA q8kPerm<>+0(SB)/8, $0x0000000400000000
DATA q8kPerm<>+8(SB)/8, $0x0000000500000001
DATA q8kPerm<>+16(SB)/8, $0x0000000600000002
DATA q8kPerm<>+24(SB)/8, $0x0000000700000003
GLOBL q8kPerm<>(SB), RODATA|NOPTR, $32

// Q8KCHUNK quantizes the 32 floats at OFF(SI) (iscale in Y15) to 32
// bytes at 4+OFF/4(DI) and leaves the eight int32 quad sums of their two
// groups of 16 in X (lanes 0..3 the first group's, 4..7 the second's).
// Y8..Y13 hold the constants (see the function), Y0..Y3 are clobbered.
#define Q8KCHUNK(OFF, X) \
	VMULPS     OFF(SI), Y15, Y0;       \
	VMULPS     (OFF+32)(SI), Y15, Y1;  \
	VMULPS     (OFF+64)(SI), Y15, Y2;  \
	VMULPS     (OFF+96)(SI), Y15, Y3;  \
	VADDPS     Y8, Y0, Y0;             \
	VADDPS     Y8, Y1, Y1;             \
	VADDPS     Y8, Y2, Y2;             \
	VADDPS     Y8, Y3, Y3;             \
	VPAND      Y9, Y0, Y0;             \
	VPAND      Y9, Y1, Y1;             \
	VPAND      Y9, Y2, Y2;             \
	VPAND      Y9, Y3, Y3;             \
	VPSUBD     Y10, Y0, Y0;            \
	VPSUBD     Y10, Y1, Y1;            \
	VPSUBD     Y10, Y2, Y2;            \
	VPSUBD     Y10, Y3, Y3;            \
	VPMINSD    Y11, Y0, Y0;            \
	VPMINSD    Y11, Y1, Y1;            \
	VPMINSD    Y11, Y2, Y2;            \
	VPMINSD    Y11, Y3, Y3;            \
	VPSLLD     $24, Y0, Y0;            \
	VPSLLD     $24, Y1, Y1;            \
	VPSLLD     $24, Y2, Y2;            \
	VPSLLD     $24, Y3, Y3;            \
	VPSRAD     $24, Y0, Y0;            \
	VPSRAD     $24, Y1, Y1;            \
	VPSRAD     $24, Y2, Y2;            \
	VPSRAD     $24, Y3, Y3;            \
	VPACKSSDW  Y1, Y0, Y0;             \
	VPACKSSDW  Y3, Y2, Y2;             \
	VPACKSSWB  Y2, Y0, Y0;             \
	VPERMD     Y0, Y14, Y0;            \
	VMOVDQU    Y0, (4+OFF/4)(DI);      \
	VPMADDUBSW Y0, Y12, Y0;            \
	VPMADDWD   Y13, Y0, X

// func quantQ8_KAVX2(dst *byte, src *float32, nb int)
TEXT ·quantQ8_KAVX2(SB), NOSPLIT, $0-24
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  nb+16(FP), CX
	TESTQ CX, CX
	JZ    q8kdone

	MOVL         $0x4b400000, AX // 12582912.0
	VMOVD        AX, X8
	VPBROADCASTD X8, Y8
	MOVL         $0x007fffff, AX
	VMOVD        AX, X9
	VPBROADCASTD X9, Y9
	MOVL         $0x00400000, AX
	VMOVD        AX, X10
	VPBROADCASTD X10, Y10
	MOVL         $127, AX
	VMOVD        AX, X11
	VPBROADCASTD X11, Y11
	MOVL         $0x01010101, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x00010001, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU      q8kPerm<>(SB), Y14

q8kblock:
	// amax: four running maxima of |x|; VMAXPS returns its second
	// source, the maximum so far, when x is NaN.
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X7
	VPBROADCASTD X7, Y7
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	XORQ         BX, BX

q8kmax:
	VANDPS (SI)(BX*1), Y7, Y4
	VMAXPS Y0, Y4, Y0
	VANDPS 32(SI)(BX*1), Y7, Y5
	VMAXPS Y1, Y5, Y1
	VANDPS 64(SI)(BX*1), Y7, Y4
	VMAXPS Y2, Y4, Y2
	VANDPS 96(SI)(BX*1), Y7, Y5
	VMAXPS Y3, Y5, Y3
	ADDQ   $128, BX
	CMPQ   BX, $1024
	JLT    q8kmax
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0 // amax
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JNE    q8knonzero

	// amax = 0: an all-zero block.
	VPXOR   Y0, Y0, Y0
	XORQ    BX, BX

q8kzero:
	VMOVDQU Y0, (DI)(BX*1)
	ADDQ    $32, BX
	CMPQ    BX, $288
	JLT     q8kzero
	MOVL    $0, 288(DI)
	JMP     q8knext

q8knonzero:
	// mx: the first x with |x| = amax.
	VBROADCASTSS X0, Y0
	XORQ         BX, BX

q8kfind:
	VANDPS    (SI)(BX*1), Y7, Y4
	VCMPPS    $0, Y0, Y4, Y4
	VMOVMSKPS Y4, AX
	TESTL     AX, AX
	JNZ       q8kfound
	ADDQ      $32, BX
	JMP       q8kfind

q8kfound:
	BSFL   AX, AX
	LEAQ   (SI)(BX*1), DX
	VMOVSS (DX)(AX*4), X1 // mx
	MOVL   $0xc2fe0000, AX // -127.0
	VMOVD  AX, X2
	VDIVSS X1, X2, X2      // iscale = -127/mx
	MOVL   $0x3f800000, AX // 1.0
	VMOVD  AX, X3
	VDIVSS X2, X3, X3      // d = 1/iscale
	VMOVSS X3, (DI)
	VBROADCASTSS X2, Y15

	Q8KCHUNK(0, Y4)
	Q8KCHUNK(128, Y5)
	VPHADDD Y5, Y4, Y4
	Q8KCHUNK(256, Y5)
	Q8KCHUNK(384, Y6)
	VPHADDD Y6, Y5, Y5
	VPHADDD Y5, Y4, Y4 // [g0 g2 g4 g6 | g1 g3 g5 g7]
	Q8KCHUNK(512, Y5)
	Q8KCHUNK(640, Y6)
	VPHADDD Y6, Y5, Y5
	Q8KCHUNK(768, Y6)
	Q8KCHUNK(896, Y7)
	VPHADDD Y7, Y6, Y6
	VPHADDD Y6, Y5, Y5 // [g8 g10 g12 g14 | g9 g11 g13 g15]
	VPACKSSDW    Y5, Y4, Y4 // [g0 g2 .. g14 | g1 g3 .. g15] as int16
	VEXTRACTI128 $1, Y4, X5
	VPUNPCKLWD   X5, X4, X6
	VPUNPCKHWD   X5, X4, X7
	VMOVDQU      X6, 260(DI)
	VMOVDQU      X7, 276(DI)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q8kblock
	VZEROUPPER

q8kdone:
	RET
