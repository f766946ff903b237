//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Tile kernels for MatMul: four activations against a run of rows, with
// each row's weights loaded and unpacked once for all four. Per (row,
// activation) the floating-point work is exactly that of the
// one-activation kernel of the same order (q8_0_amd64.s,
// q4_0_gemv_amd64.s), so the results are the same bits; only the integer
// dot products of a block, which are exact whichever way they are summed,
// may be formed differently.
//

// Q8_0: acc_t = fma(float(isum), fp32(dw)·da_t, acc_t) per block, one
// 8-lane accumulator per activation, hsum_float_8 at the end, as
// dotQ8_0AVX2. The activations come packed by packQ8_0T4: per block, for
// each of the four in turn, 64 bytes: the 32 quants, then da as eight
// float32.

// Q8TOK does activation t's part of one block: its packed data at off(DI),
// the weight quants in Y1, their absolute values in Y2, fp32(dw) in Y3.
#define Q8TOK(off, acc, a, s) \
	VMOVDQU off(DI), a \
	VPSIGNB Y1, a, a \
	VPMADDUBSW a, Y2, a \
	VPMADDWD Y15, a, a \
	VCVTDQ2PS a, a \
	VMULPS off+32(DI), Y3, s \
	VFMADD231PS s, a, acc

// HSUM reduces acc as hsum_float_8 and stores it at dst.
#define HSUM(acc, xacc, dst) \
	VEXTRACTF128 $1, acc, X1 \
	VADDPS X1, xacc, xacc \
	VMOVHLPS xacc, X1, X1 \
	VADDPS X1, xacc, xacc \
	VMOVSHDUP xacc, X1 \
	VADDSS X1, xacc, xacc \
	VMOVSS xacc, dst

// func dotQ8_0T4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
TEXT ·dotQ8_0T4AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R13
	SHLQ $2, R13
	LEAQ (R13)(R13*2), R14
	MOVQ rows+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	MOVQ R11, DI
	MOVQ R10, CX

block:
	VMOVDQU 2(SI), Y1
	VPABSB Y1, Y2
	VPBROADCASTW (SI), X3
	VCVTPH2PS X3, Y3
	Q8TOK(0, Y0, Y7, Y8)
	Q8TOK(64, Y4, Y9, Y10)
	Q8TOK(128, Y5, Y11, Y12)
	Q8TOK(192, Y6, Y13, Y14)
	ADDQ $34, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  block

	HSUM(Y0, X0, (R8))
	HSUM(Y4, X4, (R8)(R13*1))
	HSUM(Y5, X5, (R8)(R13*2))
	HSUM(Y6, X6, (R8)(R14*1))
	ADDQ $4, R8
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET

// func dotQ8_0x4T4AVX2(out *float32, ostride, groups int, w *byte, nb int, packed *byte)
//
// dotQ8_0T4AVX2 for a matrix repacked into Q8_0x4 (q8_0x4.go): the same
// per-row work, each row of a group of four walked with SI at its quants
// and BX at its scale, both 136 bytes a block.
TEXT ·dotQ8_0x4T4AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R13
	SHLQ $2, R13
	LEAQ (R13)(R13*2), R14
	MOVQ groups+16(FP), R9
	MOVQ w+24(FP), R15
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

	// R12 counts the rows left in the group; DX is the group's start;
	// R15 and AX keep a row's SI and BX while its blocks are walked.
	MOVQ R15, DX

r4tgroup:
	MOVQ $4, R12
	LEAQ 8(DX), SI
	MOVQ DX, BX

r4trow:
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	MOVQ R11, DI
	MOVQ R10, CX
	MOVQ SI, R15
	MOVQ BX, AX

r4tblock:
	VMOVDQU (SI), Y1
	VPABSB Y1, Y2
	VPBROADCASTW (BX), X3
	VCVTPH2PS X3, Y3
	Q8TOK(0, Y0, Y7, Y8)
	Q8TOK(64, Y4, Y9, Y10)
	Q8TOK(128, Y5, Y11, Y12)
	Q8TOK(192, Y6, Y13, Y14)
	ADDQ $136, SI
	ADDQ $136, BX
	ADDQ $256, DI
	DECQ CX
	JNZ  r4tblock

	MOVQ R15, SI
	MOVQ AX, BX
	HSUM(Y0, X0, (R8))
	HSUM(Y4, X4, (R8)(R13*1))
	HSUM(Y5, X5, (R8)(R13*2))
	HSUM(Y6, X6, (R8)(R14*1))
	ADDQ $4, R8
	ADDQ $32, SI
	ADDQ $2, BX
	DECQ R12
	JNZ  r4trow

	// The next group starts 4 rows on: nb blocks of 136 bytes.
	MOVQ R10, AX
	IMULQ $136, AX
	ADDQ AX, DX
	DECQ R9
	JNZ  r4tgroup
	VZEROUPPER
	RET

// Q4_0 in ggml_gemv_q4_0_8x8_q8_0's order: eight rows at once, lane r of
// an activation's accumulator holding row r (in the lane order 0, 2, 4, 6,
// 1, 3, 5, 7 until the store), and per block acc = fma(float(isum),
// fp16(dw)·da, acc), as dotQ4_0GemvAVX2, whose integer sums this follows
// too. The rows' nibbles are unpacked once per block into Y8..Y15, rows
// (0,1), (2,3), (4,5), (6,7) paired in the halves of a register, low
// nibbles and high nibbles apart; the activations come packed by
// packQ4_0GemvT4 (per block, for each activation, 128 bytes: quants 0..15 in
// both halves, quants 16..31 in both halves, da as eight float32, 8·Σa as
// eight int32).

