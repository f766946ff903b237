//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q2_K and Q3_K kernels of the neon tiers, in the order of ggml's AVX2
// ggml_vec_dot_q2_K_q8_K and _q3_K_q8_K (quant's dots), one row after
// another. Per super-block, group g of 32 elements (its 2-bit field at
// bits 2(g%4) of qs bytes 32(g/4)..+31) adds its four 4-element sums of
// elements 0-15 times sc[2g] to the int32 lanes 0-3 (V26) and of
// elements 16-31 times sc[2g+1] to lanes 4-7 (V27); then
// acc = fma(yd·d, float(lanes), acc) in V24, V25 with FMLA, and the row's
// result is hsum_float_8(acc). Q2_K first takes its mins off the same
// accumulators: acc = fma(−(yd·dmin), float(prod), acc) with FMLS, lane k
// of prod = mn[2k]·bs[2k] + mn[2k+1]·bs[2k+1]. The sixteen scales are
// widened to the int32 lanes of V20-V23.
//
// R0 out, R1 rows left, R2 row, R3 nb, R4 rowBytes, R5 act, R6 weight
// block, R7 activation block, R8 blocks left. The quants of the block are
// in V2, V3 (first half: bytes 0-15, 16-31) and V4, V5 (second); V30
// holds 3 in every byte, V31 0x0F.

#define KROWSPROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD nb+24(FP), R3 \
	MOVD rowBytes+32(FP), R4 \
	MOVD act+40(FP), R5 \
	VMOVI $3, V30.B16 \
	VMOVI $15, V31.B16

// KGROUP adds a group: lo and hi make its 2-bit fields (elements 0-15 in
// V16, 16-31 in V17, with ADJ applied), times the activation's next 32
// quants, times the scales in lane ll of Vsl and lane lh of Vsh.
#define KGROUP(IDOT, lo, hi, ADJ, sl, ll, sh, lh) \
	VLD1.P 32(R7), [V8.B16, V9.B16] \
	lo \
	hi \
	ADJ \
	IDOT(18, 16, 8, 28, 29) \
	IDOT(19, 17, 9, 28, 29) \
	MLA4SE(26, 18, sl, ll) \
	MLA4SE(27, 19, sh, lh)

#define B0(d, q) AND16B(d, q, 30)
#define BS(d, q, s) USHR16B(d, q, s); AND16B(d, d, 30)

// KHALF adds the four groups of a half super-block (quants in Vq0, Vq1;
// scales in lanes 0-3 of Va and Vb).
#define KHALF(IDOT, q0, q1, a, b, A0, A1, A2, A3) \
	KGROUP(IDOT, B0(16, q0), B0(17, q1), A0, a, 0, a, 1) \
	KGROUP(IDOT, BS(16, q0, 2), BS(17, q1, 2), A1, a, 2, a, 3) \
	KGROUP(IDOT, BS(16, q0, 4), BS(17, q1, 4), A2, b, 0, b, 1) \
	KGROUP(IDOT, BS(16, q0, 6), BS(17, q1, 6), A3, b, 2, b, 3)

#define NOADJ

// KLANESDONE finishes a block: lanes into acc with yd·d (lane 0 of V6),
// and the row loop.
#define KLANESDONE \
	SCVTF4S(26, 26) \
	SCVTF4S(27, 27) \
	FMLA4SE(24, 26, 6, 0) \
	FMLA4SE(25, 27, 6, 0) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(24, 25, 18) \
	FMOVS.P F24, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// Q2_K: 84 bytes a block: scales (low nibble) and mins (high) of the 16
// sub-blocks, qs[64], d, dmin.
#define Q2_KROWS(IDOT) \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(24) \
	MOVI0(25) \
block: \
	FMOVS 80(R6), F0 \
	FCVTL4S(0, 0) \
	FMOVS (R7), F1 \
	FMUL4SE(6, 0, 1, 0) \
	VLD1.P 16(R6), [V10.B16] \
	USHR16B(11, 10, 4) \
	AND16B(10, 10, 31) \
	UXTL8H(12, 11) \
	UXTL28H(13, 11) \
	ADD $260, R7, R9 \
	VLD1 (R9), [V14.H8, V15.H8] \
	SMULL4S(16, 12, 14) \
	SMULL24S(17, 12, 14) \
	ADDP4S(16, 16, 17) \
	SMULL4S(18, 13, 15) \
	SMULL24S(19, 13, 15) \
	ADDP4S(17, 18, 19) \
	SCVTF4S(16, 16) \
	SCVTF4S(17, 17) \
	FMLS4SE(24, 16, 6, 1) \
	FMLS4SE(25, 17, 6, 1) \
	UXTL8H(12, 10) \
	UXTL28H(13, 10) \
	UXTL4S(20, 12) \
	UXTL24S(21, 12) \
	UXTL4S(22, 13) \
	UXTL24S(23, 13) \
	VLD1.P 64(R6), [V2.B16, V3.B16, V4.B16, V5.B16] \
	ADD $4, R6 \
	ADD $4, R7 \
	MOVI0(26) \
	MOVI0(27) \
	KHALF(IDOT, 2, 3, 20, 21, NOADJ, NOADJ, NOADJ, NOADJ) \
	KHALF(IDOT, 4, 5, 22, 23, NOADJ, NOADJ, NOADJ, NOADJ) \
	ADD $32, R7 \
	KLANESDONE

