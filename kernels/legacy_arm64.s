//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q5_0, Q4_1, Q5_1 and IQ4_NL kernels of the neon tiers, in the order
// of ggml's AVX2 kernels (quant's dotLanes, dotLanesMin and dotIQ4NL): per
// block the 32 quants in two registers (elements 0-15: lanes 0-3, 16-31:
// lanes 4-7), their int32 lane sums with the activation, and
// acc = fma(dw·da, float(lanes), acc) with FMLA, then hsum_float_8. Q5_0
// and IQ4_NL take the prepQ4_0x8 form of their Q8_0 activation (40 bytes a
// block, da as float32); Q4_1 and Q5_1 the Q8_1 activation itself.
//
// R0 out, R1 rows left, R2 row, R3 nb, R4 rowBytes, R5 act, R6 weight
// block, R7 activation block, R8 blocks left. V27 holds the bits 1..128 in
// each half, V28 and V29 the byte indexes that spread qh bytes 0, 1 and
// 2, 3 over eight bytes each (or V29 the IQ4_NL values), V30 0x0F in every
// byte and V31 0xF0 (Q5_0) or 0x10 (Q5_1).

DATA legacyconsts<>+0(SB)/8, $0x0000000000000000
DATA legacyconsts<>+8(SB)/8, $0x0101010101010101
DATA legacyconsts<>+16(SB)/8, $0x0202020202020202
DATA legacyconsts<>+24(SB)/8, $0x0303030303030303
DATA legacyconsts<>+32(SB)/8, $0x8040201008040201
DATA legacyconsts<>+40(SB)/8, $0x8040201008040201
DATA legacyconsts<>+48(SB)/8, $0xF6EADDCFBFAD9881
DATA legacyconsts<>+56(SB)/8, $0x7159453526190D01
GLOBL legacyconsts<>(SB), RODATA|NOPTR, $64

#define LEGACYPROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD nb+24(FP), R3 \
	MOVD rowBytes+32(FP), R4 \
	MOVD act+40(FP), R5 \
	MOVD $legacyconsts<>(SB), R9 \
	VLD1 (R9), [V28.B16, V29.B16] \
	ADD $32, R9 \
	VLD1 (R9), [V27.B16] \
	VMOVI $15, V30.B16

// Q5HIGH sets Vlo, Vhi to the masks (0xFF or 0) of qh's bits 0-15 and
// 16-31, qh in lane 0 of Vq.
#define Q5HIGH(q, lo, hi) \
	TBL16B(lo, q, 28) \
	TBL16B(hi, q, 29) \
	CMTST16B(lo, lo, 27) \
	CMTST16B(hi, hi, 27)

// LANES adds the lane sums of the quants V5 (elements 0-15) and V2
// (16-31) with the activation in V6, V7, times lane 0 of Vd, to V16, V17.
#define LANES(IDOT, d) \
	IDOT(9, 5, 6, 20, 21) \
	IDOT(10, 2, 7, 22, 23) \
	SCVTF4S(9, 9) \
	SCVTF4S(10, 10) \
	FMLA4SE(16, 9, d, 0) \
	FMLA4SE(17, 10, d, 0)

