//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The prefill tiles of the neon-dotprod tier for the repacked types: the
// weights of a block stay in registers (Q4_0x8: unpacked to nibbles once)
// while the activations of packQ4_0x8x4's form pass over them, each
// (row, activation) with exactly the arithmetic of the tier's
// one-activation kernel (q4_0_arm64.s, q8_0_arm64.s).

// Q4X8TOK adds one activation (the next 40 bytes at R7) to a group's
// accumulators Vlo (rows 0-3), Vhi (rows 4-7), as Q4_0X8 does: the int32
// lanes start at −8·Σa (V3 rows 0-3, V4 rows 4-7), take the unsigned
// nibbles' dot products (low nibbles V10-V17, high ones V18-V25, chunk c
// in V10+2c, V11+2c, V18+2c, V19+2c) with SDOT by element, then
// acc = fma(float(isum), dw·da, acc); dw is in V1, V2.
#define Q4X8TOK(lo, hi) \
	VLD1.P 32(R7), [V5.B16, V6.B16] \
	VLD1.P 8(R7), [V7.S2] \
	DUP4S(3, 7, 1) \
	NEG4S(3, 3) \
	MOV16B(4, 3) \
	SDOT4SE(3, 10, 5, 0) \
	SDOT4SE(4, 11, 5, 0) \
	SDOT4SE(3, 18, 6, 0) \
	SDOT4SE(4, 19, 6, 0) \
	SDOT4SE(3, 12, 5, 1) \
	SDOT4SE(4, 13, 5, 1) \
	SDOT4SE(3, 20, 6, 1) \
	SDOT4SE(4, 21, 6, 1) \
	SDOT4SE(3, 14, 5, 2) \
	SDOT4SE(4, 15, 5, 2) \
	SDOT4SE(3, 22, 6, 2) \
	SDOT4SE(4, 23, 6, 2) \
	SDOT4SE(3, 16, 5, 3) \
	SDOT4SE(4, 17, 5, 3) \
	SDOT4SE(3, 24, 6, 3) \
	SDOT4SE(4, 25, 6, 3) \
	SCVTF4S(3, 3) \
	SCVTF4S(4, 4) \
	FMUL4SE(5, 1, 7, 0) \
	FMUL4SE(6, 2, 7, 0) \
	FMLA4S(lo, 3, 5) \
	FMLA4S(hi, 4, 6)

// func dotQ4_0x8x4SDOT(out *float32, ostride, groups int, w *byte, nb int, packed *byte)
//
// R0, R11, R12, R13 the four activations' outputs, R2 groups left, R3
// weights, R4 nb, R5 packed, R7 packed block, R8 blocks left. Activation
// t accumulates in (V8, V9), (V26, V27), (V28, V29), (V30, V31).
TEXT ·dotQ4_0x8x4SDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD ostride+8(FP), R1
	MOVD groups+16(FP), R2
	MOVD w+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD packed+40(FP), R5
	LSL $2, R1
	ADD R1, R0, R11
	ADD R1, R11, R12
	ADD R1, R12, R13

q4x8group:
	MOVD R5, R7
	MOVD R4, R8
	MOVI0(8)
	MOVI0(9)
	MOVI0(26)
	MOVI0(27)
	MOVI0(28)
	MOVI0(29)
	MOVI0(30)
	MOVI0(31)

q4x8block:
	VLD1.P 16(R3), [V0.H8]
	VLD1.P 64(R3), [V10.B16, V11.B16, V12.B16, V13.B16]
	VLD1.P 64(R3), [V14.B16, V15.B16, V16.B16, V17.B16]
	FCVTL4S(1, 0)
	FCVTL24S(2, 0)
	VMOVI $15, V0.B16
	USHR16B(18, 10, 4)
	USHR16B(19, 11, 4)
	USHR16B(20, 12, 4)
	USHR16B(21, 13, 4)
	USHR16B(22, 14, 4)
	USHR16B(23, 15, 4)
	USHR16B(24, 16, 4)
	USHR16B(25, 17, 4)
	AND16B(10, 10, 0)
	AND16B(11, 11, 0)
	AND16B(12, 12, 0)
	AND16B(13, 13, 0)
	AND16B(14, 14, 0)
	AND16B(15, 15, 0)
	AND16B(16, 16, 0)
	AND16B(17, 17, 0)
	Q4X8TOK(8, 9)
	Q4X8TOK(26, 27)
	Q4X8TOK(28, 29)
	Q4X8TOK(30, 31)
	SUBS $1, R8
	BNE q4x8block

	VST1.P [V8.S4, V9.S4], 32(R0)
	VST1.P [V26.S4, V27.S4], 32(R11)
	VST1.P [V28.S4, V29.S4], 32(R12)
	VST1.P [V30.S4, V31.S4], 32(R13)
	SUBS $1, R2
	BNE q4x8group
	RET

