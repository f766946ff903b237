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

// The values of one head of ValuesF16Heads (slot-major f16 values, the
// weights p): for each column c, 32 lanes where position t goes into lane
// t%32 as fma(value, p[t], lane), from +0, then GGML_F32x8_REDUCE of the
// lanes. The lanes are kept in registers: a column chunk takes eight
// passes over the positions, pass l over t ≡ l (mod 8), whose positions
// feed lanes l, 8+l, 16+l and 24+l in turn (t/8 mod 4), each in increasing
// t. A pass ends with x_l = (L_l + L_16+l) + (L_8+l + L_24+l); the passes
// run in the order l = 0, 4, 1, 5, 2, 6, 3, 7 so that the reduction's
// tree ((x0+x4) + (x1+x5)) + ((x2+x6) + (x3+x7)) needs only Y (the pair
// x_q + x_q+4), Xa and Xb.
//
// Registers: R0 out, R1 the chunk's first value (position 0), R2 row
// bytes, R3 n, R4 p, R5 columns left, R6 8 rows' bytes, R7 pass i, R8 its
// l, R9 its positions, R10 value pointer, R11 weight pointer, R12 count,
// R13 scratch. V0-V1 values, V2 the weight (lane 0), V3 a widened vector,
// V4-V7 Y, V8-V11 Xa, V12-V15 Xb, V16-V31 the lanes.

// VPOS16 adds the weighted values of the next position of the pass (16
// columns) to lane registers a0-a3.
#define VPOS16(a0, a1, a2, a3) \
	VLD1.P (R10)(R6), [V0.H8, V1.H8] \
	FMOVS.P 32(R11), F2 \
	FCVTL4S(3, 0) \
	FMLA4SE(a0, 3, 2, 0) \
	FCVTL24S(3, 0) \
	FMLA4SE(a1, 3, 2, 0) \
	FCVTL4S(3, 1) \
	FMLA4SE(a2, 3, 2, 0) \
	FCVTL24S(3, 1) \
	FMLA4SE(a3, 3, 2, 0)

// VLANES16 sets Va to (L_l + L_16+l) + (L_8+l + L_24+l) for the column
// vector whose lanes are Va (L_l), Va+4, Va+8 and Va+12.
#define VLANES16(a) \
	FADD4S(a, a, (a+8)) \
	FADD4S((a+4), (a+4), (a+12)) \
	FADD4S(a, a, (a+4))

// VPASS sets R8 to pass R7's lane l = i/2 + 4·(i mod 2), R9 to its number
// of positions ⌈(n−l)/8⌉ (0 where n ≤ l: n ≥ 1, l ≤ 7), R10 and R11 to its
// first value and weight, and R12 to its count of groups of four.
#define VPASS \
	LSR $1, R7, R8 \
	AND $1, R7, R13 \
	ADD R13<<2, R8, R8 \
	SUB R8, R3, R9 \
	ADD $7, R9, R9 \
	ASR $3, R9, R9 \
	MUL R8, R2, R13 \
	ADD R13, R1, R10 \
	ADD R8<<2, R4, R11 \
	LSR $2, R9, R12

// func valuesF16x16NEON(out *float32, values *uint16, rowBytes, n int, p *float32, cols int)
//
// The head's columns in chunks of 16 (cols a multiple of 16, n ≥ 1).
TEXT ·valuesF16x16NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD values+8(FP), R1
	MOVD rowBytes+16(FP), R2
	MOVD n+24(FP), R3
	MOVD p+32(FP), R4
	MOVD cols+40(FP), R5
	LSL $3, R2, R6

chunk:
	MOVD $0, R7

pass:
	VPASS
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
	CBZ R12, rest

four:
	VPOS16(16, 17, 18, 19)
	VPOS16(20, 21, 22, 23)
	VPOS16(24, 25, 26, 27)
	VPOS16(28, 29, 30, 31)
	SUBS $1, R12
	BNE four