// Q5_0BLOCK: quants (nibble | h<<4) − 16, made as nibble + (h ? 0 : 0xF0).
#define Q5_0BLOCK(IDOT) \
	MOVHU.P 2(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	MOVWU.P 4(R6), R10 \
	FMOVS R10, F1 \
	VLD1.P 16(R6), [V2.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	FMOVS.P 8(R7), F8 \
	FMULS F8, F0, F0 \
	Q5HIGH(1, 3, 4) \
	BIC16B(3, 31, 3) \
	BIC16B(4, 31, 4) \
	AND16B(5, 2, 30) \
	USHR16B(2, 2, 4) \
	ADD16B(5, 5, 3) \
	ADD16B(2, 2, 4) \
	LANES(IDOT, 0)

// Q8_1HEAD converts the weight block's d, m (V0 lanes 0, 1) and the
// activation's d, s (V1), adds m·s to lane 1 of V18 with FMLA (summs, a
// contracted fma in ggml) and sets lane 0 of V1 to dw·da.
#define Q8_1HEAD \
	MOVWU.P 4(R6), R9 \
	FMOVS R9, F0 \
	FCVTL4S(0, 0) \
	MOVWU.P 4(R7), R10 \
	FMOVS R10, F1 \
	FCVTL4S(1, 1) \
	FMLA4S(18, 0, 1) \
	FMUL4S(1, 0, 1)

#define Q4_1BLOCK(IDOT) \
	Q8_1HEAD \
	VLD1.P 16(R6), [V2.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	AND16B(5, 2, 30) \
	USHR16B(2, 2, 4) \
	LANES(IDOT, 1)

// Q5_1BLOCK: quants nibble | h<<4, unsigned.
#define Q5_1BLOCK(IDOT) \
	Q8_1HEAD \
	MOVWU.P 4(R6), R10 \
	FMOVS R10, F3 \
	VLD1.P 16(R6), [V2.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	Q5HIGH(3, 4, 11) \
	AND16B(4, 4, 31) \
	AND16B(11, 11, 31) \
	AND16B(5, 2, 30) \
	USHR16B(2, 2, 4) \
	ORR16B(5, 5, 4) \
	ORR16B(2, 2, 11) \
	LANES(IDOT, 1)

// LEGACYROWS runs BLOCK over each row's blocks; the result is
// hsum_float_8(V16, V17) plus, with MINS, the summs in lane 1 of V18.
#define LEGACYROWS(BLOCK, IDOT, END) \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
	MOVI0(18) \
block: \
	BLOCK(IDOT) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(16, 17, 19) \
	END \
	FMOVS.P F16, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

#define NOMINS
#define MINS \
	DUP4S(19, 18, 1) \
	FADDS F19, F16, F16

// func dotQ5_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ5_0NEON(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	VMOVI $240, V31.B16
	LEGACYROWS(Q5_0BLOCK, IDOT_NEON, NOMINS)

// func dotQ5_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ5_0SDOT(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	VMOVI $240, V31.B16
	LEGACYROWS(Q5_0BLOCK, IDOT_SDOT, NOMINS)

// func dotQ4_1NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ4_1NEON(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	LEGACYROWS(Q4_1BLOCK, IDOT_NEON, MINS)

// func dotQ4_1SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ4_1SDOT(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	LEGACYROWS(Q4_1BLOCK, IDOT_SDOT, MINS)

// func dotQ5_1NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ5_1NEON(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	VMOVI $16, V31.B16
	LEGACYROWS(Q5_1BLOCK, IDOT_NEON, MINS)

// func dotQ5_1SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ5_1SDOT(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	VMOVI $16, V31.B16
	LEGACYROWS(Q5_1BLOCK, IDOT_SDOT, MINS)

// IQ4LOAD loads a block: dw·da in lane 0 of V0, the quants (the IQ4_NL
// values of the nibbles, from V29) in V5 (elements 0-15) and V2 (16-31),
// the activation's quants in V6, V7.
#define IQ4LOAD \
	MOVHU.P 2(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	VLD1.P 16(R6), [V2.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	FMOVS.P 8(R7), F8 \
	FMULS F0, F8, F0 \
	AND16B(5, 2, 30) \
	USHR16B(2, 2, 4) \
	TBL16B(5, 29, 5) \
	TBL16B(2, 29, 2)

// IQ4BLOCK adds a block to Vlo, Vhi.
#define IQ4BLOCK(IDOT, lo, hi) \
	IQ4LOAD \
	IDOT(9, 5, 6, 20, 21) \
	IDOT(10, 2, 7, 22, 23) \
	SCVTF4S(9, 9) \
	SCVTF4S(10, 10) \
	FMLA4SE(lo, 9, 0, 0) \
	FMLA4SE(hi, 10, 0, 0)

// IQ4_NLROWS: blocks in pairs, the first of each into V16, V17 and the
// second into V18, V19, then hsum_float_8 of their sum; a last odd block
// adds fma(da·dw, float(Σq·a), sum) in scalar.
#define IQ4_NLROWS(IDOT) \
	MOVD $legacyconsts<>(SB), R9 \
	ADD $48, R9 \
	VLD1 (R9), [V29.B16] \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	LSR $1, R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
	MOVI0(18) \
	MOVI0(19) \
	CBZ R8, pairsdone \
pair: \
	IQ4BLOCK(IDOT, 16, 17) \
	IQ4BLOCK(IDOT, 18, 19) \
	SUBS $1, R8 \
	BNE pair \
pairsdone: \
	FADD4S(16, 16, 18) \
	FADD4S(17, 17, 19) \
	HSUM8(16, 17, 18) \
	TBZ $0, R3, store \
	IQ4LOAD \
	IDOT(9, 5, 6, 20, 21) \
	IDOT(10, 2, 7, 22, 23) \
	ADD4S(9, 9, 10) \
	ADDV4S(9, 9) \
	SCVTF4S(9, 9) \
	FMADDS F0, F16, F9, F16 \
store: \
	FMOVS.P F16, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// func dotIQ4_NLNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotIQ4_NLNEON(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	IQ4_NLROWS(IDOT_NEON)

// func dotIQ4_NLSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotIQ4_NLSDOT(SB), NOSPLIT, $0-48
	LEGACYPROLOGUE
	IQ4_NLROWS(IDOT_SDOT)
