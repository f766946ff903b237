//go:build amd64 && !purego

#include "textflag.h"

// Q5_K block (176 bytes): fp16 d, fp16 dmin, scales[12] (as Q4_K), qh[32],
// qs[128]; quant e has Q4_K's nibble from qs plus bit e/32 of qh[e%32] as
// its fifth bit. Q8_K block (292
// bytes): float32 d, int8 qs[256], int16 bsums[16] (sums of 16 quants).
//
// dot = da·d·Σ_j sc_j·Σ q·a (q in 0..31) − da·dmin·Σ_j m_j·(bsum_2j + bsum_2j+1)
//
// As ggml's AVX2 code: the first sum in an 8-lane FMA accumulator, the
// second in a scalar one (fused multiply-add per block), added at the end.

// func dotQ5_KAVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11

	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask
	MOVL $0x10101010, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // fifth bit

row:
	VXORPS Y0, Y0, Y0   // Σ da·d·sumi
	VXORPS X13, X13, X13 // Σ da·dmin·summ
	MOVQ R11, DI
	MOVQ R10, CX

block:
	PREFETCHT0 1024(SI)
	// Unpack the 6-bit scales and mins as ggml's kmask trick does:
	// bytes 0..7 of (AX, DX) are the scales, of (BX, R12) the mins.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL BX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12
	ANDL $0x3f3f3f3f, BX
	ANDL $0x0f0f0f0f, DX
	MOVL AX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, DX
	ANDL $0x3f3f3f3f, AX
	SHLQ $32, DX
	ORQ  DX, AX
	SHLQ $32, R12
	ORQ  R12, BX
	VMOVQ AX, X1
	VPMOVZXBW X1, X1
	VPERMQ $0x44, Y1, Y12 // scales as int16, in both lanes
	VMOVQ BX, X2
	VPMOVZXBW X2, X2  // mins as int16

	// mins · bsums
	VMOVDQU 260(DI), Y3
	VEXTRACTI128 $1, Y3, X4
	VPHADDW X4, X3, X3 // sums of 32
	VPMADDWD X3, X2, X2
	VPHADDD X2, X2, X2
	VPHADDD X2, X2, X2 // Σ m·bsum in lane 0
	VCVTDQ2PS X2, X2

	// [da·d, da·dmin]
	VMOVD (SI), X5
	VCVTPH2PS X5, X5
	VBROADCASTSS (DI), X6
	VMULPS X6, X5, X5
	VMOVSHDUP X5, X6
	VFMADD231SS X6, X2, X13 // scalar, as ggml's summs
	VBROADCASTSS X5, Y5

	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VMOVDQU 16(SI), Y10 // qh
	// sub-blocks 0 and 1
	VMOVDQU (48+32*0)(SI), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPSLLW $4, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y1, Y1
	VPSLLW $3, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y2, Y2
	VPMADDUBSW (4+64*0)(DI), Y1, Y1
	VPMADDUBSW (36+64*0)(DI), Y2, Y2
	VPSHUFB ·k4ScaleShuf+(64*0)(SB), Y12, Y3
	VPSHUFB ·k4ScaleShuf+(64*0+32)(SB), Y12, Y4
	VPMADDWD Y3, Y1, Y1
	VPMADDWD Y4, Y2, Y2
	VPADDD Y1, Y7, Y7
	VPADDD Y2, Y8, Y8
	// sub-blocks 2 and 3
	VMOVDQU (48+32*1)(SI), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPSLLW $2, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y1, Y1
	VPSLLW $1, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y2, Y2
	VPMADDUBSW (4+64*1)(DI), Y1, Y1
	VPMADDUBSW (36+64*1)(DI), Y2, Y2
	VPSHUFB ·k4ScaleShuf+(64*1)(SB), Y12, Y3
	VPSHUFB ·k4ScaleShuf+(64*1+32)(SB), Y12, Y4
	VPMADDWD Y3, Y1, Y1
	VPMADDWD Y4, Y2, Y2
	VPADDD Y1, Y7, Y7
	VPADDD Y2, Y8, Y8
	// sub-blocks 4 and 5
	VMOVDQU (48+32*2)(SI), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VMOVDQA Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y1, Y1
	VPSRLW $1, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y2, Y2
	VPMADDUBSW (4+64*2)(DI), Y1, Y1
	VPMADDUBSW (36+64*2)(DI), Y2, Y2
	VPSHUFB ·k4ScaleShuf+(64*2)(SB), Y12, Y3
	VPSHUFB ·k4ScaleShuf+(64*2+32)(SB), Y12, Y4
	VPMADDWD Y3, Y1, Y1
	VPMADDWD Y4, Y2, Y2
	VPADDD Y1, Y7, Y7
	VPADDD Y2, Y8, Y8
	// sub-blocks 6 and 7
	VMOVDQU (48+32*3)(SI), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPSRLW $2, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y1, Y1
	VPSRLW $3, Y10, Y11
	VPAND Y15, Y11, Y11
	VPOR Y11, Y2, Y2
	VPMADDUBSW (4+64*3)(DI), Y1, Y1
	VPMADDUBSW (36+64*3)(DI), Y2, Y2
	VPSHUFB ·k4ScaleShuf+(64*3)(SB), Y12, Y3
	VPSHUFB ·k4ScaleShuf+(64*3+32)(SB), Y12, Y4
	VPMADDWD Y3, Y1, Y1
	VPMADDWD Y4, Y2, Y2
	VPADDD Y1, Y7, Y7
	VPADDD Y2, Y8, Y8
	VPADDD Y8, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y5, Y7, Y0

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  block

	// Σ da·d·sumi − Σ da·dmin·summ, each reduced as ggml's AVX2 code does.
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVHLPS X13, X2, X2
	VADDPS X2, X13, X13
	VMOVSHDUP X13, X2
	VADDSS X2, X13, X13
	VSUBSS X13, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET
