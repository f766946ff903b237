//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The prefill tiles of the neon-dotprod tier for Q8_0 and Q4_0 in the
// file's layout: one row at a time, a block's weights loaded (and
// unpacked) once for the four activations of packQ4_0x8x4's form (40 bytes
// per activation and block: quants, da as float32, 8·Σa), each (row,
// activation) with exactly the arithmetic of the one-activation kernels
// (q8_0_arm64.s, q4_0_arm64.s).
//
// func(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte):
// R0, R11, R12, R13 the activations' outputs, R2 rows left, R3 row, R4
// nb, R16 rowBytes, R5 packed, R6 weight block, R7 activation block, R8
// blocks left. The block's quants are in V2 (elements 0-15) and V3
// (16-31), dw in F0; V30 holds 0x0F in every byte, V31 8.

#define T4PROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD ostride+8(FP), R1 \
	MOVD rows+16(FP), R2 \
	MOVD w+24(FP), R3 \
	MOVD nb+32(FP), R4 \
	MOVD rowBytes+40(FP), R16 \
	MOVD packed+48(FP), R5 \
	LSL $2, R1 \
	ADD R1, R0, R11 \
	ADD R1, R11, R12 \
	ADD R1, R12, R13 \
	VMOVI $15, V30.B16 \
	VMOVI $8, V31.B16

#define T4ROWSTART \
	MOVD R3, R6 \
	MOVD R5, R7 \
	MOVD R4, R8 \
	MOVI0(16) \
	MOVI0(17) \
	MOVI0(18) \
	MOVI0(19) \
	MOVI0(20) \
	MOVI0(21) \
	MOVI0(22) \
	MOVI0(23)

#define T4SCALE \
	MOVHU.P 2(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0

// T4LANES adds the next activation to the lanes Vlo (0-3), Vhi (4-7):
// acc = fma(dw·da, float(lane sums), acc), as Q8_0ROWS.
#define T4LANES(lo, hi) \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	FMOVS.P 8(R7), F1 \
	FMULS F1, F0, F4 \
	MOVI0(8) \
	MOVI0(9) \
	SDOT4S(8, 2, 6) \
	SDOT4S(9, 3, 7) \
	SCVTF4S(8, 8) \
	SCVTF4S(9, 9) \
	FMLA4SE(lo, 8, 4, 0) \
	FMLA4SE(hi, 9, 4, 0)

#define T4LANESALL \
	T4LANES(16, 17) \
	T4LANES(18, 19) \
	T4LANES(20, 21) \
	T4LANES(22, 23) \
	SUBS $1, R8

#define T4LANESEND \
	HSUM8(16, 17, 8) \
	HSUM8(18, 19, 8) \
	HSUM8(20, 21, 8) \
	HSUM8(22, 23, 8) \
	FMOVS.P F16, 4(R0) \
	FMOVS.P F18, 4(R11) \
	FMOVS.P F20, 4(R12) \
	FMOVS.P F22, 4(R13) \
	ADD R16, R3 \
	SUBS $1, R2

// func dotQ8_0T4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte)
TEXT ·dotQ8_0T4SDOT(SB), NOSPLIT, $0-56
	T4PROLOGUE

q8row:
	T4ROWSTART

q8block:
	T4SCALE
	VLD1.P 32(R6), [V2.B16, V3.B16]
	T4LANESALL
	BNE q8block
	T4LANESEND
	BNE q8row
	RET

// func dotQ4_0T4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte)
//
// ggml_vec_dot_q4_0_q8_0's order: the nibbles minus 8, low ones elements
// 0-15, high ones 16-31.
TEXT ·dotQ4_0T4SDOT(SB), NOSPLIT, $0-56
	T4PROLOGUE

q4row:
	T4ROWSTART

q4block:
	T4SCALE
	VLD1.P 16(R6), [V3.B16]
	AND16B(2, 3, 30)
	USHR16B(3, 3, 4)
	SUB16B(2, 2, 31)
	SUB16B(3, 3, 31)
	T4LANESALL
	BNE q4block
	T4LANESEND
	BNE q4row
	RET

// T4GEMV adds the next activation to the scalar Facc as Q4_0GEMV does:
// acc = fma(float(Σq·a − 8·Σa), dw·da, acc) with FMADD, the nibbles
// unsigned.
#define T4GEMV(acc) \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	VLD1.P 8(R7), [V1.S2] \
	FMULS F1, F0, F4 \
	MOVI0(8) \
	SDOT4S(8, 2, 6) \
	SDOT4S(8, 3, 7) \
	ADDV4S(8, 8) \
	DUP4S(9, 1, 1) \
	SUB4S(8, 8, 9) \
	SCVTF4S(8, 8) \
	FMADDS F4, acc, F8, acc

// func dotQ4_0GT4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte)
//
// The order of ggml_gemv_q4_0_8x8_q8_0 (quant.DotQ4_0Gemv) on the file's
// layout, one float32 accumulator per activation (F16-F19).
TEXT ·dotQ4_0GT4SDOT(SB), NOSPLIT, $0-56
	T4PROLOGUE

q4grow:
	T4ROWSTART

q4gblock:
	T4SCALE
	VLD1.P 16(R6), [V3.B16]
	AND16B(2, 3, 30)
	USHR16B(3, 3, 4)
	T4GEMV(F16)
	T4GEMV(F17)
	T4GEMV(F18)
	T4GEMV(F19)
	SUBS $1, R8
	BNE q4gblock
	FMOVS.P F16, 4(R0)
	FMOVS.P F17, 4(R11)
	FMOVS.P F18, 4(R12)
	FMOVS.P F19, 4(R13)
	ADD R16, R3
	SUBS $1, R2
	BNE q4grow
	RET
