//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The neon tiers' kernels for QSF's rotated table types (QSF_Q2R,
// QSF_Q3R, QSF_Q4R) against Q8_0 activations, in quant's order, four
// rows at a time. Per 64-element block of a row: the codes in four
// registers (elements 0-15, 16-31, 32-47, 48-63, one sub-block each),
// looked up in the type's int8 table (TBL); per sub-block k, four int32
// lanes that add up to the sum Sₖ of its table values times the
// activation quants (ISUB: SDOT, or widening multiplies whose int16 lanes
// take two products each); pairwise adds (ADDP) to S₀..S₃ in one
// register, times the multipliers 1+sc_k (MLA: Sₖ + Sₖ·sc_k). A pairwise
// add of two rows' registers leaves the exact integers I₀, I₁ of both
// rows. Then one float32 step per half: converted, times dₕ = d·dₐₕ (the
// fp16 scales converted in lanes and multiplied, rounded) and added to
// the rows' acc₀, acc₁, the blocks in order; no fused multiply-add
// anywhere. At the end of the rows, acc₀+acc₁ (FADDP). Rows left over
// from the fours go one at a time, the same steps.
//
// R0 out, R1 rows left, R2 bytes per row, R3 nb, R5 act, R6 (R19-R21)
// the rows' weights, R9 (R22-R24) their d, R10 sc, R7 activation block,
// R11/R12 its scales, R8 blocks left. V20-V23 spread qh bytes 0-7 over
// eight bytes each, V27 the bits 1..128, V31 4 in every byte (QSF_Q3R);
// V28 the multipliers, V24 their shifts, V25 15 (int32 lanes); V29 the
// table, V30 the code mask; V26 the activation scales, V16/V17 the
// rows' acc₀, acc₁.

