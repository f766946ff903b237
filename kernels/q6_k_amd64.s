//go:build amd64 && !purego

#include "textflag.h"

// Q6_K block (210 bytes): ql[128] low 4 bits, qh[64] high 2 bits, int8
// scales[16] (one per 16 quants), fp16 d. In half h (128 quants) quant
// 32k+l (k 0..3, l 0..31) has low bits ql[64h+l+32(k&1)] (>>4 for k >= 2)
// and high bits qh[32h+l]>>2k. Quants are stored +32.
//
// dot = da·d·Σ_g sc_g·Σ (q−32)·a, in ggml's AVX2 order: the offset comes
// off each int16 pair before the scales (prepared once per matrix as
// 32·(a[2i]+a[2i+1]) by prepQ6_K, pointer DX), one 8-lane FMA accumulator
// per row, hsum_float_8 at the end, so results match ggml bit for bit.

// q6kScaleShuf holds, for pair k, the VPSHUFB control that puts int16
// scale 2k in the low lane and scale 2k+1 in the high lane.
DATA q6kScaleShuf<>+0(SB)/8, $0x0100010001000100
DATA q6kScaleShuf<>+8(SB)/8, $0x0100010001000100
DATA q6kScaleShuf<>+16(SB)/8, $0x0302030203020302
DATA q6kScaleShuf<>+24(SB)/8, $0x0302030203020302
DATA q6kScaleShuf<>+32(SB)/8, $0x0504050405040504
DATA q6kScaleShuf<>+40(SB)/8, $0x0504050405040504
DATA q6kScaleShuf<>+48(SB)/8, $0x0706070607060706
DATA q6kScaleShuf<>+56(SB)/8, $0x0706070607060706
DATA q6kScaleShuf<>+64(SB)/8, $0x0908090809080908
DATA q6kScaleShuf<>+72(SB)/8, $0x0908090809080908
DATA q6kScaleShuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kScaleShuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kScaleShuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kScaleShuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kScaleShuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kScaleShuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kScaleShuf<>(SB), RODATA|NOPTR, $128

// QUANTS does quants 32k..32k+31 of half h, given their low bits in Y1 and
// qh shifted so that bits 2k,2k+1 sit at 4,5 in Y2.
#define QUANTS(h, k) \
	VPAND Y15, Y2, Y2 \
	VPOR Y2, Y1, Y1 \
	VPMADDUBSW (4+128*h+32*k)(DI), Y1, Y1 \
	VPSUBW (128*h+32*k)(DX), Y1, Y1 \
	VPSHUFB q6kScaleShuf<>+(32*k)(SB), Y9, Y3 \
	VPMADDWD Y3, Y1, Y1 \
	VPADDD Y1, Y7, Y7

#define HALF(h) \
	VPERMQ $(0x44+0xaa*h), Y13, Y9 \
	VMOVDQU (128+32*h)(SI), Y10 \
	VMOVDQU (64*h)(SI), Y11 \
	VMOVDQU (64*h+32)(SI), Y12 \
	VPAND Y14, Y11, Y1 \
	VPSLLW $4, Y10, Y2 \
	QUANTS(h, 0) \
	VPAND Y14, Y12, Y1 \
	VPSLLW $2, Y10, Y2 \
	QUANTS(h, 1) \
	VPSRLW $4, Y11, Y1 \
	VPAND Y14, Y1, Y1 \
	VMOVDQA Y10, Y2 \
	QUANTS(h, 2) \
	VPSRLW $4, Y12, Y1 \
	VPAND Y14, Y1, Y1 \
	VPSRLW $2, Y10, Y2 \
	QUANTS(h, 3)

// func dotQ6_KAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12

	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask
	MOVL $0x30303030, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // high-bits mask

row:
	VXORPS Y0, Y0, Y0
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

block:
	// A block spans 210 bytes, up to four cache lines: prefetch them all
	// 8 KiB ahead.
	PREFETCHT0 8192(SI)
	PREFETCHT0 8256(SI)
	PREFETCHT0 8320(SI)
	PREFETCHT0 8384(SI)
	VPMOVSXBW 192(SI), Y13 // scales as int16
	VPXOR Y7, Y7, Y7
	HALF(0)
	HALF(1)
	VCVTDQ2PS Y7, Y7
	MOVWLZX 208(SI), AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VMULSS (DI), X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS Y5, Y7, Y0

	ADDQ $210, SI
	ADDQ $292, DI
	ADDQ $256, DX
	DECQ CX
	JNZ  block

	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET

