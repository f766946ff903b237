//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels for QSF's rotated table types (QSF_Q2R, QSF_Q3R, QSF_Q4R)
// against Q8_0 activations, in quant's order. Per 64-element block: the
// codes are looked up in the type's int8 table (VPSHUFB), given the signs
// of the activation quants (VPSIGNB) and multiplied with their absolute
// values (VPMADDUBSW, the prepared |q|), the int16 pair sums multiplied by
// their sub-blocks' multipliers 1+sc_k and added in pairs (VPMADDWD with a
// row of rotMul), which leaves eight int32 lanes per half; VPHADDD folds
// the two halves' lanes into one register. Four blocks are reduced
// together (VPHADDD, then the 128-bit lanes added) to the eight exact
// integers Iₕ of the four blocks, converted at once and multiplied by
// d·dₐₕ (the blocks' d, the activation scales from prepRot's form, each
// product rounded to float32), and added to acc₀, acc₁ (lanes 0 and 1 of
// X0) block after block: the float order of quant's reference, no FMA.
// Blocks left over from the fours go one at a time. At the end of the
// row, acc₀+acc₁.
//
// Registers: SI weights, DI activation, R12 its |q| in prepRot's form, DX
// the activation scales there, R13 rotMul, R8 out, R9 rows left, R10
// blocks per row, R11/R14 activation starts, CX blocks left, X0 the
// row's acc₀, acc₁; Y14 the code mask, Y13 the table, Y8 all ones, Y12
// the lane shifts of 2-bit codes, Y7/Y6 bit spreading (QSF_Q3R), X15 the
// shuffle that doubles the fp16 d of four blocks.

DATA rotTab4<>+0(SB)/8, $0xfaeee1d4c6b5a081
DATA rotTab4<>+8(SB)/8, $0x7f604b3a2c1f1206
DATA rotTab4<>+16(SB)/8, $0xfaeee1d4c6b5a081
DATA rotTab4<>+24(SB)/8, $0x7f604b3a2c1f1206
GLOBL rotTab4<>(SB), RODATA|NOPTR, $32