DATA rotneon<>+0(SB)/8, $0x0000000000000000
DATA rotneon<>+8(SB)/8, $0x0101010101010101
DATA rotneon<>+16(SB)/8, $0x0202020202020202
DATA rotneon<>+24(SB)/8, $0x0303030303030303
DATA rotneon<>+32(SB)/8, $0x0404040404040404
DATA rotneon<>+40(SB)/8, $0x0505050505050505
DATA rotneon<>+48(SB)/8, $0x0606060606060606
DATA rotneon<>+56(SB)/8, $0x0707070707070707
DATA rotneon<>+64(SB)/8, $0xfffffffc00000000
DATA rotneon<>+72(SB)/8, $0xfffffff4fffffff8
DATA rotneon<>+80(SB)/8, $0x0000000f0000000f
DATA rotneon<>+88(SB)/8, $0x0000000f0000000f
DATA rotneon<>+96(SB)/8, $0x0000000100000001
DATA rotneon<>+104(SB)/8, $0x0000000100000001
DATA rotneon<>+112(SB)/8, $0x8040201008040201
DATA rotneon<>+120(SB)/8, $0x8040201008040201
DATA rotneon<>+128(SB)/8, $0x000000007f26da81
DATA rotneon<>+136(SB)/8, $0x0000000000000000
DATA rotneon<>+144(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotneon<>+152(SB)/8, $0x0000000000000000
DATA rotneon<>+160(SB)/8, $0xfaeee1d4c6b5a081
DATA rotneon<>+168(SB)/8, $0x7f604b3a2c1f1206
DATA rotneon<>+176(SB)/8, $0x0404040404040404
DATA rotneon<>+184(SB)/8, $0x0404040404040404
GLOBL rotneon<>(SB), RODATA|NOPTR, $192

#define ROTPROLOGUE(tab, mask, bb) \
	MOVD out+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R6 \
	MOVD nb+24(FP), R3 \
	MOVD act+32(FP), R5 \
	MOVD $bb, R2 \
	MUL R3, R2, R2 \
	MOVD $rotneon<>(SB), R9 \
	VLD1.P 64(R9), [V20.B16, V21.B16, V22.B16, V23.B16] \
	VLD1.P 64(R9), [V24.B16, V25.B16, V26.B16, V27.B16] \
	MOVD $rotneon<>+tab(SB), R9 \
	VLD1 (R9), [V29.B16] \
	MOVD $rotneon<>+176(SB), R9 \
	VLD1 (R9), [V31.B16] \
	VMOVI mask, V30.B16

// ROTLOAD2 loads the d of the block at p into d (p moves past the
// block), sc into R10, its 2-bit codes (QSF_Q2R's, and QSF_Q3R's low
// bits) into V1-V4 (elements 0-15, ...).
#define ROTLOAD2(p, d) \
	MOVHU.P 2(p), d \
	MOVHU.P 2(p), R10 \
	VLD1.P 16(p), [V0.B16] \
	AND16B(1, 0, 30) \
	USHR16B(2, 0, 2) \
	AND16B(2, 2, 30) \
	USHR16B(3, 0, 4) \
	AND16B(3, 3, 30) \
	USHR16B(4, 0, 6)

// ROTHIGH ORs bit 2 of the QSF_Q3R codes of register r (elements
// 16k..16k+15) in: bit j%8 of qh byte j/8, qh in V5.
#define ROTHIGH(r, spread) \
	TBL16B(14, 5, spread) \
	CMTST16B(14, 14, 27) \
	AND16B(14, 14, 31) \
	ORR16B(r, r, 14)

#define ROTLOAD3(p, d) \
	ROTLOAD2(p, d) \
	VLD1.P 8(p), [V5.B8] \
	ROTHIGH(1, 20) \
	ROTHIGH(2, 21) \
	ROTHIGH(3, 22) \
	ROTHIGH(4, 23)

#define ROTLOAD4(p, d) \
	MOVHU.P 2(p), d \
	MOVHU.P 2(p), R10 \
	VLD1.P 32(p), [V4.B16, V5.B16] \
	AND16B(1, 4, 30) \
	AND16B(2, 5, 30) \
	USHR16B(3, 4, 4) \
	USHR16B(4, 5, 4)

// ISUB_SDOT and ISUB_NEON set Vs to four int32 lanes that add up to the
// sum of the 16 int8 products of Vw and Va (t is scratch). In ISUB_NEON an
// int16 lane takes two products, |T·q| ≤ 127·128 each.
#define ISUB_SDOT(s, w, a, t) \
	MOVI0(s) \
	SDOT4S(s, w, a)

#define ISUB_NEON(s, w, a, t) \
	SMULL8H(t, w, a) \
	SMLAL28H(t, w, a) \
	SADDLP4S(s, t)

// ROTACT loads the activation block at R7 (two Q8_0 blocks; R7 moves
// past them): the quants in V6-V9, the scales' fp16 in R11 and R12.
#define ROTACT \
	MOVHU.P 2(R7), R11 \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	MOVHU.P 2(R7), R12 \
	VLD1.P 32(R7), [V8.B16, V9.B16]

// ROTROW takes the block at p (codes loaded by load, d to d) to Vr: the
// four sub-blocks' sums Sₖ (ADDP of their lanes) times their multipliers
// 1+sc_k (Sₖ + Sₖ·sc_k, MLA), lane k. V11-V13 are scratch.
#define ROTROW(load, p, d, ISUB, r) \
	load(p, d) \
	TBL16B(1, 29, 1) \
	TBL16B(2, 29, 2) \
	TBL16B(3, 29, 3) \
	TBL16B(4, 29, 4) \
	ISUB(r, 1, 6, 14) \
	ISUB(11, 2, 7, 15) \
	ISUB(12, 3, 8, 14) \
	ISUB(13, 4, 9, 15) \
	ADDP4S(r, r, 11) \
	ADDP4S(12, 12, 13) \
	ADDP4S(r, r, 12) \
	VDUP R10, V28.S4 \
	USHL4S(28, 28, 24) \
	AND16B(28, 28, 25) \
	MLA4S(r, r, 28)

// ROTROWS runs the rows: four at a time (R6, R19, R20, R21 their blocks,
// R2 bytes apart; V16 acc₀, acc₁ of the first two in lanes 0-3, V17 of
// the other two), then one at a time (V16 lanes 0, 1). Per block, the
// rows' ROTROW lanes are added pairwise (ADDP) to their I₀, I₁, converted,
// and the one float32 step per half: times d·dₐₕ (d and the activation
// scales converted from fp16 in lanes, multiplied, rounded), then added.
#define ROTROWS(load, ISUB) \
row4: \
	CMP $4, R1 \
	BLT row1 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
	ADD R2, R6, R19 \
	ADD R2, R19, R20 \
	ADD R2, R20, R21 \
blk4: \
	ROTACT \
	ROTROW(load, R6, R9, ISUB, 18) \
	ROTROW(load, R19, R22, ISUB, 19) \
	ADDP4S(18, 18, 19) \
	ROTROW(load, R20, R23, ISUB, 10) \
	ROTROW(load, R21, R24, ISUB, 19) \
	ADDP4S(10, 10, 19) \
	SCVTF4S(18, 18) \
	SCVTF4S(10, 10) \
	ORR R12<<16, R11, R11 \
	ORR R11<<32, R11, R11 \
	FMOVD R11, F26 \
	FCVTL4S(26, 26) \
	ORR R9<<16, R9, R9 \
	ORR R22<<32, R9, R9 \
	ORR R22<<48, R9, R9 \
	FMOVD R9, F14 \
	FCVTL4S(14, 14) \
	FMUL4S(14, 14, 26) \
	ORR R23<<16, R23, R23 \
	ORR R24<<32, R23, R23 \
	ORR R24<<48, R23, R23 \
	FMOVD R23, F15 \
	FCVTL4S(15, 15) \
	FMUL4S(15, 15, 26) \
	FMUL4S(18, 18, 14) \
	FADD4S(16, 16, 18) \
	FMUL4S(10, 10, 15) \
	FADD4S(17, 17, 10) \
	SUBS $1, R8 \
	BNE blk4 \
	FADDP4S(16, 16, 17) \
	VST1.P [V16.S4], 16(R0) \
	MOVD R21, R6 \
	SUB $4, R1 \
	B row4 \
row1: \
	CBZ R1, done \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
blk1: \
	ROTACT \
	ROTROW(load, R6, R9, ISUB, 10) \
	ADDP4S(10, 10, 10) \
	SCVTF4S(10, 10) \
	ORR R12<<16, R11, R11 \
	ORR R9<<32, R11, R11 \
	FMOVD R11, F14 \
	FCVTL4S(14, 14) \
	FMUL4SE(14, 14, 14, 2) \
	FMUL4S(10, 10, 14) \
	FADD4S(16, 16, 10) \
	SUBS $1, R8 \
	BNE blk1 \
	FADDPS(16, 16) \
	FMOVS.P F16, 4(R0) \
	SUB $1, R1 \
	B row1 \
done: \
	RET

// func dotQ2RNEON(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ2RNEON(SB), NOSPLIT, $0-40
	ROTPROLOGUE(128, $3, 20)
	ROTROWS(ROTLOAD2, ISUB_NEON)

// func dotQ2RSDOT(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ2RSDOT(SB), NOSPLIT, $0-40
	ROTPROLOGUE(128, $3, 20)
	ROTROWS(ROTLOAD2, ISUB_SDOT)

// func dotQ3RNEON(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ3RNEON(SB), NOSPLIT, $0-40
	ROTPROLOGUE(144, $3, 28)
	ROTROWS(ROTLOAD3, ISUB_NEON)

// func dotQ3RSDOT(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ3RSDOT(SB), NOSPLIT, $0-40
	ROTPROLOGUE(144, $3, 28)
	ROTROWS(ROTLOAD3, ISUB_SDOT)

// func dotQ4RNEON(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ4RNEON(SB), NOSPLIT, $0-40
	ROTPROLOGUE(160, $15, 36)
	ROTROWS(ROTLOAD4, ISUB_NEON)

// func dotQ4RSDOT(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ4RSDOT(SB), NOSPLIT, $0-40
	ROTPROLOGUE(160, $15, 36)
	ROTROWS(ROTLOAD4, ISUB_SDOT)