DATA ·nibMask+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·nibMask+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·nibMask+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·nibMask+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ·nibMask(SB), RODATA|NOPTR, $32

DATA ·wordOnes+0(SB)/8, $0x0001000100010001
DATA ·wordOnes+8(SB)/8, $0x0001000100010001
DATA ·wordOnes+16(SB)/8, $0x0001000100010001
DATA ·wordOnes+24(SB)/8, $0x0001000100010001
GLOBL ·wordOnes(SB), RODATA|NOPTR, $32

// tileLanes puts an accumulator's lanes back in row order.
DATA tileLanes<>+0(SB)/8, $0x0000000400000000
DATA tileLanes<>+8(SB)/8, $0x0000000500000001
DATA tileLanes<>+16(SB)/8, $0x0000000600000002
DATA tileLanes<>+24(SB)/8, $0x0000000700000003
GLOBL tileLanes<>(SB), RODATA|NOPTR, $32

// NIBS unpacks the quants of rows a (lower half) and b (upper half) into
// lo (low nibbles) and hi (high nibbles); xlo is lo's lower half.
#define NIBS(a, b, lo, xlo, hi) \
	VMOVDQU a, xlo \
	VINSERTI128 $1, b, lo, lo \
	VPSRLW $4, lo, hi \
	VPAND ·nibMask(SB), lo, lo \
	VPAND ·nibMask(SB), hi, hi

// G4PAIR sets y to the int16 pair sums of the rows in lo/hi with the
// activation at off(DI), as PAIR in q4_0_gemv_amd64.s; t is scratch.
#define G4PAIR(off, lo, hi, y, t) \
	VPMADDUBSW off(DI), lo, y \
	VPMADDUBSW off+32(DI), hi, t \
	VPADDW t, y, y

// G4TOK does activation t's part of one block: its packed data at off(DI),
// the rows' nibbles in Y8..Y15, fp32(dw) of the rows, in lane order, at
// 0(SP).
#define G4TOK(off, acc) \
	G4PAIR(off, Y8, Y9, Y4, Y5) \
	G4PAIR(off, Y10, Y11, Y5, Y6) \
	VPHADDW Y5, Y4, Y4 \
	G4PAIR(off, Y12, Y13, Y5, Y6) \
	G4PAIR(off, Y14, Y15, Y6, Y7) \
	VPHADDW Y6, Y5, Y5 \
	VPHADDW Y5, Y4, Y4 \
	VPMADDWD ·wordOnes(SB), Y4, Y4 \
	VPSUBD off+96(DI), Y4, Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMOVUPS 0(SP), Y5 \
	VMULPS off+64(DI), Y5, Y5 \
	VFMADD231PS Y5, Y4, acc

// func dotQ4_0GemvT4AVX2(out *float32, ostride, groups int, w *byte, nb, rowBytes int, packed *byte)
TEXT ·dotQ4_0GemvT4AVX2(SB), NOSPLIT, $32-56
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), DX
	MOVQ groups+16(FP), R9
	MOVQ w+24(FP), R15
	MOVQ nb+32(FP), R10
	MOVQ rowBytes+40(FP), R13
	MOVQ packed+48(FP), R11
	LEAQ (R13)(R13*2), R14

group:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R15, SI
	LEAQ (R15)(R13*4), BX
	MOVQ R11, DI
	MOVQ R10, CX

block:
	// Prefetch the next group of 8 rows, one contiguous run of
	// 8·rowBytes = nb·144 bytes, 144 bytes a block: AX = R15 +
	// 8·rowBytes + 8·(SI-R15).
	MOVQ SI, AX
	SUBQ R15, AX
	LEAQ (R15)(AX*8), AX
	LEAQ (AX)(R13*8), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	MOVWLZX (SI), AX
	VMOVD AX, X4
	VPINSRW $1, (SI)(R13*2), X4, X4
	VPINSRW $2, (BX), X4, X4
	VPINSRW $3, (BX)(R13*2), X4, X4
	VPINSRW $4, (SI)(R13*1), X4, X4
	VPINSRW $5, (SI)(R14*1), X4, X4
	VPINSRW $6, (BX)(R13*1), X4, X4
	VPINSRW $7, (BX)(R14*1), X4, X4
	VCVTPH2PS X4, Y4
	VMOVUPS Y4, 0(SP)
	NIBS(2(SI), 2(SI)(R13*1), Y8, X8, Y9)
	NIBS(2(SI)(R13*2), 2(SI)(R14*1), Y10, X10, Y11)
	NIBS(2(BX), 2(BX)(R13*1), Y12, X12, Y13)
	NIBS(2(BX)(R13*2), 2(BX)(R14*1), Y14, X14, Y15)
	G4TOK(0, Y0)
	G4TOK(128, Y1)
	G4TOK(256, Y2)
	G4TOK(384, Y3)
	ADDQ $18, SI
	ADDQ $18, BX
	ADDQ $512, DI
	DECQ CX
	JNZ  block

	VMOVDQU tileLanes<>(SB), Y4
	VPERMD Y0, Y4, Y0
	VPERMD Y1, Y4, Y1
	VPERMD Y2, Y4, Y2
	VPERMD Y3, Y4, Y3
	VMOVUPS Y0, (R8)
	VMOVUPS Y1, (R8)(R12*1)
	VMOVUPS Y2, (R8)(R12*2)
	VMOVUPS Y3, (R8)(DX*1)
	ADDQ $32, R8
	LEAQ (R15)(R13*8), R15
	DECQ R9
	JNZ  group
	VZEROUPPER
	RET

