//go:build amd64 && !purego

#include "textflag.h"

// Q4_K block (144 bytes): fp16 d, fp16 dmin, scales[12] (eight 6-bit scales
// and eight 6-bit mins), qs[128]; quants 64j..64j+31 are the low nibbles of
// qs[32j..32j+31] and 64j+32..64j+63 the high nibbles. Q8_K block (292
// bytes): float32 d, int8 qs[256], int16 bsums[16] (sums of 16 quants).
//
// dot = da·d·Σ_j sc_j·Σ q·a − da·dmin·Σ_j m_j·(bsum_2j + bsum_2j+1)

// k4ScaleShuf holds, for scale s, the VPSHUFB control that broadcasts
// int16 word s of a 128-bit lane to all its words.
DATA ·k4ScaleShuf+0(SB)/8, $0x0100010001000100
DATA ·k4ScaleShuf+8(SB)/8, $0x0100010001000100
DATA ·k4ScaleShuf+16(SB)/8, $0x0100010001000100
DATA ·k4ScaleShuf+24(SB)/8, $0x0100010001000100
DATA ·k4ScaleShuf+32(SB)/8, $0x0302030203020302
DATA ·k4ScaleShuf+40(SB)/8, $0x0302030203020302
DATA ·k4ScaleShuf+48(SB)/8, $0x0302030203020302
DATA ·k4ScaleShuf+56(SB)/8, $0x0302030203020302
DATA ·k4ScaleShuf+64(SB)/8, $0x0504050405040504
DATA ·k4ScaleShuf+72(SB)/8, $0x0504050405040504
DATA ·k4ScaleShuf+80(SB)/8, $0x0504050405040504
DATA ·k4ScaleShuf+88(SB)/8, $0x0504050405040504
DATA ·k4ScaleShuf+96(SB)/8, $0x0706070607060706
DATA ·k4ScaleShuf+104(SB)/8, $0x0706070607060706
DATA ·k4ScaleShuf+112(SB)/8, $0x0706070607060706
DATA ·k4ScaleShuf+120(SB)/8, $0x0706070607060706
DATA ·k4ScaleShuf+128(SB)/8, $0x0908090809080908
DATA ·k4ScaleShuf+136(SB)/8, $0x0908090809080908
DATA ·k4ScaleShuf+144(SB)/8, $0x0908090809080908
DATA ·k4ScaleShuf+152(SB)/8, $0x0908090809080908
DATA ·k4ScaleShuf+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·k4ScaleShuf+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·k4ScaleShuf+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·k4ScaleShuf+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ·k4ScaleShuf+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·k4ScaleShuf+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·k4ScaleShuf+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·k4ScaleShuf+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ·k4ScaleShuf+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ·k4ScaleShuf+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ·k4ScaleShuf+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ·k4ScaleShuf+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL ·k4ScaleShuf(SB), RODATA|NOPTR, $256

// QUAD does sub-blocks 2j and 2j+1: 32 bytes of qs, 64 activations.
#define QUAD(j) \
	VMOVDQU (16+32*j)(SI), Y1 \
	VPSRLW $4, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPMADDUBSW (4+64*j)(DI), Y1, Y1 \
	VPMADDUBSW (36+64*j)(DI), Y2, Y2 \
	VPSHUFB ·k4ScaleShuf+(64*j)(SB), Y12, Y3 \
	VPSHUFB ·k4ScaleShuf+(64*j+32)(SB), Y12, Y4 \
	VPMADDWD Y3, Y1, Y1 \
	VPMADDWD Y4, Y2, Y2 \
	VPADDD Y1, Y7, Y7 \
	VPADDD Y2, Y8, Y8

// func dotQ4_KAVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11

	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask

row:
	VXORPS Y0, Y0, Y0   // Σ da·d·sumi
	VXORPS X13, X13, X13 // Σ da·dmin·summ
	MOVQ R11, DI
	MOVQ R10, CX

block:
	PREFETCHT0 8192(SI)
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
	VCVTDQ2PS X2, X2

	// [da·d, da·dmin]
	VMOVD (SI), X5
	VCVTPH2PS X5, X5
	VBROADCASTSS (DI), X6
	VMULPS X6, X5, X5
	VMOVSHDUP X5, X6
	VBROADCASTSS X6, X6
	VFMADD231PS X6, X2, X13
	VBROADCASTSS X5, Y5

	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	QUAD(0)
	QUAD(1)
	QUAD(2)
	QUAD(3)
	VPADDD Y8, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y5, Y7, Y0

	ADDQ $144, SI
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

// dotQ4_KRows2AVX2 is dotQ4_KAVX2 for two rows at a time, rows 2p and
// 2p+1 of pair p starting at w + (2p+i)·rowBytes. The two rows' blocks
// are independent work the core can overlap, and the activation's
// bsums and scale are loaded and folded once per block for both. Each
// row's arithmetic is exactly dotQ4_KAVX2's, so the bits are the same.
//
// Two rows read at once are two interleaved streams, which the hardware
// prefetcher follows worse than one; R10 walks the bytes 8 KiB past the
// pair as one stream at the pair's own pace (288 bytes per block), so the
// pairs' prefetches cover the matrix once, 8 KiB ahead.
//
// Registers: SI row 0 at the current block, BX row 1, R10 the prefetch
// pointer, R15 rowBytes, DI the activation block, Y0/X13 the accumulators
// of row 0 (Σ da·d·sumi, Σ da·dmin·summ), Y9/X10 those of row 1, X15 the
// block's bsums summed in 32s, X11 its scale da broadcast, Y14 the nibble
// mask.

