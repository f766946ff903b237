//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q5_K kernels of the neon tiers, in the order of ggml's AVX2
// ggml_vec_dot_q5_K_q8_K (quant's Q5_K dot), one row after another: the
// Q4_K kernels' lanes (q4_k_arm64.s) over 5-bit quants, the fifth bit of
// element 64c+j (low nibble) and 64c+32+j (high nibble) being bits 2c and
// 2c+1 of qh[j]; but the mins go to a scalar,
// summs = fma(−(yd·dmin), (p0+p1)+(p2+p3), summs) with FMSUB (in lane 0
// of V24), and the row's result is hsum_float_8(acc) + summs. qh is in V3
// (bytes 0-15), V4 (16-31), shifted right by 2 after each chunk; V9 holds
// 0x10 in every byte. The plain-NEON dot products take V0, V1 as scratch.

// Q5KCHUNK adds chunk c (qs bytes in Vp, Vq) as Q4KCHUNK does, with the
// fifth bits from bits 0 (low nibbles) and 1 (high) of V3, V4.
#define Q5KCHUNK(IDOT, p, q, sc, lo, hi) \
	VLD1.P 64(R7), [V18.B16, V19.B16, V20.B16, V21.B16] \
	AND16B(22, p, 30) \
	SHL16B(29, 3, 4) \
	AND16B(29, 29, 9) \
	ORR16B(22, 22, 29) \
	AND16B(23, q, 30) \
	SHL16B(31, 4, 4) \
	AND16B(31, 31, 9) \
	ORR16B(23, 23, 31) \
	IDOT(29, 22, 18, 0, 1) \
	IDOT(31, 23, 19, 0, 1) \
	MLA4SE(27, 29, sc, lo) \
	MLA4SE(28, 31, sc, lo) \
	USHR16B(22, p, 4) \
	SHL16B(29, 3, 3) \
	AND16B(29, 29, 9) \
	ORR16B(22, 22, 29) \
	USHR16B(23, q, 4) \
	SHL16B(31, 4, 3) \
	AND16B(31, 31, 9) \
	ORR16B(23, 23, 31) \
	IDOT(29, 22, 20, 0, 1) \
	IDOT(31, 23, 21, 0, 1) \
	MLA4SE(27, 29, sc, hi) \
	MLA4SE(28, 31, sc, hi) \
	USHR16B(3, 3, 2) \
	USHR16B(4, 4, 2)

#define Q5_KROWS(IDOT) \
	MOVW $0x3f3f3f3f, R19 \
	MOVW $0x0f0f0f0f, R20 \
	MOVW $0x03030303, R21 \
	VMOVI $15, V30.B16 \
	VMOVI $16, V9.B16 \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(24) \
	MOVI0(25) \
	MOVI0(26) \
block: \
	FMOVS (R6), F0 \
	FCVTL4S(0, 0) \
	FMOVS (R7), F1 \
	FMUL4SE(2, 0, 1, 0) \
	MOVWU 4(R6), R10 \
	MOVWU 8(R6), R11 \
	MOVWU 12(R6), R12 \
	LSRW $4, R12, R13 \
	ANDW R20, R13, R13 \
	LSRW $6, R11, R14 \
	ANDW R21, R14, R14 \
	ORRW R14<<4, R13, R13 \
	ANDW R19, R11, R15 \
	ANDW R20, R12, R14 \
	LSRW $6, R10, R22 \
	ANDW R21, R22, R22 \
	ORRW R22<<4, R14, R14 \
	ANDW R19, R10, R10 \
	ORR R14<<32, R10, R10 \
	ORR R13<<32, R15, R15 \
	FMOVD R10, F3 \
	FMOVD R15, F4 \
	UXTL8H(3, 3) \
	UXTL8H(4, 4) \
	UXTL4S(5, 3) \
	UXTL24S(6, 3) \
	UXTL4S(7, 4) \
	UXTL24S(8, 4) \
	ADD $260, R7, R9 \
	VLD1 (R9), [V22.H8, V23.H8] \
	SADDLP4S(22, 22) \
	SADDLP4S(23, 23) \
	MUL4S(22, 22, 7) \
	MUL4S(23, 23, 8) \
	ADDP4S(22, 22, 23) \
	ADDV4S(22, 22) \
	SCVTF4S(22, 22) \
	DUP4S(23, 2, 1) \
	FMSUBS F23, F24, F22, F24 \
	ADD $16, R6 \
	VLD1.P 32(R6), [V3.B16, V4.B16] \
	VLD1.P 64(R6), [V10.B16, V11.B16, V12.B16, V13.B16] \
	VLD1.P 64(R6), [V14.B16, V15.B16, V16.B16, V17.B16] \
	ADD $4, R7 \
	MOVI0(27) \
	MOVI0(28) \
	Q5KCHUNK(IDOT, 10, 11, 5, 0, 1) \
	Q5KCHUNK(IDOT, 12, 13, 5, 2, 3) \
	Q5KCHUNK(IDOT, 14, 15, 6, 0, 1) \
	Q5KCHUNK(IDOT, 16, 17, 6, 2, 3) \
	ADD $32, R7 \
	SCVTF4S(27, 27) \
	SCVTF4S(28, 28) \
	FMLA4SE(25, 27, 2, 0) \
	FMLA4SE(26, 28, 2, 0) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(25, 26, 29) \
	FADDS F24, F25, F25 \
	FMOVS.P F25, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// func dotQ5_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ5_KNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD act+40(FP), R5
	Q5_KROWS(IDOT_NEON)

// func dotQ5_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ5_KSDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD act+40(FP), R5
	Q5_KROWS(IDOT_SDOT)