// Q4_K × Q8_K, as dotQ4_KAVX2 per (row, activation): the eight int32
// lanes of Σ_j sc_j·Σ q·a (summed here in another order, which integers do
// not see), fma'd with da·d into an 8-lane accumulator per activation, and
// the four lanes of the mins' products fma'd with da·dmin into a 4-lane
// one, kept at t·16(SP); each reduced as in the one-activation kernel. The
// activations come packed by packQ8_KT4: per block the four activations'
// 292-byte Q8_K blocks in turn.

// K4TOK adds activation t's part of sub-blocks 2j, 2j+1 into iacc: the
// quants' nibbles in Y9 (low) and Y10 (high), their scales in Y11, Y12.
#define K4TOK(j, off, iacc) \
	VPMADDUBSW (4+64*j+off)(DI), Y9, Y13 \
	VPMADDUBSW (36+64*j+off)(DI), Y10, Y14 \
	VPMADDWD Y11, Y13, Y13 \
	VPMADDWD Y12, Y14, Y14 \
	VPADDD Y13, iacc, iacc \
	VPADDD Y14, iacc, iacc

#define K4QUAD(j) \
	VMOVDQU (16+32*j)(SI), Y9 \
	VPSRLW $4, Y9, Y10 \
	VPAND Y15, Y9, Y9 \
	VPAND Y15, Y10, Y10 \
	VPSHUFB ·k4ScaleShuf+(64*j)(SB), Y8, Y11 \
	VPSHUFB ·k4ScaleShuf+(64*j+32)(SB), Y8, Y12 \
	K4TOK(j, 0, Y4) \
	K4TOK(j, 292, Y5) \
	K4TOK(j, 584, Y6) \
	K4TOK(j, 876, Y7)

// K4END finishes activation t's block: the sums in iacc, fp32([d, dmin])
// in X9, the mins as int16 in X8.
#define K4END(off, iacc, acc, t) \
	VCVTDQ2PS iacc, iacc \
	VBROADCASTSS off(DI), X10 \
	VMULPS X10, X9, X10 \
	VBROADCASTSS X10, Y11 \
	VFMADD231PS Y11, iacc, acc \
	VMOVSHDUP X10, X11 \
	VBROADCASTSS X11, X11 \
	VMOVDQU (260+off)(DI), Y12 \
	VEXTRACTI128 $1, Y12, X13 \
	VPHADDW X13, X12, X12 \
	VPMADDWD X12, X8, X12 \
	VCVTDQ2PS X12, X12 \
	VMOVUPS (16*t)(SP), X13 \
	VFMADD231PS X11, X12, X13 \
	VMOVUPS X13, (16*t)(SP)

// K4STORE reduces activation t's accumulators and stores the dot at dst.
#define K4STORE(acc, xacc, t, dst) \
	VEXTRACTF128 $1, acc, X9 \
	VADDPS X9, xacc, xacc \
	VMOVHLPS xacc, X9, X9 \
	VADDPS X9, xacc, xacc \
	VMOVSHDUP xacc, X9 \
	VADDSS X9, xacc, xacc \
	VMOVUPS (16*t)(SP), X13 \
	VMOVHLPS X13, X10, X10 \
	VADDPS X10, X13, X13 \
	VMOVSHDUP X13, X10 \
	VADDSS X10, X13, X13 \
	VSUBSS X13, xacc, xacc \
	VMOVSS xacc, dst

// func dotQ4_KT4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
TEXT ·dotQ4_KT4AVX2(SB), NOSPLIT, $64-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	LEAQ (R14)(R14*2), R15
	MOVQ rows+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // low nibble mask

k4row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	MOVQ R11, DI
	MOVQ R10, CX

k4block:
	// Scales in AX (low 4 bytes) and DX, mins in BX and R12, as in
	// dotQ4_KAVX2.
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
	VMOVQ AX, X8
	VPMOVZXBW X8, X8
	VPERMQ $0x44, Y8, Y8 // scales as int16, in both lanes

	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	K4QUAD(0)
	K4QUAD(1)
	K4QUAD(2)
	K4QUAD(3)

	VMOVQ BX, X8
	VPMOVZXBW X8, X8 // mins as int16
	VMOVD (SI), X9
	VCVTPH2PS X9, X9
	K4END(0, Y4, Y0, 0)
	K4END(292, Y5, Y1, 1)
	K4END(584, Y6, Y2, 2)
	K4END(876, Y7, Y3, 3)

	ADDQ $144, SI
	ADDQ $1168, DI
	DECQ CX
	JNZ  k4block

	K4STORE(Y0, X0, 0, (R8))
	K4STORE(Y1, X1, 1, (R8)(R14*1))
	K4STORE(Y2, X2, 2, (R8)(R14*2))
	K4STORE(Y3, X3, 3, (R8)(R15*1))
	ADDQ $4, R8
	DECQ R9
	JNZ  k4row
	VZEROUPPER
	RET

