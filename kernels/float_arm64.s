//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The F32, F16 and BF16 kernels of the neon tiers, in the order of ggml's
// AVX2 ggml_vec_dot_f32/_f16/_bf16 (quant's dots) over the whole chunks of
// 32 elements: 32 float32 lanes in V16-V23 (lanes 4k..4k+3 in V16+k),
// FMLA (fused, as the AVX2 FMA) for F32 and F16, FMUL then FADD for BF16,
// then the fixed reduction tree. The tail past the last chunk is Go's
// (float_arm64.go).
//
// func(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte):
// R0 out, R1 rows left, R2 row, R3 chunks, R4 rowBytes, R5 act, R6 weights,
// R7 activation, R8 chunks left.

#define FLOATPROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD chunks+24(FP), R3 \
	MOVD rowBytes+32(FP), R4 \
	MOVD act+40(FP), R5

#define FLOATROWSTART \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
	MOVI0(18) \
	MOVI0(19) \
	MOVI0(20) \
	MOVI0(21) \
	MOVI0(22) \
	MOVI0(23)

// REDUCE32 is quant's reduce32 (GGML_F32x8_REDUCE) of V16-V23 into lane
// 0 of V16: x = (acc[l]+acc[16+l]) + (acc[8+l]+acc[24+l]) for the eight
// lanes l, then x[j]+x[j+4], then (t0+t1) + (t2+t3).
#define REDUCE32 REDUCE32R(16, 17, 18, 19, 20, 21, 22, 23)

#define FLOATROWEND \
	FMOVS.P F16, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1

// func dotF32NEON(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)
TEXT ·dotF32NEON(SB), NOSPLIT, $0-48
	FLOATPROLOGUE
f32row:
	FLOATROWSTART
f32chunk:
	VLD1.P 64(R6), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R6), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R7), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1.P 64(R7), [V12.S4, V13.S4, V14.S4, V15.S4]
	FMLA4S(16, 0, 8)
	FMLA4S(17, 1, 9)
	FMLA4S(18, 2, 10)
	FMLA4S(19, 3, 11)
	FMLA4S(20, 4, 12)
	FMLA4S(21, 5, 13)
	FMLA4S(22, 6, 14)
	FMLA4S(23, 7, 15)
	SUBS $1, R8
	BNE f32chunk
	REDUCE32
	FLOATROWEND
	BNE f32row
	RET

// func dotF16NEON(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)
TEXT ·dotF16NEON(SB), NOSPLIT, $0-48
	FLOATPROLOGUE
f16row:
	FLOATROWSTART
f16chunk:
	VLD1.P 64(R6), [V0.H8, V1.H8, V2.H8, V3.H8]
	VLD1.P 64(R7), [V12.H8, V13.H8, V14.H8, V15.H8]
	FCVTL4S(4, 0)
	FCVTL24S(5, 0)
	FCVTL4S(6, 1)
	FCVTL24S(7, 1)
	FCVTL4S(8, 2)
	FCVTL24S(9, 2)
	FCVTL4S(10, 3)
	FCVTL24S(11, 3)
	FCVTL4S(24, 12)
	FCVTL24S(25, 12)
	FCVTL4S(26, 13)
	FCVTL24S(27, 13)
	FCVTL4S(28, 14)
	FCVTL24S(29, 14)
	FCVTL4S(30, 15)
	FCVTL24S(31, 15)
	FMLA4S(16, 4, 24)
	FMLA4S(17, 5, 25)
	FMLA4S(18, 6, 26)
	FMLA4S(19, 7, 27)
	FMLA4S(20, 8, 28)
	FMLA4S(21, 9, 29)
	FMLA4S(22, 10, 30)
	FMLA4S(23, 11, 31)
	SUBS $1, R8
	BNE f16chunk
	REDUCE32
	FLOATROWEND
	BNE f16row
	RET

// BF16MAC adds the products of lanes Vw, Va (rounded: FMUL) to Vacc.
#define BF16MAC(acc, w, a) \
	FMUL4S(w, w, a) \
	FADD4S(acc, w, acc)

// func dotBF16NEON(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)
//
// ggml_vec_dot_bf16's AVX2 reduction: x = (c0+c2) + (c1+c3) for the four
// 8-lane accumulators c (V16, V17; V18, V19; ...), then hsum_float_8.
TEXT ·dotBF16NEON(SB), NOSPLIT, $0-48
	FLOATPROLOGUE
bf16row:
	FLOATROWSTART
bf16chunk:
	VLD1.P 64(R6), [V0.H8, V1.H8, V2.H8, V3.H8]
	VLD1.P 64(R7), [V12.H8, V13.H8, V14.H8, V15.H8]
	SHLL4S(4, 0)
	SHLL24S(5, 0)
	SHLL4S(6, 1)
	SHLL24S(7, 1)
	SHLL4S(8, 2)
	SHLL24S(9, 2)
	SHLL4S(10, 3)
	SHLL24S(11, 3)
	SHLL4S(24, 12)
	SHLL24S(25, 12)
	SHLL4S(26, 13)
	SHLL24S(27, 13)
	SHLL4S(28, 14)
	SHLL24S(29, 14)
	SHLL4S(30, 15)
	SHLL24S(31, 15)
	BF16MAC(16, 4, 24)
	BF16MAC(17, 5, 25)
	BF16MAC(18, 6, 26)
	BF16MAC(19, 7, 27)
	BF16MAC(20, 8, 28)
	BF16MAC(21, 9, 29)
	BF16MAC(22, 10, 30)
	BF16MAC(23, 11, 31)
	SUBS $1, R8
	BNE bf16chunk
	FADD4S(16, 16, 20)
	FADD4S(18, 18, 22)
	FADD4S(16, 16, 18)
	FADD4S(17, 17, 21)
	FADD4S(19, 19, 23)
	FADD4S(17, 17, 19)
	HSUM8(16, 17, 18)
	FLOATROWEND
	BNE bf16row
	RET
