//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The F32 and F16 prefill tiles (both neon tiers): two activations of
// float32 (F16 ones widened by the pack) against one row at a time, the
// row's chunk loaded (and widened) once for both; per (row, activation)
// the arithmetic of dotF32NEON and dotF16NEON.
//
// func(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int):
// R0, R11 the outputs, R1 rows left, R2 row, R3 chunks, R4 rowBytes, R5,
// R12 the activations, R6 weights, R7, R13 activation chunks, R8 chunks
// left. The weights' chunk is in V0-V7, the activation's in V8-V15; the
// lanes of the two activations in V16-V23 and V24-V31.

#define FTILEPROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD ostride+8(FP), R9 \
	MOVD rows+16(FP), R1 \
	MOVD w+24(FP), R2 \
	MOVD chunks+32(FP), R3 \
	MOVD rowBytes+40(FP), R4 \
	MOVD act+48(FP), R5 \
	MOVD actStride+56(FP), R10 \
	LSL $2, R9 \
	ADD R9, R0, R11 \
	ADD R10, R5, R12

#define FTILEROWSTART \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R12, R13 \
	MOVD R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
	MOVI0(18) \
	MOVI0(19) \
	MOVI0(20) \
	MOVI0(21) \
	MOVI0(22) \
	MOVI0(23) \
	MOVI0(24) \
	MOVI0(25) \
	MOVI0(26) \
	MOVI0(27) \
	MOVI0(28) \
	MOVI0(29) \
	MOVI0(30) \
	MOVI0(31)

// FTILETOK adds the activation chunk at Rp (advanced past it) times the
// weights in V0-V7 to the lanes Va0..Va0+7.
#define FTILETOK(p, a0, a1, a2, a3, a4, a5, a6, a7) \
	VLD1.P 64(p), [V8.S4, V9.S4, V10.S4, V11.S4] \
	VLD1.P 64(p), [V12.S4, V13.S4, V14.S4, V15.S4] \
	FMLA4S(a0, 0, 8) \
	FMLA4S(a1, 1, 9) \
	FMLA4S(a2, 2, 10) \
	FMLA4S(a3, 3, 11) \
	FMLA4S(a4, 4, 12) \
	FMLA4S(a5, 5, 13) \
	FMLA4S(a6, 6, 14) \
	FMLA4S(a7, 7, 15)

#define FTILEROWEND \
	REDUCE32R(16, 17, 18, 19, 20, 21, 22, 23) \
	REDUCE32R(24, 25, 26, 27, 28, 29, 30, 31) \
	FMOVS.P F16, 4(R0) \
	FMOVS.P F24, 4(R11) \
	ADD R4, R2 \
	SUBS $1, R1

// func dotF32x2NEON(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)
TEXT ·dotF32x2NEON(SB), NOSPLIT, $0-64
	FTILEPROLOGUE
f32x2row:
	FTILEROWSTART
f32x2chunk:
	VLD1.P 64(R6), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R6), [V4.S4, V5.S4, V6.S4, V7.S4]
	FTILETOK(R7, 16, 17, 18, 19, 20, 21, 22, 23)
	FTILETOK(R13, 24, 25, 26, 27, 28, 29, 30, 31)
	SUBS $1, R8
	BNE f32x2chunk
	FTILEROWEND
	BNE f32x2row
	RET

// func dotF16x2NEON(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)
TEXT ·dotF16x2NEON(SB), NOSPLIT, $0-64
	FTILEPROLOGUE
f16x2row:
	FTILEROWSTART
f16x2chunk:
	VLD1.P 64(R6), [V8.H8, V9.H8, V10.H8, V11.H8]
	FCVTL4S(0, 8)
	FCVTL24S(1, 8)
	FCVTL4S(2, 9)
	FCVTL24S(3, 9)
	FCVTL4S(4, 10)
	FCVTL24S(5, 10)
	FCVTL4S(6, 11)
	FCVTL24S(7, 11)
	FTILETOK(R7, 16, 17, 18, 19, 20, 21, 22, 23)
	FTILETOK(R13, 24, 25, 26, 27, 28, 29, 30, 31)
	SUBS $1, R8
	BNE f16x2chunk
	FTILEROWEND
	BNE f16x2row
	RET