// Q8X4ROW adds row r of a Q8_0x4 block (quants in Va, Vb) times the
// activation in V6, V7 to its accumulators Vlo, Vhi, as Q8_0X4ROW does,
// with dw·da in lane r of V4.
#define Q8X4ROW(a, b, lo, hi, r) \
	MOVI0(2) \
	MOVI0(3) \
	SDOT4S(2, a, 6) \
	SDOT4S(3, b, 7) \
	SCVTF4S(2, 2) \
	SCVTF4S(3, 3) \
	FMLA4SE(lo, 2, 4, r) \
	FMLA4SE(hi, 3, 4, r)

// Q8X4TOK adds the activation at R7 (40 bytes, advanced past) to the
// four rows' accumulators from V(acc) on.
#define Q8X4TOK(a0, a1, a2, a3, a4, a5, a6, a7) \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	VLD1.P 8(R7), [V5.S2] \
	FMUL4SE(4, 1, 5, 0) \
	Q8X4ROW(8, 9, a0, a1, 0) \
	Q8X4ROW(10, 11, a2, a3, 1) \
	Q8X4ROW(12, 13, a4, a5, 2) \
	Q8X4ROW(14, 15, a6, a7, 3)

// func dotQ8_0x4x2SDOT(out *float32, ostride, groups int, w *byte, nb int, packed *byte)
//
// Two activations (the first two of packed's four). R0, R11 their
// outputs, R2 groups left, R3 weights, R4 nb, R5 packed, R7 packed block,
// R8 blocks left. Row r accumulates in V16+2r, V17+2r (first activation)
// and V24+2r, V25+2r (second); the weights are in V8-V15, dw in V1.
TEXT ·dotQ8_0x4x2SDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD ostride+8(FP), R1
	MOVD groups+16(FP), R2
	MOVD w+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD packed+40(FP), R5
	LSL $2, R1
	ADD R1, R0, R11

q8x4group:
	MOVD R5, R7
	MOVD R4, R8
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	MOVI0(20)
	MOVI0(21)
	MOVI0(22)
	MOVI0(23)
	MOVI0(24)
	MOVI0(25)
	MOVI0(26)
	MOVI0(27)
	MOVI0(28)
	MOVI0(29)
	MOVI0(30)
	MOVI0(31)

q8x4block:
	VLD1.P 8(R3), [V0.H4]
	VLD1.P 64(R3), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R3), [V12.B16, V13.B16, V14.B16, V15.B16]
	FCVTL4S(1, 0)
	Q8X4TOK(16, 17, 18, 19, 20, 21, 22, 23)
	Q8X4TOK(24, 25, 26, 27, 28, 29, 30, 31)
	ADD $80, R7
	SUBS $1, R8
	BNE q8x4block

	HSUM8(16, 17, 2)
	HSUM8(18, 19, 3)
	HSUM8(20, 21, 4)
	HSUM8(22, 23, 5)
	HSUM8(24, 25, 6)
	HSUM8(26, 27, 7)
	HSUM8(28, 29, 8)
	HSUM8(30, 31, 9)
	FMOVS.P F16, 4(R0)
	FMOVS.P F18, 4(R0)
	FMOVS.P F20, 4(R0)
	FMOVS.P F22, 4(R0)
	FMOVS.P F24, 4(R11)
	FMOVS.P F26, 4(R11)
	FMOVS.P F28, 4(R11)
	FMOVS.P F30, 4(R11)
	SUBS $1, R2
	BNE q8x4group
	RET
