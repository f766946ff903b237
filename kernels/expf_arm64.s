//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// ggml_v_expf (AVX2+FMA) four lanes at a time, operation for operation as
// expf8 in expf.go (and expf_amd64.s) computes one lane, and the SiLU and
// softmax loops of ggml around it. The constants stay in V16-V26, V28,
// V29 (EXPCONSTS); V27 holds the softmax's float64 sum.

DATA expkn<>+0(SB)/4, $0x4b400000  // r = 1.5·2²³
DATA expkn<>+4(SB)/4, $0x3fb8aa3b  // log2 e
DATA expkn<>+8(SB)/4, $0x3f317200  // ln 2, high part
DATA expkn<>+12(SB)/4, $0x35bfbe8e // ln 2, low part
DATA expkn<>+16(SB)/4, $0x3f800000 // 1.0
DATA expkn<>+20(SB)/4, $0x3c072010 // c0 = 0x1.0e4020p-7
DATA expkn<>+24(SB)/4, $0x3d2b9f17 // c1 = 0x1.573e2ep-5
DATA expkn<>+28(SB)/4, $0x3e2aaf33 // c2 = 0x1.555e66p-3
DATA expkn<>+32(SB)/4, $0x3efffedb // c3 = 0x1.fffdb6p-2
DATA expkn<>+36(SB)/4, $0x3f7ffff6 // c4 = 0x1.ffffecp-1
DATA expkn<>+40(SB)/4, $0x42fc0000 // 126.0
DATA expkn<>+44(SB)/4, $0x82000000
DATA expkn<>+48(SB)/4, $0x7f000000
GLOBL expkn<>(SB), RODATA|NOPTR, $52

#define EXPCONSTS \
	MOVD $expkn<>(SB), R9 \
	VLD1.P 16(R9), [V0.S4] \
	VLD1.P 16(R9), [V1.S4] \
	VLD1 (R9), [V2.S4, V3.S4] \
	DUP4S(16, 0, 0) \
	DUP4S(17, 0, 1) \
	DUP4S(18, 0, 2) \
	DUP4S(19, 0, 3) \
	DUP4S(20, 1, 0) \
	DUP4S(21, 1, 1) \
	DUP4S(22, 1, 2) \
	DUP4S(23, 1, 3) \
	DUP4S(24, 2, 0) \
	DUP4S(25, 2, 1) \
	DUP4S(26, 2, 2) \
	DUP4S(28, 2, 3) \
	DUP4S(29, 3, 0)

// EXPCORE computes ggml_v_expf of V0 as far as the common case: n in V2,
// the exponent bits e in V4, k = 2ⁿ in V5, the mask |n| > 126 in V6, the
// polynomial j in V10 and fma(k, j, k) in V11; R4 is nonzero when some
// lane has |n| > 126. Uses V1-V12.
#define EXPCORE \
	MOV16B(1, 16) \
	FMLA4S(1, 0, 17) \
	FSUB4S(2, 1, 16) \
	MOV16B(3, 0) \
	FMLS4S(3, 2, 18) \
	FMLS4S(3, 2, 19) \
	SHL4S(4, 1, 23) \
	ADD4S(5, 4, 20) \
	FABS4S(6, 2) \
	FCMGT4S(6, 6, 26) \
	FMUL4S(7, 3, 3) \
	MOV16B(8, 22) \
	FMLA4S(8, 21, 3) \
	MOV16B(9, 24) \
	FMLA4S(9, 23, 3) \
	FMLA4S(9, 8, 7) \
	FMUL4S(10, 3, 25) \
	FMLA4S(10, 9, 7) \
	MOV16B(11, 5) \
	FMLA4S(11, 5, 10) \
	UMAXV4S(12, 6) \
	FMOVS F12, R4

// EXPSLOW finishes the lanes with |n| > 126 in V11: fma(s2, j, s2)·s1,
// and s1·s1 where |n| > 192, s1 = 2^(127 or -125) and s2 = 2^(n-127 or
// n+125) by the sign of n. Uses V9, V12-V15.
#define EXPSLOW \
	FCMLEZ4S(9, 2) \
	AND16B(9, 9, 28) \
	ADD4S(12, 9, 29) \
	SUB4S(13, 4, 9) \
	FABS4S(15, 2) \
	MOVW $0x43400000, R6 \
	VDUP R6, V14.S4 \
	FCMGT4S(14, 15, 14) \
	FMUL4S(15, 12, 12) \
	FMLA4S(13, 13, 10) \
	FMUL4S(13, 13, 12) \
	BIT16B(11, 13, 6) \
	BIT16B(11, 15, 14)

// func siluNEON(dst, x *float32, n int)
//
// dst[i] = x[i]/(1+v_expf(0-x[i])) for n > 0 a multiple of 4. V30 holds
// x, V31 zero.
TEXT ·siluNEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	EXPCONSTS
	MOVI0(31)

siluloop:
	VLD1.P 16(R1), [V30.S4]
	FSUB4S(0, 31, 30)
	EXPCORE
	CBZW R4, silustore
	EXPSLOW

silustore:
	FADD4S(11, 11, 20)
	FDIV4S(11, 30, 11)
	VST1.P [V11.S4], 16(R0)
	SUBS $4, R2
	BNE siluloop
	RET

// func expSubNEON(dst, x *float32, n int, max float32) float64
//
// dst[i] = v_expf(x[i]-max) for n > 0 a multiple of 8, and the sum of each
// group of 8's hsum_float_8, added in order in float64 (lane 0 of V27).
// The group's first four results wait in V31; V30 holds max.
TEXT ·expSubNEON(SB), NOSPLIT, $0-40
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	FMOVS max+24(FP), F30
	DUP4S(30, 30, 0)
	EXPCONSTS
	MOVI0(27)

exploop:
	VLD1.P 16(R1), [V0.S4]
	FSUB4S(0, 0, 30)
	EXPCORE
	CBZW R4, explo
	EXPSLOW

explo:
	MOV16B(31, 11)
	VLD1.P 16(R1), [V0.S4]
	FSUB4S(0, 0, 30)
	EXPCORE
	CBZW R4, exphi
	EXPSLOW

exphi:
	VST1.P [V31.S4], 16(R0)
	VST1.P [V11.S4], 16(R0)
	HSUM8(31, 11, 12)
	FCVTSD F31, F12
	FADDD F12, F27, F27
	SUBS $8, R2
	BNE exploop
	FMOVD F27, ret+32(FP)
	RET