// func dotQ2_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ2_KNEON(SB), NOSPLIT, $0-48
	KROWSPROLOGUE
	Q2_KROWS(IDOT_NEON)

// func dotQ2_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ2_KSDOT(SB), NOSPLIT, $0-48
	KROWSPROLOGUE
	Q2_KROWS(IDOT_SDOT)

// Q3_K: 110 bytes a block: hmask[32], qs[64], the packed 6-bit scales
// (12 bytes), d. An element's quant is its 2-bit field minus 4 when its
// hmask bit (bit g of hmask[l], l its index in the group) is clear:
// Q3ADJ(m) makes V12, V13 the masks of bit m in hmask (V10, V11), turns
// them into 4 where the bit is clear, and takes that off V16, V17.
#define Q3ADJ(m) \
	VMOVI $m, V14.B16 \
	CMTST16B(12, 10, 14) \
	CMTST16B(13, 11, 14) \
	VMOVI $4, V14.B16 \
	BIC16B(12, 14, 12) \
	BIC16B(13, 14, 13) \
	SUB16B(16, 16, 12) \
	SUB16B(17, 17, 13)

// Q3SCALES sets V20-V23 to the sixteen scales (6-bit, minus 32) as
// int32: the low 4 bits of scale j are the low (j < 8) or high nibble of
// byte j%8, the high 2 bits those at 2(j/4) of byte 8+j%4; built in
// general registers (R19 holds 0x0F0F0F0F0F0F0F0F, R20 0x03030303).
#define Q3SCALES \
	MOVD 96(R6), R10 \
	MOVWU 104(R6), R11 \
	AND R19, R10, R12 \
	LSR $4, R10, R13 \
	AND R19, R13, R13 \
	ANDW R20, R11, R14 \
	LSRW $2, R11, R15 \
	ANDW R20, R15, R15 \
	ORR R15<<32, R14, R14 \
	ORR R14<<4, R12, R12 \
	LSRW $4, R11, R14 \
	ANDW R20, R14, R14 \
	LSRW $6, R11, R15 \
	ANDW R20, R15, R15 \
	ORR R15<<32, R14, R14 \
	ORR R14<<4, R13, R13 \
	FMOVD R12, F12 \
	FMOVD R13, F13 \
	VMOVI $32, V14.B16 \
	SUB16B(12, 12, 14) \
	SUB16B(13, 13, 14) \
	SXTL8H(12, 12) \
	SXTL8H(13, 13) \
	SXTL4S(20, 12) \
	SXTL24S(21, 12) \
	SXTL4S(22, 13) \
	SXTL24S(23, 13)

#define Q3_KROWS(IDOT) \
	MOVD $0x0f0f0f0f0f0f0f0f, R19 \
	MOVW $0x03030303, R20 \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(24) \
	MOVI0(25) \
block: \
	MOVHU 108(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	FMOVS (R7), F1 \
	FMULS F0, F1, F6 \
	Q3SCALES \
	VLD1.P 32(R6), [V10.B16, V11.B16] \
	VLD1.P 64(R6), [V2.B16, V3.B16, V4.B16, V5.B16] \
	ADD $14, R6 \
	ADD $4, R7 \
	MOVI0(26) \
	MOVI0(27) \
	KHALF(IDOT, 2, 3, 20, 21, Q3ADJ(1), Q3ADJ(2), Q3ADJ(4), Q3ADJ(8)) \
	KHALF(IDOT, 4, 5, 22, 23, Q3ADJ(16), Q3ADJ(32), Q3ADJ(64), Q3ADJ(128)) \
	ADD $32, R7 \
	KLANESDONE

// func dotQ3_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ3_KNEON(SB), NOSPLIT, $0-48
	KROWSPROLOGUE
	Q3_KROWS(IDOT_NEON)

// func dotQ3_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ3_KSDOT(SB), NOSPLIT, $0-48
	KROWSPROLOGUE
	Q3_KROWS(IDOT_SDOT)
