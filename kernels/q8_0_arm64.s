//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q8_0 kernels of the neon tiers, in the order of ggml's AVX2
// ggml_vec_dot_q8_0_q8_0 (quant's Q8_0 dot): per block d = dw·da in
// float32, the eight int32 lane sums of four products each in V4 (lanes
// 0-3) and V5 (lanes 4-7), acc = fma(d, float(lanes), acc) with FMLA,
// then hsum_float_8. The activation is the prepQ4_0x8 form: per block 32
// quants, da as float32, 8·Σa (unused here), 40 bytes.

// Q8_0ROWS is the body of dotQ8_0NEON and dotQ8_0SDOT (IDOT picks the
// integer dot product): one row after another, its blocks in order.
// R0 out, R1 rows left, R2 row, R3 nb, R4 rowBytes, R5 aux, R6 block,
// R7 activation block, R8 blocks left.
#define Q8_0ROWS(IDOT) \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
block: \
	MOVHU.P 2(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	VLD1.P 32(R6), [V2.B16, V3.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	FMOVS.P 8(R7), F1 \
	FMULS F1, F0, F0 \
	IDOT(4, 2, 6, 20, 21) \
	IDOT(5, 3, 7, 22, 23) \
	SCVTF4S(4, 4) \
	SCVTF4S(5, 5) \
	FMLA4SE(16, 4, 0, 0) \
	FMLA4SE(17, 5, 0, 0) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(16, 17, 18) \
	FMOVS.P F16, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// func dotQ8_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ8_0NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD aux+40(FP), R5
	Q8_0ROWS(IDOT_NEON)

// func dotQ8_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ8_0SDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD aux+40(FP), R5
	Q8_0ROWS(IDOT_SDOT)

// Q8_0X4ROW adds row r of a Q8_0x4 block, its quants in Va, Vb, to its
// accumulators Vlo, Vhi with the scale in lane r of V1.
#define Q8_0X4ROW(IDOT, a, b, lo, hi, r) \
	IDOT(2, a, 6, 28, 29) \
	IDOT(3, b, 7, 30, 31) \
	SCVTF4S(2, 2) \
	SCVTF4S(3, 3) \
	FMLA4SE(lo, 2, 1, r) \
	FMLA4SE(hi, 3, 1, r)

// Q8_0X4 is the body of dotQ8_0x4NEON and dotQ8_0x4SDOT: Q8_0x4
// matrices (repack.go), each group of four rows as one stream, the rows'
// arithmetic that of Q8_0ROWS. R0 out, R1 groups left, R2 weights, R3 nb,
// R5 aux, R7 activation block, R8 blocks left; row r accumulates in V16+2r
// (lanes 0-3) and V17+2r (lanes 4-7).
#define Q8_0X4(IDOT) \
group: \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
	MOVI0(17) \
	MOVI0(18) \
	MOVI0(19) \
	MOVI0(20) \
	MOVI0(21) \
	MOVI0(22) \
	MOVI0(23) \
block: \
	VLD1.P 8(R2), [V0.H4] \
	VLD1.P 64(R2), [V10.B16, V11.B16, V12.B16, V13.B16] \
	VLD1.P 64(R2), [V24.B16, V25.B16, V26.B16, V27.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	VLD1.P 8(R7), [V8.S2] \
	FCVTL4S(1, 0) \
	FMUL4SE(1, 1, 8, 0) \
	Q8_0X4ROW(IDOT, 10, 11, 16, 17, 0) \
	Q8_0X4ROW(IDOT, 12, 13, 18, 19, 1) \
	Q8_0X4ROW(IDOT, 24, 25, 20, 21, 2) \
	Q8_0X4ROW(IDOT, 26, 27, 22, 23, 3) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(16, 17, 28) \
	HSUM8(18, 19, 29) \
	HSUM8(20, 21, 30) \
	HSUM8(22, 23, 31) \
	FMOVS.P F16, 4(R0) \
	FMOVS.P F18, 4(R0) \
	FMOVS.P F20, 4(R0) \
	FMOVS.P F22, 4(R0) \
	SUBS $1, R1 \
	BNE group \
	RET

// func dotQ8_0x4NEON(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ8_0x4NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD groups+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD aux+40(FP), R5
	Q8_0X4(IDOT_NEON)

// func dotQ8_0x4SDOT(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ8_0x4SDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD groups+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD aux+40(FP), R5
	Q8_0X4(IDOT_SDOT)