rest:
	AND $3, R9, R12
	CBZ R12, lanes
	VPOS16(16, 17, 18, 19)
	SUBS $1, R12
	BEQ lanes
	VPOS16(20, 21, 22, 23)
	SUBS $1, R12
	BEQ lanes
	VPOS16(24, 25, 26, 27)

lanes:
	VLANES16(16)
	VLANES16(17)
	VLANES16(18)
	VLANES16(19)
	TBNZ $0, R7, odd
	MOV16B(4, 16)
	MOV16B(5, 17)
	MOV16B(6, 18)
	MOV16B(7, 19)
	B next

odd:
	FADD4S(4, 4, 16)
	FADD4S(5, 5, 17)
	FADD4S(6, 6, 18)
	FADD4S(7, 7, 19)
	CMP $3, R7
	BEQ q1
	BGT q23
	MOV16B(8, 4)
	MOV16B(9, 5)
	MOV16B(10, 6)
	MOV16B(11, 7)
	B next

q1:
	FADD4S(8, 8, 4)
	FADD4S(9, 9, 5)
	FADD4S(10, 10, 6)
	FADD4S(11, 11, 7)
	B next

q23:
	CMP $7, R7
	BEQ q3
	MOV16B(12, 4)
	MOV16B(13, 5)
	MOV16B(14, 6)
	MOV16B(15, 7)
	B next

q3:
	FADD4S(12, 12, 4)
	FADD4S(13, 13, 5)
	FADD4S(14, 14, 6)
	FADD4S(15, 15, 7)
	FADD4S(8, 8, 12)
	FADD4S(9, 9, 13)
	FADD4S(10, 10, 14)
	FADD4S(11, 11, 15)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R0)

next:
	ADD $1, R7
	CMP $8, R7
	BLT pass
	ADD $32, R1
	SUBS $16, R5
	BNE chunk
	RET

// VPOS4 is VPOS16 for a chunk of 4 columns, lane register a.
#define VPOS4(a) \
	VLD1.P (R10)(R6), [V0.H4] \
	FMOVS.P 32(R11), F2 \
	FCVTL4S(3, 0) \
	FMLA4SE(a, 3, 2, 0)

// func valuesF16x4NEON(out *float32, values *uint16, rowBytes, n int, p *float32, cols int)
//
// The head's columns in chunks of 4 (cols a multiple of 4, n ≥ 1): lanes
// l, 8+l, 16+l, 24+l of the pass in V16-V19, Y in V4, Xa V8, Xb V12.
TEXT ·valuesF16x4NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD values+8(FP), R1
	MOVD rowBytes+16(FP), R2
	MOVD n+24(FP), R3
	MOVD p+32(FP), R4
	MOVD cols+40(FP), R5
	LSL $3, R2, R6

chunk:
	MOVD $0, R7

pass:
	VPASS
	MOVI0(16)
	MOVI0(17)
	MOVI0(18)
	MOVI0(19)
	CBZ R12, rest

four:
	VPOS4(16)
	VPOS4(17)
	VPOS4(18)
	VPOS4(19)
	SUBS $1, R12
	BNE four

rest:
	AND $3, R9, R12
	CBZ R12, lanes
	VPOS4(16)
	SUBS $1, R12
	BEQ lanes
	VPOS4(17)
	SUBS $1, R12
	BEQ lanes
	VPOS4(18)

lanes:
	FADD4S(16, 16, 18)
	FADD4S(17, 17, 19)
	FADD4S(16, 16, 17)
	TBNZ $0, R7, odd
	MOV16B(4, 16)
	B next

odd:
	FADD4S(4, 4, 16)
	CMP $3, R7
	BEQ q1
	BGT q23
	MOV16B(8, 4)
	B next

q1:
	FADD4S(8, 8, 4)
	B next

q23:
	CMP $7, R7
	BEQ q3
	MOV16B(12, 4)
	B next

q3:
	FADD4S(12, 12, 4)
	FADD4S(8, 8, 12)
	VST1.P [V8.S4], 16(R0)

next:
	ADD $1, R7
	CMP $8, R7
	BLT pass
	ADD $8, R1
	SUBS $4, R5
	BNE chunk
	RET
