//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// func roundF16NEON(x *float32, n int)
//
// x[i] = float32(fp16(x[i])) for n a multiple of 8: FCVTN (ties to even,
// as VCVTPS2PH) and FCVTL back.
TEXT ·roundF16NEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n+8(FP), R2

roundloop:
	VLD1 (R0), [V0.S4, V1.S4]
	FCVTN4H(2, 0)
	FCVTN28H(2, 1)
	FCVTL4S(0, 2)
	FCVTL24S(1, 2)
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUBS $8, R2
	BNE roundloop
	RET

// func f16FromF32NEON(dst *uint16, src *float32, n int)
//
// dst[i] = fp16(src[i]) for n a multiple of 8.
TEXT ·f16FromF32NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2

f16loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	FCVTN4H(2, 0)
	FCVTN28H(2, 1)
	VST1.P [V2.H8], 16(R0)
	SUBS $8, R2
	BNE f16loop
	RET

// func dotF16F32NEON(out *float32, rows int, w *uint16, chunks, rowBytes int, x *float32)
//
// out[r] = GGML_F32x8_REDUCE of ggml_vec_dot_f16's 32 lanes over the
// chunks of 32 of row r (f16, widened) and x (float32), with FMLA; the
// caller adds the tail. R0 out, R1 rows left, R2 row, R3 chunks, R4
// rowBytes, R5 x, R6 weights, R7 x chunk, R8 chunks left.
TEXT ·dotF16F32NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD chunks+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD x+40(FP), R5

row:
	MOVD R2, R6
	MOVD R5, R7
	MOVD R3, R8
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	MOVI0(20)
	MOVI0(21)
	MOVI0(22)
	MOVI0(23)

chunk:
	VLD1.P 64(R6), [V8.H8, V9.H8, V10.H8, V11.H8]
	VLD1.P 64(R7), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1.P 64(R7), [V28.S4, V29.S4, V30.S4, V31.S4]
	FCVTL4S(0, 8)
	FCVTL24S(1, 8)
	FCVTL4S(2, 9)
	FCVTL24S(3, 9)
	FCVTL4S(4, 10)
	FCVTL24S(5, 10)
	FCVTL4S(6, 11)
	FCVTL24S(7, 11)
	FMLA4S(16, 0, 24)
	FMLA4S(17, 1, 25)
	FMLA4S(18, 2, 26)
	FMLA4S(19, 3, 27)
	FMLA4S(20, 4, 28)
	FMLA4S(21, 5, 29)
	FMLA4S(22, 6, 30)
	FMLA4S(23, 7, 31)
	SUBS $1, R8
	BNE chunk
	REDUCE32R(16, 17, 18, 19, 20, 21, 22, 23)
	FMOVS.P F16, 4(R0)
	ADD R4, R2
	SUBS $1, R1
	BNE row
	RET