// dotQ6_KRows2AVX2 is dotQ6_KAVX2 for two rows at a time, rows 2p and
// 2p+1 of pair p starting at w + (2p+i)·rowBytes: the two rows' blocks are
// independent work the core overlaps. Each row's arithmetic is exactly
// dotQ6_KAVX2's, so the bits are the same. As in dotQ4_KRows2AVX2, R13
// walks the bytes 8 KiB past the pair as one stream (420 bytes per
// block), prefetching every line 8 KiB ahead.
//
// Registers: SI row 0 at the current block, BX row 1, R15 rowBytes, R13
// the prefetch pointer, DI the activation block, DX its prepared offsets,
// Y0 and Y6 the accumulators of rows 0 and 1.

// QUANTSR, HALFR and ROWK6 are QUANTS, HALF and one iteration of
// dotQ6_KAVX2's block loop for the row at ptr.
#define QUANTSR(h, k) \
	VPAND Y15, Y2, Y2 \
	VPOR Y2, Y1, Y1 \
	VPMADDUBSW (4+128*h+32*k)(DI), Y1, Y1 \
	VPSUBW (128*h+32*k)(DX), Y1, Y1 \
	VPSHUFB q6kScaleShuf<>+(32*k)(SB), Y9, Y3 \
	VPMADDWD Y3, Y1, Y1 \
	VPADDD Y1, Y7, Y7

#define HALFR(ptr, h) \
	VPERMQ $(0x44+0xaa*h), Y13, Y9 \
	VMOVDQU (128+32*h)(ptr), Y10 \
	VMOVDQU (64*h)(ptr), Y11 \
	VMOVDQU (64*h+32)(ptr), Y12 \
	VPAND Y14, Y11, Y1 \
	VPSLLW $4, Y10, Y2 \
	QUANTSR(h, 0) \
	VPAND Y14, Y12, Y1 \
	VPSLLW $2, Y10, Y2 \
	QUANTSR(h, 1) \
	VPSRLW $4, Y11, Y1 \
	VPAND Y14, Y1, Y1 \
	VMOVDQA Y10, Y2 \
	QUANTSR(h, 2) \
	VPSRLW $4, Y12, Y1 \
	VPAND Y14, Y1, Y1 \
	VPSRLW $2, Y10, Y2 \
	QUANTSR(h, 3)

#define ROWK6(ptr, acc) \
	VPMOVSXBW 192(ptr), Y13 \
	VPXOR Y7, Y7, Y7 \
	HALFR(ptr, 0) \
	HALFR(ptr, 1) \
	VCVTDQ2PS Y7, Y7 \
	MOVWLZX 208(ptr), AX \
	VMOVD AX, X5 \
	VCVTPH2PS X5, X5 \
	VMULSS (DI), X5, X5 \
	VBROADCASTSS X5, Y5 \
	VFMADD231PS Y5, Y7, acc

// HSUM6 reduces acc as dotQ6_KAVX2 does and stores it at off(R8).
#define HSUM6(yacc, xacc, off) \
	VEXTRACTF128 $1, yacc, X1 \
	VADDPS X1, xacc, xacc \
	VMOVHLPS xacc, X1, X1 \
	VADDPS X1, xacc, xacc \
	VMOVSHDUP xacc, X1 \
	VADDSS X1, xacc, xacc \
	VMOVSS xacc, off(R8)

// func dotQ6_KRows2AVX2(out *float32, pairs int, w *byte, nb, rowBytes int, act, aux *byte)
TEXT ·dotQ6_KRows2AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ pairs+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ rowBytes+32(FP), R15
	MOVQ act+40(FP), R11
	MOVQ aux+48(FP), R12

	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask
	MOVL $0x30303030, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // high-bits mask

pair6:
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	LEAQ (SI)(R15*1), BX
	LEAQ 8192(SI), R13
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

block6:
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	PREFETCHT0 192(R13)
	PREFETCHT0 256(R13)
	PREFETCHT0 320(R13)
	PREFETCHT0 384(R13)
	ADDQ $420, R13
	ROWK6(SI, Y0)
	ROWK6(BX, Y6)
	ADDQ $210, SI
	ADDQ $210, BX
	ADDQ $292, DI
	ADDQ $256, DX
	DECQ CX
	JNZ  block6

	HSUM6(Y0, X0, 0)
	HSUM6(Y6, X6, 4)
	ADDQ $8, R8
	MOVQ BX, SI // row 1 ends where the next pair starts
	DECQ R9
	JNZ  pair6
	VZEROUPPER
	RET