// Q6_K × Q8_K, as dotQ6_KAVX2 per (row, activation): the eight int32
// lanes of Σ_g sc_g·Σ (q−32)·a, the offset 32 coming off each int16 pair
// before the scales, fma'd with da·d into one 8-lane accumulator per
// activation, hsum_float_8 at the end. The quants of each 32 are unpacked
// once for the four activations. The activations come packed by
// packQ6_KT4: per block, for each activation in turn, its 292-byte Q8_K
// block and then the 256 bytes prepQ6_K makes of it.

DATA q6Mask30<>+0(SB)/8, $0x3030303030303030
DATA q6Mask30<>+8(SB)/8, $0x3030303030303030
DATA q6Mask30<>+16(SB)/8, $0x3030303030303030
DATA q6Mask30<>+24(SB)/8, $0x3030303030303030
GLOBL q6Mask30<>(SB), RODATA|NOPTR, $32

// q6Shuf holds, for k in 0..3, the VPSHUFB control that puts int16 scale
// 2k in the lower half and scale 2k+1 in the upper, as in q6_k_amd64.s.
DATA q6Shuf<>+0(SB)/8, $0x0100010001000100
DATA q6Shuf<>+8(SB)/8, $0x0100010001000100
DATA q6Shuf<>+16(SB)/8, $0x0302030203020302
DATA q6Shuf<>+24(SB)/8, $0x0302030203020302
DATA q6Shuf<>+32(SB)/8, $0x0504050405040504
DATA q6Shuf<>+40(SB)/8, $0x0504050405040504
DATA q6Shuf<>+48(SB)/8, $0x0706070607060706
DATA q6Shuf<>+56(SB)/8, $0x0706070607060706
DATA q6Shuf<>+64(SB)/8, $0x0908090809080908
DATA q6Shuf<>+72(SB)/8, $0x0908090809080908
DATA q6Shuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6Shuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6Shuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6Shuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6Shuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6Shuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6Shuf<>(SB), RODATA|NOPTR, $128

// K6TOK adds activation t's part of quants 32k..32k+31 of half h into
// iacc: the quants in Y8, their scales in Y13.
#define K6TOK(h, k, off, iacc) \
	VPMADDUBSW (4+128*h+32*k+off)(DI), Y8, Y14 \
	VPSUBW (292+128*h+32*k+off)(DI), Y14, Y14 \
	VPMADDWD Y13, Y14, Y14 \
	VPADDD Y14, iacc, iacc

// K6QUANTS finishes quants 32k..32k+31 of half h, given their low bits in
// Y8 and qh shifted so that bits 2k,2k+1 sit at 4,5 in Y13, and does the
// four activations' parts.
#define K6QUANTS(h, k) \
	VPAND q6Mask30<>(SB), Y13, Y13 \
	VPOR Y13, Y8, Y8 \
	VPSHUFB q6Shuf<>+(32*k)(SB), Y9, Y13 \
	K6TOK(h, k, 0, Y4) \
	K6TOK(h, k, 548, Y5) \
	K6TOK(h, k, 1096, Y6) \
	K6TOK(h, k, 1644, Y7)

#define K6HALF(h) \
	VPMOVSXBW (192+8*h)(SI), X9 \
	VPERMQ $0x44, Y9, Y9 \
	VMOVDQU (128+32*h)(SI), Y10 \
	VMOVDQU (64*h)(SI), Y11 \
	VMOVDQU (64*h+32)(SI), Y12 \
	VPAND ·nibMask(SB), Y11, Y8 \
	VPSLLW $4, Y10, Y13 \
	K6QUANTS(h, 0) \
	VPAND ·nibMask(SB), Y12, Y8 \
	VPSLLW $2, Y10, Y13 \
	K6QUANTS(h, 1) \
	VPSRLW $4, Y11, Y8 \
	VPAND ·nibMask(SB), Y8, Y8 \
	VMOVDQA Y10, Y13 \
	K6QUANTS(h, 2) \
	VPSRLW $4, Y12, Y8 \
	VPAND ·nibMask(SB), Y8, Y8 \
	VPSRLW $2, Y10, Y13 \
	K6QUANTS(h, 3)

// K6END finishes activation t's block: its sums in iacc, fp32(d) in X15.
#define K6END(off, iacc, acc) \
	VCVTDQ2PS iacc, iacc \
	VMULSS off(DI), X15, X8 \
	VBROADCASTSS X8, Y8 \
	VFMADD231PS Y8, iacc, acc

// K6STORE reduces acc as hsum_float_8 and stores it at dst.
#define K6STORE(acc, xacc, dst) \
	VEXTRACTF128 $1, acc, X8 \
	VADDPS X8, xacc, xacc \
	VMOVHLPS xacc, X8, X8 \
	VADDPS X8, xacc, xacc \
	VMOVSHDUP xacc, X8 \
	VADDSS X8, xacc, xacc \
	VMOVSS xacc, dst

// func dotQ6_KT4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
TEXT ·dotQ6_KT4AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	LEAQ (R14)(R14*2), R15
	MOVQ rows+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

k6row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R11, DI
	MOVQ R10, CX