// QUADR is QUAD for the row at ptr.
#define QUADR(ptr, j) \
	VMOVDQU (16+32*j)(ptr), Y1 \
	VPSRLW $4, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPMADDUBSW (4+64*j)(DI), Y1, Y1 \
	VPMADDUBSW (36+64*j)(DI), Y2, Y2 \
	VPSHUFB ·k4ScaleShuf+(64*j)(SB), Y12, Y3 \
	VPSHUFB ·k4ScaleShuf+(64*j+32)(SB), Y12, Y4 \
	VPMADDWD Y3, Y1, Y1 \
	VPMADDWD Y4, Y2, Y2 \
	VPADDD Y1, Y7, Y7 \
	VPADDD Y2, Y8, Y8

// ROWK4 does one block of the row at ptr into accumulators acc and macc,
// as one iteration of dotQ4_KAVX2's block loop does, with the bsums sums
// in X15 and da in X11.
#define ROWK4(ptr, acc, macc) \
	MOVL 4(ptr), AX \
	MOVL 8(ptr), R14 \
	MOVL 12(ptr), DX \
	MOVL DX, R12 \
	SHRL $4, R12 \
	ANDL $0x0f0f0f0f, R12 \
	MOVL R14, R13 \
	SHRL $6, R13 \
	ANDL $0x03030303, R13 \
	SHLL $4, R13 \
	ORL  R13, R12 \
	ANDL $0x3f3f3f3f, R14 \
	ANDL $0x0f0f0f0f, DX \
	MOVL AX, R13 \
	SHRL $6, R13 \
	ANDL $0x03030303, R13 \
	SHLL $4, R13 \
	ORL  R13, DX \
	ANDL $0x3f3f3f3f, AX \
	SHLQ $32, DX \
	ORQ  DX, AX \
	SHLQ $32, R12 \
	ORQ  R12, R14 \
	VMOVQ AX, X1 \
	VPMOVZXBW X1, X1 \
	VPERMQ $0x44, Y1, Y12 \
	VMOVQ R14, X2 \
	VPMOVZXBW X2, X2 \
	VPMADDWD X15, X2, X2 \
	VCVTDQ2PS X2, X2 \
	VMOVD (ptr), X5 \
	VCVTPH2PS X5, X5 \
	VMULPS X11, X5, X5 \
	VMOVSHDUP X5, X6 \
	VBROADCASTSS X6, X6 \
	VFMADD231PS X6, X2, macc \
	VBROADCASTSS X5, Y5 \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	QUADR(ptr, 0) \
	QUADR(ptr, 1) \
	QUADR(ptr, 2) \
	QUADR(ptr, 3) \
	VPADDD Y8, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VFMADD231PS Y5, Y7, acc

// HSUMK reduces acc and macc of one row as dotQ4_KAVX2 does and stores the
// result at off(R8).
#define HSUMK(yacc, xacc, xmacc, off) \
	VEXTRACTF128 $1, yacc, X1 \
	VADDPS X1, xacc, xacc \
	VMOVHLPS xacc, X1, X1 \
	VADDPS X1, xacc, xacc \
	VMOVSHDUP xacc, X1 \
	VADDSS X1, xacc, xacc \
	VMOVHLPS xmacc, X2, X2 \
	VADDPS X2, xmacc, xmacc \
	VMOVSHDUP xmacc, X2 \
	VADDSS X2, xmacc, xmacc \
	VSUBSS xmacc, xacc, xacc \
	VMOVSS xacc, off(R8)

// func dotQ4_KRows2AVX2(out *float32, pairs int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ4_KRows2AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ pairs+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ rowBytes+32(FP), R15
	MOVQ act+40(FP), R11

	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask

pair:
	VXORPS Y0, Y0, Y0
	VXORPS X13, X13, X13
	VXORPS Y9, Y9, Y9
	VXORPS X10, X10, X10
	LEAQ (SI)(R15*1), BX
	LEAQ 8192(SI), R10
	MOVQ R11, DI
	MOVQ nb+24(FP), CX

block2:
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 128(R10)
	PREFETCHT0 192(R10)
	PREFETCHT0 256(R10)
	ADDQ $288, R10
	VMOVDQU 260(DI), Y3
	VEXTRACTI128 $1, Y3, X4
	VPHADDW X4, X3, X15 // sums of 32
	VBROADCASTSS (DI), X11
	ROWK4(SI, Y0, X13)
	ROWK4(BX, Y9, X10)
	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $292, DI
	DECQ CX
	JNZ  block2

	HSUMK(Y0, X0, X13, 0)
	HSUMK(Y9, X9, X10, 4)
	ADDQ $8, R8
	MOVQ BX, SI // row 1 ends where the next pair starts
	DECQ R9
	JNZ  pair
	VZEROUPPER
	RET
