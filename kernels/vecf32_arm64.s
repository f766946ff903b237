//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// func axpyF32NEON(y, x *float32, n int, a float32)
//
// y[i] = fma(x[i], a, y[i]) (FMLA, one rounding) for i < n, n a multiple
// of 4: 16 at a time, then 4.
TEXT ·axpyF32NEON(SB), NOSPLIT, $0-28
	MOVD y+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	FMOVS a+24(FP), F16
	LSR $4, R2, R3
	CBZ R3, four

loop16:
	VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	FMLA4SE(0, 4, 16, 0)
	FMLA4SE(1, 5, 16, 0)
	FMLA4SE(2, 6, 16, 0)
	FMLA4SE(3, 7, 16, 0)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS $1, R3
	BNE loop16

four:
	AND $15, R2, R3
	LSR $2, R3, R3
	CBZ R3, done

loop4:
	VLD1 (R0), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	FMLA4SE(0, 4, 16, 0)
	VST1.P [V0.S4], 16(R0)
	SUBS $1, R3
	BNE loop4

done:
	RET

// func reduceLanes32NEON(out, lanes *float32, cols int)
//
// out[c] = GGML_F32x8_REDUCE of the 32 lanes lanes[l·cols+c], four
// columns at a time (cols a multiple of 4): lane l in V(l), then
// x_l = (L_l + L_16+l) + (L_8+l + L_24+l), x_j + x_j+4, and
// (t0+t1) + (t2+t3).
TEXT ·reduceLanes32NEON(SB), NOSPLIT, $0-24
	MOVD out+0(FP), R0
	MOVD lanes+8(FP), R1
	MOVD cols+16(FP), R2
	LSL $2, R2, R3
	LSR $2, R2, R2

col4:
	MOVD R1, R4
	VLD1.P (R4)(R3), [V0.S4]
	VLD1.P (R4)(R3), [V1.S4]
	VLD1.P (R4)(R3), [V2.S4]
	VLD1.P (R4)(R3), [V3.S4]
	VLD1.P (R4)(R3), [V4.S4]
	VLD1.P (R4)(R3), [V5.S4]
	VLD1.P (R4)(R3), [V6.S4]
	VLD1.P (R4)(R3), [V7.S4]
	VLD1.P (R4)(R3), [V8.S4]
	VLD1.P (R4)(R3), [V9.S4]
	VLD1.P (R4)(R3), [V10.S4]
	VLD1.P (R4)(R3), [V11.S4]
	VLD1.P (R4)(R3), [V12.S4]
	VLD1.P (R4)(R3), [V13.S4]
	VLD1.P (R4)(R3), [V14.S4]
	VLD1.P (R4)(R3), [V15.S4]
	VLD1.P (R4)(R3), [V16.S4]
	VLD1.P (R4)(R3), [V17.S4]
	VLD1.P (R4)(R3), [V18.S4]
	VLD1.P (R4)(R3), [V19.S4]
	VLD1.P (R4)(R3), [V20.S4]
	VLD1.P (R4)(R3), [V21.S4]
	VLD1.P (R4)(R3), [V22.S4]
	VLD1.P (R4)(R3), [V23.S4]
	VLD1.P (R4)(R3), [V24.S4]
	VLD1.P (R4)(R3), [V25.S4]
	VLD1.P (R4)(R3), [V26.S4]
	VLD1.P (R4)(R3), [V27.S4]
	VLD1.P (R4)(R3), [V28.S4]
	VLD1.P (R4)(R3), [V29.S4]
	VLD1.P (R4)(R3), [V30.S4]
	VLD1.P (R4)(R3), [V31.S4]
	FADD4S(0, 0, 16)
	FADD4S(8, 8, 24)
	FADD4S(0, 0, 8)
	FADD4S(1, 1, 17)
	FADD4S(9, 9, 25)
	FADD4S(1, 1, 9)
	FADD4S(2, 2, 18)
	FADD4S(10, 10, 26)
	FADD4S(2, 2, 10)
	FADD4S(3, 3, 19)
	FADD4S(11, 11, 27)
	FADD4S(3, 3, 11)
	FADD4S(4, 4, 20)
	FADD4S(12, 12, 28)
	FADD4S(4, 4, 12)
	FADD4S(5, 5, 21)
	FADD4S(13, 13, 29)
	FADD4S(5, 5, 13)
	FADD4S(6, 6, 22)
	FADD4S(14, 14, 30)
	FADD4S(6, 6, 14)
	FADD4S(7, 7, 23)
	FADD4S(15, 15, 31)
	FADD4S(7, 7, 15)
	FADD4S(0, 0, 4)
	FADD4S(1, 1, 5)
	FADD4S(2, 2, 6)
	FADD4S(3, 3, 7)
	FADD4S(0, 0, 1)
	FADD4S(2, 2, 3)
	FADD4S(0, 0, 2)
	VST1.P [V0.S4], 16(R0)
	ADD $16, R1
	SUBS $1, R2
	BNE col4
	RET

// func rotateF32NEON(v, cs *float32, pairs, step, off int)
//
// Pair i is x0 = v[i·step], x1 = v[i·step+off] (step and off in bytes),
// turned by c = cs[2i], s = cs[2i+1]: fma(x0, c, −(x1·s)) with FNMSUB and
// fma(x0, s, x1·c) with FMADD, the products by x1 rounded first, as
// RotateF32 specifies.
TEXT ·rotateF32NEON(SB), NOSPLIT, $0-40
	MOVD v+0(FP), R0
	MOVD cs+8(FP), R1
	MOVD pairs+16(FP), R2
	MOVD step+24(FP), R3
	MOVD off+32(FP), R4

rot:
	FMOVS.P 4(R1), F2
	FMOVS.P 4(R1), F3
	FMOVS (R0), F0
	FMOVS (R0)(R4), F1
	FMULS F3, F1, F4
	FNMSUBS F2, F4, F0, F4
	FMULS F2, F1, F5
	FMADDS F3, F5, F0, F5
	FMOVS F4, (R0)
	FMOVS F5, (R0)(R4)
	ADD R3, R0
	SUBS $1, R2
	BNE rot
	RET