k6block:
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	K6HALF(0)
	K6HALF(1)
	MOVWLZX 208(SI), AX
	VMOVD AX, X15
	VCVTPH2PS X15, X15
	K6END(0, Y4, Y0)
	K6END(548, Y5, Y1)
	K6END(1096, Y6, Y2)
	K6END(1644, Y7, Y3)

	ADDQ $210, SI
	ADDQ $2192, DI
	DECQ CX
	JNZ  k6block

	K6STORE(Y0, X0, (R8))
	K6STORE(Y1, X1, (R8)(R14*1))
	K6STORE(Y2, X2, (R8)(R14*2))
	K6STORE(Y3, X3, (R8)(R15*1))
	ADDQ $4, R8
	DECQ R9
	JNZ  k6row
	VZEROUPPER
	RET

// F32, as dotF32AVX2 per (row, activation): four 8-lane FMA accumulators
// over chunks of 32 elements, reduced as (a0+a2)+(a1+a3), the halves, two
// horizontal adds. Each chunk of a row is loaded once for two activations
// (16 accumulators would leave no register for more), so a row is walked
// twice for the tile's four. The tail past the last whole chunk is left to
// the Go caller. The activations are the four vectors back to back.

#define F32RED(a0, a1, a2, a3, xa0, dst) \
	VADDPS a2, a0, a0 \
	VADDPS a3, a1, a1 \
	VADDPS a1, a0, a0 \
	VEXTRACTF128 $1, a0, X8 \
	VADDPS X8, xa0, xa0 \
	VHADDPS xa0, xa0, xa0 \
	VHADDPS xa0, xa0, xa0 \
	VMOVSS xa0, dst