DATA rotTab3<>+0(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotTab3<>+8(SB)/8, $0x0000000000000000
DATA rotTab3<>+16(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotTab3<>+24(SB)/8, $0x0000000000000000
GLOBL rotTab3<>(SB), RODATA|NOPTR, $32

DATA rotTab2<>+0(SB)/8, $0x000000007f26da81
DATA rotTab2<>+8(SB)/8, $0x0000000000000000
DATA rotTab2<>+16(SB)/8, $0x000000007f26da81
DATA rotTab2<>+24(SB)/8, $0x0000000000000000
GLOBL rotTab2<>(SB), RODATA|NOPTR, $32

// rotShift2 shifts the high 128-bit lane's qwords by 2: with the codes
// broadcast to both lanes, bits 2k..2k+1 of byte j (k = 0 low, 1 high)
// end in the byte's low bits.
DATA rotShift2<>+0(SB)/8, $0
DATA rotShift2<>+8(SB)/8, $0
DATA rotShift2<>+16(SB)/8, $2
DATA rotShift2<>+24(SB)/8, $2
GLOBL rotShift2<>(SB), RODATA|NOPTR, $32

// rotBitShuf spreads byte k of a dword to bytes 8k..8k+7.
DATA rotBitShuf<>+0(SB)/8, $0x0000000000000000
DATA rotBitShuf<>+8(SB)/8, $0x0101010101010101
DATA rotBitShuf<>+16(SB)/8, $0x0202020202020202
DATA rotBitShuf<>+24(SB)/8, $0x0303030303030303
GLOBL rotBitShuf<>(SB), RODATA|NOPTR, $32

// rotBitMask has every bit but bit i set in byte i of each 8.
DATA rotBitMask<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA rotBitMask<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA rotBitMask<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA rotBitMask<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL rotBitMask<>(SB), RODATA|NOPTR, $32

// rotDupD picks the low word of each dword twice: the fp16 d of four
// blocks loaded as dwords (d, sc) becomes d, d of each.
DATA rotDupD<>+0(SB)/8, $0x0504050401000100
DATA rotDupD<>+8(SB)/8, $0x0d0c0d0c09080908
GLOBL rotDupD<>(SB), RODATA|NOPTR, $16

#define ROT_SETUP(tab, mask) \
	MOVQ out+0(FP), R8 \
	MOVQ rows+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ nb+24(FP), R10 \
	MOVQ act+32(FP), R11 \
	MOVQ aux+40(FP), R14 \
	MOVQ mul+48(FP), R13 \
	MOVL mask, AX \
	VMOVD AX, X14 \
	VPBROADCASTD X14, Y14 \
	VMOVDQU tab, Y13 \
	VPCMPEQB Y8, Y8, Y8 \
	VMOVDQU rotShift2<>(SB), Y12 \
	VMOVDQU rotBitShuf<>(SB), Y7 \
	VMOVDQU rotBitMask<>(SB), Y6 \
	VMOVDQU rotDupD<>(SB), X15

// ROT_INT takes block k (of bb bytes) of the four at SI, DI and R12,
// whose table values are in Y1 (elements 0..31) and Y2 (32..63), to int32
// lanes: in each 128-bit lane of out, two partial sums of the first half
// (elements 0..15 in the low lane, 16..31 in the high one), then two of
// the second, each with its sub-block's multiplier.
#define ROT_INT(k, bb, out) \
	VPSIGNB (2+68*k)(DI), Y1, Y1 \
	VPSIGNB (36+68*k)(DI), Y2, Y2 \
	VMOVDQU (64*k)(R12), Y3 \
	VPMADDUBSW Y1, Y3, Y1 \
	VMOVDQU (32+64*k)(R12), Y4 \
	VPMADDUBSW Y2, Y4, Y2 \
	MOVBLZX (2+bb*k)(SI), AX \
	SHLQ $5, AX \
	MOVBLZX (3+bb*k)(SI), BX \
	SHLQ $5, BX \
	VPMADDWD (R13)(AX*1), Y1, Y1 \
	VPMADDWD (R13)(BX*1), Y2, Y2 \
	VPHADDD Y2, Y1, out

// ROT_LOAD4 puts the table values of QSF_Q4R block k in Y1, Y2.
#define ROT_LOAD4(k) \
	VMOVDQU (4+36*k)(SI), Y1 \
	VPSRLW $4, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPSHUFB Y1, Y13, Y1 \
	VPSHUFB Y2, Y13, Y2

// ROT_LOAD2 puts the table values of QSF_Q2R block k in Y1, Y2.
#define ROT_LOAD2(k) \
	VBROADCASTI128 (4+20*k)(SI), Y1 \
	VPSRLVQ Y12, Y1, Y1 \
	VPSRLW $4, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPSHUFB Y1, Y13, Y1 \
	VPSHUFB Y2, Y13, Y2

// ROT_LOAD3 puts the table values of QSF_Q3R block k in Y1, Y2: the low
// bits as QSF_Q2R's, the high bit of element j bit j%8 of qh[j/8] (qh at
// 20 in the block).
#define ROT_LOAD3(k) \
	VBROADCASTI128 (4+28*k)(SI), Y1 \
	VPSRLVQ Y12, Y1, Y1 \
	VPSRLW $4, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPBROADCASTD (20+28*k)(SI), Y3 \
	VPSHUFB Y7, Y3, Y3 \
	VPOR Y6, Y3, Y3 \
	VPCMPEQB Y8, Y3, Y3 \
	VPABSB Y3, Y3 \
	VPSLLW $2, Y3, Y3 \
	VPOR Y3, Y1, Y1 \
	VPBROADCASTD (24+28*k)(SI), Y3 \
	VPSHUFB Y7, Y3, Y3 \
	VPOR Y6, Y3, Y3 \
	VPCMPEQB Y8, Y3, Y3 \
	VPABSB Y3, Y3 \
	VPSLLW $2, Y3, Y3 \
	VPOR Y3, Y2, Y2 \
	VPSHUFB Y1, Y13, Y1 \
	VPSHUFB Y2, Y13, Y2

// ROT_FOUR adds four blocks (bb bytes each, values loaded by load) to
// acc₀, acc₁ and moves SI, DI, R12 and DX past them.
#define ROT_FOUR(load, bb) \
	load(0) \
	ROT_INT(0, bb, Y9) \
	load(1) \
	ROT_INT(1, bb, Y10) \
	VPHADDD Y10, Y9, Y9 \
	load(2) \
	ROT_INT(2, bb, Y10) \
	load(3) \
	ROT_INT(3, bb, Y11) \
	VPHADDD Y11, Y10, Y10 \
	VPERM2I128 $0x20, Y10, Y9, Y1 \
	VPERM2I128 $0x31, Y10, Y9, Y2 \
	VPADDD Y2, Y1, Y1 \
	VCVTDQ2PS Y1, Y1 \
	VMOVD 0(SI), X2 \
	VPINSRD $1, bb(SI), X2, X2 \
	VPINSRD $2, (2*bb)(SI), X2, X2 \
	VPINSRD $3, (3*bb)(SI), X2, X2 \
	VPSHUFB X15, X2, X2 \
	VCVTPH2PS X2, Y2 \
	VMULPS (DX), Y2, Y2 \
	VMULPS Y2, Y1, Y1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X1, X1, X2 \
	VADDPS X2, X0, X0 \
	VEXTRACTF128 $1, Y1, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X1, X1, X2 \
	VADDPS X2, X0, X0 \
	ADDQ $(4*bb), SI \
	ADDQ $272, DI \
	ADDQ $256, R12 \
	ADDQ $32, DX

// ROT_ONE adds one block to acc₀, acc₁ and moves past it.
#define ROT_ONE(load, bb) \
	load(0) \
	ROT_INT(0, bb, Y1) \
	VEXTRACTI128 $1, Y1, X2 \
	VPADDD X2, X1, X1 \
	VPHADDD X1, X1, X1 \
	VCVTDQ2PS X1, X1 \
	VPBROADCASTW 0(SI), X2 \
	VCVTPH2PS X2, X2 \
	VMOVQ (DX), X3 \
	VMULPS X3, X2, X2 \
	VMULPS X2, X1, X1 \
	VADDPS X1, X0, X0 \
	ADDQ $bb, SI \
	ADDQ $68, DI \
	ADDQ $64, R12 \
	ADDQ $8, DX

// ROT_ROWS runs the rows: the blocks by four, then the rest one by one,
// then acc₀+acc₁ to out.
#define ROT_ROWS(load, bb) \
row: \
	VXORPS X0, X0, X0 \
	MOVQ R11, DI \
	MOVQ R14, R12 \
	MOVQ R10, DX \
	SHLQ $6, DX \
	ADDQ R14, DX \
	MOVQ R10, CX \
	CMPQ CX, $4 \
	JLT  one \
four: \
	ROT_FOUR(load, bb) \
	SUBQ $4, CX \
	CMPQ CX, $4 \
	JGE  four \
one: \
	TESTQ CX, CX \
	JZ   store \
	ROT_ONE(load, bb) \
	DECQ CX \
	JMP  one \
store: \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, (R8) \
	ADDQ $4, R8 \
	DECQ R9 \
	JNZ  row \
	VZEROUPPER \
	RET

// func dotQ4RAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ4RAVX2(SB), NOSPLIT, $0-56
	ROT_SETUP(rotTab4<>(SB), $0x0f0f0f0f)
	ROT_ROWS(ROT_LOAD4, 36)

// func dotQ2RAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ2RAVX2(SB), NOSPLIT, $0-56
	ROT_SETUP(rotTab2<>(SB), $0x03030303)
	ROT_ROWS(ROT_LOAD2, 20)

// func dotQ3RAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ3RAVX2(SB), NOSPLIT, $0-56
	ROT_SETUP(rotTab3<>(SB), $0x03030303)
	ROT_ROWS(ROT_LOAD3, 28)
