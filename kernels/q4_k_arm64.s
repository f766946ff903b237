//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q4_K kernels of the neon tiers, in the order of ggml's AVX2
// ggml_vec_dot_q4_K_q8_K (quant's Q4_K dot), one row after another. Per
// super-block of 256:
//   - the mins: p_k = mn[2k]·(bs[4k]+bs[4k+1]) + mn[2k+1]·(bs[4k+2]+bs[4k+3])
//     (bs the activation's 16 sums), accM = fma(-(yd·dmin), p, accM) in
//     four lanes (V24) with FMLS;
//   - the eight int32 lanes s (V27: 0-3, V28: 4-7): sub-block j of 16
//     elements (scale sc[j/2]) adds its four 4-element sums to lanes 0-3
//     (j even) or 4-7 (j odd);
//   - acc = fma(yd·d, float(s), acc) in V25, V26 with FMLA;
// and the row's result is hsum_float_8(acc) + ((m0+m2) + (m1+m3)).
// The 6-bit scales and mins unpack as ggml's utmp trick does, in general
// registers (R19-R21 hold its masks); sc[0..3] go to the lanes of V5,
// sc[4..7] V6, mn[0..3] V7, mn[4..7] V8. V30 holds 0x0F in every byte.
//
// R0 out, R1 rows left, R2 row, R3 nb, R4 rowBytes, R5 act, R6 weight
// block, R7 activation block, R8 blocks left.

// Q4KCHUNK adds chunk c of the quants (Vp: bytes 0-15, Vq: 16-31; low
// nibbles are scale group 2c, high ones 2c+1) with the activation's
// 64 quants in V18-V21 to V27, V28; sc names the scales' register and
// lo, hi their lanes.
#define Q4KCHUNK(IDOT, p, q, sc, lo, hi) \
	VLD1.P 64(R7), [V18.B16, V19.B16, V20.B16, V21.B16] \
	AND16B(22, p, 30) \
	AND16B(23, q, 30) \
	IDOT(29, 22, 18, 0, 1) \
	IDOT(31, 23, 19, 3, 4) \
	MLA4SE(27, 29, sc, lo) \
	MLA4SE(28, 31, sc, lo) \
	USHR16B(22, p, 4) \
	USHR16B(23, q, 4) \
	IDOT(29, 22, 20, 0, 1) \
	IDOT(31, 23, 21, 3, 4) \
	MLA4SE(27, 29, sc, hi) \
	MLA4SE(28, 31, sc, hi)

#define Q4_KROWS(IDOT) \
	MOVW $0x3f3f3f3f, R19 \
	MOVW $0x0f0f0f0f, R20 \
	MOVW $0x03030303, R21 \
	VMOVI $15, V30.B16 \
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
	SCVTF4S(22, 22) \
	FMLS4SE(24, 22, 2, 1) \
	ADD $16, R6 \
	VLD1.P 64(R6), [V10.B16, V11.B16, V12.B16, V13.B16] \
	VLD1.P 64(R6), [V14.B16, V15.B16, V16.B16, V17.B16] \
	ADD $4, R7 \
	MOVI0(27) \
	MOVI0(28) \
	Q4KCHUNK(IDOT, 10, 11, 5, 0, 1) \
	Q4KCHUNK(IDOT, 12, 13, 5, 2, 3) \
	Q4KCHUNK(IDOT, 14, 15, 6, 0, 1) \
	Q4KCHUNK(IDOT, 16, 17, 6, 2, 3) \
	ADD $32, R7 \
	SCVTF4S(27, 27) \
	SCVTF4S(28, 28) \
	FMLA4SE(25, 27, 2, 0) \
	FMLA4SE(26, 28, 2, 0) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(25, 26, 29) \
	EXT16B(29, 24, 24, 8) \
	FADD2S(24, 24, 29) \
	FADDPS(24, 24) \
	FADDS F24, F25, F25 \
	FMOVS.P F25, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// func dotQ4_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ4_KNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD act+40(FP), R5
	Q4_KROWS(IDOT_NEON)

// func dotQ4_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotQ4_KSDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD act+40(FP), R5
	Q4_KROWS(IDOT_SDOT)