// func dotF32T4AVX2(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)
TEXT ·dotF32T4AVX2(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	MOVQ rows+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ chunks+32(FP), R10
	MOVQ act+48(FP), R11
	MOVQ actStride+56(FP), R13

f32row:
	MOVQ R11, DI
	MOVQ R8, DX
	MOVQ $2, AX

f32pass:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R12
	MOVQ DI, R15
	LEAQ (DI)(R13*1), BX
	MOVQ R10, CX
	TESTQ CX, CX
	JZ   f32done

f32chunk:
	VMOVUPS 0(R12), Y8
	VMOVUPS 32(R12), Y9
	VMOVUPS 64(R12), Y10
	VMOVUPS 96(R12), Y11
	VFMADD231PS 0(R15), Y8, Y0
	VFMADD231PS 0(BX), Y8, Y4
	VFMADD231PS 32(R15), Y9, Y1
	VFMADD231PS 32(BX), Y9, Y5
	VFMADD231PS 64(R15), Y10, Y2
	VFMADD231PS 64(BX), Y10, Y6
	VFMADD231PS 96(R15), Y11, Y3
	VFMADD231PS 96(BX), Y11, Y7
	ADDQ $128, R12
	ADDQ $128, R15
	ADDQ $128, BX
	DECQ CX
	JNZ  f32chunk

f32done:
	F32RED(Y0, Y1, Y2, Y3, X0, (DX))
	F32RED(Y4, Y5, Y6, Y7, X4, (DX)(R14*1))
	LEAQ (DI)(R13*2), DI
	LEAQ (DX)(R14*2), DX
	DECQ AX
	JNZ  f32pass

	ADDQ $4, R8
	ADDQ rowBytes+40(FP), SI
	DECQ R9
	JNZ  f32row
	VZEROUPPER
	RET

// F32 in blocks of three rows: the same sums as dotF32T4AVX2, with the
// loads shared by more multiply-adds. Accumulator j of a dot only ever
// adds the 8-float chunks at 32i+8j, in the order of i, so it can be
// formed in a pass of its own: pass j walks the rows and activations at
// a stride of 128 bytes, from byte 32j, with one accumulator per (row,
// activation), twelve in all, plus three registers of weights and one of
// activation. A chunk index costs 7 loads for 12 FMAs (dotF32T4AVX2
// spends 12 for 8). Each pass ends with its accumulators in scratch;
// accumulator t·3+r (row r, activation t) is slot t·3+r of the pass's 384
// bytes. A call may cover only a slab of the columns: the next slab's call
// starts the accumulators from scratch instead of zero, so the sums go on
// in the same order. After the last slab, each (row, activation) is
// reduced exactly as ggml does: (a0+a2)+(a1+a3), the halves, two
// horizontal adds. Prefetches bring each line of the rows into L1 one
// pass pair ahead (see r3start).

// F32R3FMA multiplies the three rows' chunk (Y12..Y14) by the chunk of
// one activation at src, into the accumulators a, b, c.
#define F32R3FMA(src, a, b, c) \
	VMOVUPS src, Y15 \
	VFMADD231PS Y15, Y12, a \
	VFMADD231PS Y15, Y13, b \
	VFMADD231PS Y15, Y14, c

// F32SUM and F32QUAD are in hsum_amd64.h.

// func dotF32R3T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// blocks is the number of three-row blocks; chunks, at least 1, the
// chunks of 32 columns of this call's slab. Block b's scratch is the
// 4·12·8 float32 at scratch + b·sstride bytes. flags bit 0 (f32Resume)
// starts the accumulators from scratch, bit 1 (f32Finish) reduces them
// into out.
TEXT ·dotF32R3T4AVX2(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	MOVQ blocks+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ rowBytes+40(FP), R12
	MOVQ act+48(FP), R11
	MOVQ actStride+56(FP), R13
	LEAQ (R13)(R13*2), DX
	MOVQ scratch+64(FP), DI

r3block:
	XORQ R10, R10

r3pass:
	TESTQ $1, flags+80(FP)
	JNZ   r3resume
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	JMP   r3start

r3resume:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	VMOVUPS 256(DI), Y8
	VMOVUPS 288(DI), Y9
	VMOVUPS 320(DI), Y10
	VMOVUPS 352(DI), Y11

r3start:
	// Passes 0 and 1 prefetch the second line of each 128 bytes of the
	// rows, which passes 2 and 3 read; passes 2 and 3 prefetch the first
	// lines of the next block's rows, for its passes 0 and 1.
	LEAQ 64(SI), BX
	CMPQ R10, $64
	JLT  r3pf
	LEAQ (SI)(R12*2), BX
	ADDQ R12, BX
r3pf:
	LEAQ (SI)(R10*1), AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

r3chunk:
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R12*1)
	PREFETCHT0 (BX)(R12*2)
	VMOVUPS (AX), Y12
	VMOVUPS (AX)(R12*1), Y13
	VMOVUPS (AX)(R12*2), Y14
	F32R3FMA((R15), Y0, Y1, Y2)
	F32R3FMA((R15)(R13*1), Y3, Y4, Y5)
	F32R3FMA((R15)(R13*2), Y6, Y7, Y8)
	F32R3FMA((R15)(DX*1), Y9, Y10, Y11)
	ADDQ $128, AX
	ADDQ $128, R15
	ADDQ $128, BX
	DECQ CX
	JNZ  r3chunk

	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VMOVUPS Y8, 256(DI)
	VMOVUPS Y9, 288(DI)
	VMOVUPS Y10, 320(DI)
	VMOVUPS Y11, 352(DI)
	ADDQ $384, DI
	ADDQ $32, R10
	CMPQ R10, $128
	JNE  r3pass

	SUBQ  $1536, DI
	TESTQ $2, flags+80(FP)
	JZ    r3next
	LEAQ  (R14)(R14*2), BX
	F32QUAD(384, 0, 96, 32, 128)
	VMOVSD       X4, 0(R8)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(R14*1)
	F32QUAD(384, 192, 288, 224, 320)
	VMOVSD       X4, 0(R8)(R14*2)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(BX*1)
	F32QUAD(384, 64, 256, 160, 352)
	VMOVSS       X4, 8(R8)
	VEXTRACTPS   $1, X4, 8(R8)(R14*1)
	VEXTRACTF128 $1, Y4, X5
	VMOVSS       X5, 8(R8)(R14*2)
	VEXTRACTPS   $1, X5, 8(R8)(BX*1)

r3next:
	ADDQ sstride+72(FP), DI
	ADDQ $12, R8
	LEAQ (SI)(R12*2), SI
	ADDQ R12, SI
	DECQ R9
	JNZ  r3block
	VZEROUPPER
	RET

// F32R2FMA multiplies the two rows' chunk (Y12, Y13) by the chunk of one
// activation at src, into the accumulators a, b.
#define F32R2FMA(src, a, b) \
	VMOVUPS src, Y15 \
	VFMADD231PS Y15, Y12, a \
	VFMADD231PS Y15, Y13, b

// func dotF32R2T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R3T4AVX2 for blocks of two rows, for the rows a tile has past its
// blocks of three: eight accumulators, 6 loads for 8 FMAs. Accumulator
// t·2+r (row r, activation t) is slot t·2+r of a pass's 256 bytes of
// scratch; a block's scratch is 4·8·8 float32.
TEXT ·dotF32R2T4AVX2(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	MOVQ blocks+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ rowBytes+40(FP), R12
	MOVQ act+48(FP), R11
	MOVQ actStride+56(FP), R13
	LEAQ (R13)(R13*2), DX
	MOVQ scratch+64(FP), DI

r2block:
	XORQ R10, R10

r2pass:
	TESTQ $1, flags+80(FP)
	JNZ   r2resume
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP   r2start

r2resume:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

r2start:
	// Passes 0 and 1 prefetch the second line of each 128 bytes of the
	// rows, which passes 2 and 3 read; passes 2 and 3 prefetch the first
	// lines of the next block's rows, for its passes 0 and 1.
	LEAQ 64(SI), BX
	CMPQ R10, $64
	JLT  r2pf
	LEAQ (SI)(R12*2), BX
r2pf:
	LEAQ (SI)(R10*1), AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

r2chunk:
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R12*1)
	VMOVUPS (AX), Y12
	VMOVUPS (AX)(R12*1), Y13
	F32R2FMA((R15), Y0, Y1)
	F32R2FMA((R15)(R13*1), Y2, Y3)
	F32R2FMA((R15)(R13*2), Y4, Y5)
	F32R2FMA((R15)(DX*1), Y6, Y7)
	ADDQ $128, AX
	ADDQ $128, R15
	ADDQ $128, BX
	DECQ CX
	JNZ  r2chunk

	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $32, R10
	CMPQ R10, $128
	JNE  r2pass

	SUBQ  $1024, DI
	TESTQ $2, flags+80(FP)
	JZ    r2next
	LEAQ  (R14)(R14*2), BX
	F32QUAD(256, 0, 64, 32, 96)
	VMOVSD       X4, 0(R8)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(R14*1)
	F32QUAD(256, 128, 192, 160, 224)
	VMOVSD       X4, 0(R8)(R14*2)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(BX*1)

r2next:
	ADDQ sstride+72(FP), DI
	ADDQ $8, R8
	LEAQ (SI)(R12*2), SI
	DECQ R9
	JNZ  r2block
	VZEROUPPER
	RET

// F16, as dotF16AVX2 per (row, activation): the arithmetic of the F32
// blocks (ggml_vec_dot_f16 on AVX2 widens both vectors and sums them as
// ggml_vec_dot_f32 does), on F16 weights widened as they are loaded.

// func dotF16R3T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R3T4AVX2 for F16 rows, as dotF16AVX2 per (row, activation): the
// weights are widened to float32 as they are loaded, the activations come
// widened already; pass j reads 16 bytes of weights at 16j of each chunk
// of 64.
TEXT ·dotF16R3T4AVX2(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	MOVQ blocks+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ rowBytes+40(FP), R12
	MOVQ act+48(FP), R11
	MOVQ actStride+56(FP), R13
	LEAQ (R13)(R13*2), DX
	MOVQ scratch+64(FP), DI

h3block:
	XORQ R10, R10
	LEAQ (SI)(R12*2), BX
	ADDQ R12, BX

h3pass:
	TESTQ $1, flags+80(FP)
	JNZ   h3resume
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	JMP   h3start

h3resume:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	VMOVUPS 256(DI), Y8
	VMOVUPS 288(DI), Y9
	VMOVUPS 320(DI), Y10
	VMOVUPS 352(DI), Y11

h3start:
	MOVQ R10, AX
	SHRQ $1, AX
	ADDQ SI, AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

h3chunk:
	PREFETCHT0 (BX)
	VCVTPH2PS (AX), Y12
	VCVTPH2PS (AX)(R12*1), Y13
	VCVTPH2PS (AX)(R12*2), Y14
	F32R3FMA((R15), Y0, Y1, Y2)
	F32R3FMA((R15)(R13*1), Y3, Y4, Y5)
	F32R3FMA((R15)(R13*2), Y6, Y7, Y8)
	F32R3FMA((R15)(DX*1), Y9, Y10, Y11)
	ADDQ $64, AX
	ADDQ $128, R15
	ADDQ $64, BX
	DECQ CX
	JNZ  h3chunk

	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VMOVUPS Y8, 256(DI)
	VMOVUPS Y9, 288(DI)
	VMOVUPS Y10, 320(DI)
	VMOVUPS Y11, 352(DI)
	// The next pass prefetches the next block's next row.
	MOVQ chunks+32(FP), CX
	SHLQ $6, CX
	SUBQ CX, BX
	ADDQ R12, BX
	ADDQ $384, DI
	ADDQ $32, R10
	CMPQ R10, $128
	JNE  h3pass

	SUBQ  $1536, DI
	TESTQ $2, flags+80(FP)
	JZ    h3next
	LEAQ  (R14)(R14*2), BX
	F32QUAD(384, 0, 96, 32, 128)
	VMOVSD       X4, 0(R8)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(R14*1)
	F32QUAD(384, 192, 288, 224, 320)
	VMOVSD       X4, 0(R8)(R14*2)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(BX*1)
	F32QUAD(384, 64, 256, 160, 352)
	VMOVSS       X4, 8(R8)
	VEXTRACTPS   $1, X4, 8(R8)(R14*1)
	VEXTRACTF128 $1, Y4, X5
	VMOVSS       X5, 8(R8)(R14*2)
	VEXTRACTPS   $1, X5, 8(R8)(BX*1)

h3next:
	ADDQ sstride+72(FP), DI
	ADDQ $12, R8
	LEAQ (SI)(R12*2), SI
	ADDQ R12, SI
	DECQ R9
	JNZ  h3block
	VZEROUPPER
	RET

// func dotF16R2T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R2T4AVX2 for F16 rows, as dotF16AVX2 per (row, activation): the
// weights are widened to float32 as they are loaded, the activations come
// widened already; pass j reads 16 bytes of weights at 16j of each chunk
// of 64.
TEXT ·dotF16R2T4AVX2(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	MOVQ blocks+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ rowBytes+40(FP), R12
	MOVQ act+48(FP), R11
	MOVQ actStride+56(FP), R13
	LEAQ (R13)(R13*2), DX
	MOVQ scratch+64(FP), DI

h2block:
	XORQ R10, R10
	LEAQ (SI)(R12*2), BX

h2pass:
	TESTQ $1, flags+80(FP)
	JNZ   h2resume
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP   h2start

h2resume:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

h2start:
	MOVQ R10, AX
	SHRQ $1, AX
	ADDQ SI, AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

h2chunk:
	PREFETCHT0 (BX)
	VCVTPH2PS (AX), Y12
	VCVTPH2PS (AX)(R12*1), Y13
	F32R2FMA((R15), Y0, Y1)
	F32R2FMA((R15)(R13*1), Y2, Y3)
	F32R2FMA((R15)(R13*2), Y4, Y5)
	F32R2FMA((R15)(DX*1), Y6, Y7)
	ADDQ $64, AX
	ADDQ $128, R15
	ADDQ $64, BX
	DECQ CX
	JNZ  h2chunk

	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	// The next pass prefetches the next block's next row.
	MOVQ chunks+32(FP), CX
	SHLQ $6, CX
	SUBQ CX, BX
	ADDQ R12, BX
	ADDQ $256, DI
	ADDQ $32, R10
	CMPQ R10, $128
	JNE  h2pass

	SUBQ  $1024, DI
	TESTQ $2, flags+80(FP)
	JZ    h2next
	LEAQ  (R14)(R14*2), BX
	F32QUAD(256, 0, 64, 32, 96)
	VMOVSD       X4, 0(R8)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(R14*1)
	F32QUAD(256, 128, 192, 160, 224)
	VMOVSD       X4, 0(R8)(R14*2)
	VEXTRACTF128 $1, Y4, X5
	VMOVSD       X5, 0(R8)(BX*1)

h2next:
	ADDQ sstride+72(FP), DI
	ADDQ $8, R8
	LEAQ (SI)(R12*2), SI
	DECQ R9
	JNZ  h2block
	VZEROUPPER
	RET

// func widenF16AVX2(dst, src *byte, n int)
//
// widenF16AVX2 converts n F16 values at src, n a multiple of 8, to float32
// at dst, as the F16 kernels convert them (VCVTPH2PS).
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   widendone

widen:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       widen
	VZEROUPPER

widendone:
	RET

// BF16, as dotBF16AVX2 per (row, activation): ggml_vec_dot_bf16 on AVX2
// multiplies and adds in separate roundings, and ends its reduction with
// pairs of lanes two apart, then the two left.

// BF16R2MA multiplies the two rows' chunk (Y12, Y13) by the chunk of one
// activation at src and adds the products into the accumulators a, b.
#define BF16R2MA(src, a, b) \
	VMOVUPS src, Y15 \
	VMULPS Y15, Y12, Y14 \
	VMULPS Y15, Y13, Y11 \
	VADDPS Y14, a, a \
	VADDPS Y11, b, b

// BF16RED reduces slot off of the four passes at (DI), 256 bytes apart,
// into dst, as dotBF16AVX2 reduces its accumulators.
#define BF16RED(off, dst) \
	F32SUM(off, 256, Y0, Y1) \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X1, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, dst

// func dotBF16R2T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R2T4AVX2 for BF16 rows, as dotBF16AVX2 per (row, activation):
// the weights are widened to float32 as they are loaded, the activations
// come widened already; each product is rounded, then added (no FMA); the
// four accumulators are reduced as dotBF16AVX2 does. Pass j reads 16
// bytes of weights at 16j of each chunk of 64.
TEXT ·dotBF16R2T4AVX2(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	MOVQ blocks+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ rowBytes+40(FP), R12
	MOVQ act+48(FP), R11
	MOVQ actStride+56(FP), R13
	LEAQ (R13)(R13*2), DX
	MOVQ scratch+64(FP), DI

b2block:
	XORQ R10, R10
	LEAQ (SI)(R12*2), BX

b2pass:
	TESTQ $1, flags+80(FP)
	JNZ   b2resume
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP   b2start

b2resume:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

b2start:
	MOVQ R10, AX
	SHRQ $1, AX
	ADDQ SI, AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

b2chunk:
	PREFETCHT0 (BX)
	VPMOVZXWD (AX), Y12
	VPSLLD $16, Y12, Y12
	VPMOVZXWD (AX)(R12*1), Y13
	VPSLLD $16, Y13, Y13
	BF16R2MA((R15), Y0, Y1)
	BF16R2MA((R15)(R13*1), Y2, Y3)
	BF16R2MA((R15)(R13*2), Y4, Y5)
	BF16R2MA((R15)(DX*1), Y6, Y7)
	ADDQ $64, AX
	ADDQ $128, R15
	ADDQ $64, BX
	DECQ CX
	JNZ  b2chunk

	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	// The next pass prefetches the next block's next row.
	MOVQ chunks+32(FP), CX
	SHLQ $6, CX
	SUBQ CX, BX
	ADDQ R12, BX
	ADDQ $256, DI
	ADDQ $32, R10
	CMPQ R10, $128
	JNE  b2pass

	SUBQ  $1024, DI
	TESTQ $2, flags+80(FP)
	JZ    b2next
	LEAQ  (R14)(R14*2), BX
	BF16RED(0, 0(R8))
	BF16RED(32, 4(R8))
	BF16RED(64, 0(R8)(R14*1))
	BF16RED(96, 4(R8)(R14*1))
	BF16RED(128, 0(R8)(R14*2))
	BF16RED(160, 4(R8)(R14*2))
	BF16RED(192, 0(R8)(BX*1))
	BF16RED(224, 4(R8)(BX*1))

b2next:
	ADDQ sstride+72(FP), DI
	ADDQ $8, R8
	LEAQ (SI)(R12*2), SI
	DECQ R9
	JNZ  b2block
	VZEROUPPER
	RET

// func widenBF16AVX2(dst, src *byte, n int)
//
// widenBF16AVX2 converts n BF16 values at src, n a multiple of 8, to
// float32 at dst.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   bwidendone

bwiden:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       bwiden
	VZEROUPPER

bwidendone:
	RET
