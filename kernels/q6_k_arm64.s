//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q6_K kernels of the neon tiers, in the order of ggml's AVX2
// ggml_vec_dot_q6_K_q8_K (quant's Q6_K dot), one row after another. Per
// super-block of 256 the sixteen sub-blocks of 16 elements (6-bit quants
// minus 32, int8 scale sc[j]) add their four 4-element sums times sc[j] to
// the int32 lanes 0-3 (V26, j even) or 4-7 (V27, j odd); then
// acc = fma(yd·d, float(lanes), acc) in V24, V25 with FMLA, and the row's
// result is hsum_float_8(acc). sc[0..15] are widened into the lanes of
// V20-V23. V28 holds 32 in every byte, V29 0x30, V30 0x0F.
//
// R0 out, R1 rows left, R2 row, R3 nb, R4 rowBytes, R5 act, R6 weight
// block, R7 activation block, R8 blocks left.

// Q6GROUP adds group g of a half super-block: the low 4 bits come from
// lo (applied to a register of ql into V16), the high 2 from hi (a
// register of qh shifted into V17, then masked to bits 4-5); y is the
// activation's 16 quants, sc, lane the scale, acc the lanes.
#define Q6GROUP(IDOT, lo, hi, y, sc, lane, acc) \
	lo \
	hi \
	AND16B(17, 17, 29) \
	ORR16B(16, 16, 17) \
	SUB16B(16, 16, 28) \
	IDOT(18, 16, y, 19, 31) \
	MLA4SE(acc, 18, sc, lane)

// Q6HALF is one half super-block (128 elements): ql in V2-V5, qh in V6,
// V7, the activation in V8-V15, scales in Va (groups 0-3) and Vb (4-7).
#define Q6HALF(IDOT, a, b) \
	Q6GROUP(IDOT, AND16B(16, 2, 30), SHL16B(17, 6, 4), 8, a, 0, 26) \
	Q6GROUP(IDOT, AND16B(16, 3, 30), SHL16B(17, 7, 4), 9, a, 1, 27) \
	Q6GROUP(IDOT, AND16B(16, 4, 30), SHL16B(17, 6, 2), 10, a, 2, 26) \
	Q6GROUP(IDOT, AND16B(16, 5, 30), SHL16B(17, 7, 2), 11, a, 3, 27) \
	Q6GROUP(IDOT, USHR16B(16, 2, 4), ORR16B(17, 6, 6), 12, b, 0, 26) \
	Q6GROUP(IDOT, USHR16B(16, 3, 4), ORR16B(17, 7, 7), 13, b, 1, 27) \
	Q6GROUP(IDOT, USHR16B(16, 4, 4), USHR16B(17, 6, 2), 14, b, 2, 26) \
	Q6GROUP(IDOT, USHR16B(16, 5, 4), USHR16B(17, 7, 2), 15, b, 3, 27)

#define Q6_KROWS(IDOT) \
	VMOVI $32, V28.B16 \
	VMOVI $48, V29.B16 \
	VMOVI $15, V30.B16 \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(24) \
	MOVI0(25) \
block: \
	MOVHU 208(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	FMOVS (R7), F1 \
	FMULS F0, F1, F1 \
	ADD $192, R6, R9 \
	VLD1 (R9), [V0.B16] \
	SXTL8H(16, 0) \
	SXTL28H(17, 0) \
	SXTL4S(20, 16) \
	SXTL24S(21, 16) \
	SXTL4S(22, 17) \
	SXTL24S(23, 17) \
	MOVI0(26) \
	MOVI0(27) \
	ADD $4, R7 \
	VLD1.P 64(R6), [V2.B16, V3.B16, V4.B16, V5.B16] \
	ADD $64, R6, R9 \
	VLD1 (R9), [V6.B16, V7.B16] \
	VLD1.P 64(R7), [V8.B16, V9.B16, V10.B16, V11.B16] \
	VLD1.P 64(R7), [V12.B16, V13.B16, V14.B16, V15.B16] \
	Q6HALF(IDOT, 20, 21) \
	VLD1.P 64(R6), [V2.B16, V3.B16, V4.B16, V5.B16] \
	ADD $32, R6, R9 \
	VLD1 (R9), [V6.B16, V7.B16] \
	VLD1.P 64(R7), [V8.B16, V9.B16, V10.B16, V11.B16] \
	VLD1.P 64(R7), [V12.B16, V13.B16, V14.B16, V15.B16] \
	Q6HALF(IDOT, 22, 23) \
	ADD $82, R6 \
	ADD $32, R7 \
	SCVTF4S(26, 26) \
	SCVTF4S(27, 27) \
	FMLA4SE(24, 26, 1, 0) \
	FMLA4SE(25, 27, 1, 0) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(24, 25, 18) \
	FMOVS.P F24, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// func dotQ6_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ6_KNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD act+40(FP), R5
	Q6_KROWS(IDOT_NEON)

// func dotQ6_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ6_KSDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD act+40(FP), R5
	Q6_KROWS(IDOT_SDOT)
