//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q4_0 kernels of the neon tiers. The activation is the prepQ4_0x8
// form: per block 32 quants, da as float32, 8·Σa as int32 (40 bytes).
// V30 holds 0x0F in every byte, V31 8.

#define Q4CONSTS \
	VMOVI $15, V30.B16 \
	VMOVI $8, V31.B16

// Q4_0ROWS is the body of dotQ4_0NEON and dotQ4_0SDOT, in the order of
// ggml's AVX2 ggml_vec_dot_q4_0_q8_0 (quant's Q4_0 dot): the nibbles
// minus 8, low ones (elements 0-15) giving lanes 0-3, high ones (16-31)
// lanes 4-7, then as Q8_0ROWS. Registers as there.
#define Q4_0ROWS(IDOT) \
	Q4CONSTS \
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
	VLD1.P 16(R6), [V2.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	FMOVS.P 8(R7), F1 \
	FMULS F1, F0, F0 \
	AND16B(3, 2, 30) \
	USHR16B(2, 2, 4) \
	SUB16B(3, 3, 31) \
	SUB16B(2, 2, 31) \
	IDOT(4, 3, 6, 20, 21) \
	IDOT(5, 2, 7, 22, 23) \
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

// func dotQ4_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ4_0NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD aux+40(FP), R5
	Q4_0ROWS(IDOT_NEON)

// func dotQ4_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ4_0SDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD aux+40(FP), R5
	Q4_0ROWS(IDOT_SDOT)

// Q4_0GEMV is the body of dotQ4_0GemvNEON and dotQ4_0GemvSDOT, in the
// order of ggml_gemv_q4_0_8x8_q8_0 (quant.DotQ4_0Gemv) on the file's
// layout: per row one float32 accumulator, per block
// acc = fma(float(Σq·a − 8·Σa), dw·da, acc) with FMADD.
#define Q4_0GEMV(ISUM) \
	Q4CONSTS \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(16) \
block: \
	MOVHU.P 2(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	VLD1.P 16(R6), [V2.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	VLD1.P 8(R7), [V1.S2] \
	FMULS F1, F0, F0 \
	AND16B(3, 2, 30) \
	USHR16B(2, 2, 4) \
	ISUM(4, 3, 6, 2, 7, 20) \
	ADDV4S(4, 4) \
	DUP4S(5, 1, 1) \
	SUB4S(4, 4, 5) \
	SCVTF4S(4, 4) \
	FMADDS F0, F16, F4, F16 \
	SUBS $1, R8 \
	BNE block \
	FMOVS.P F16, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

// func dotQ4_0GemvNEON(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ4_0GemvNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD aux+40(FP), R5
	Q4_0GEMV(ISUM_NEON)

// func dotQ4_0GemvSDOT(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ4_0GemvSDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD rows+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD rowBytes+32(FP), R4
	MOVD aux+40(FP), R5
	Q4_0GEMV(ISUM_SDOT)

// The Q4_0x8 kernels (repack.go's layout), in quant.DotQ4_0Gemv's
// arithmetic for each of a group's eight rows: lane r of V4 (rows 0-3)
// and V5 (rows 4-7) gets row r's Σq·a over a block, with the nibbles
// unsigned, then −8·Σa; acc = fma(float(isum), dw·da, acc) in V24, V25
// with FMLA. Chunk c of a block (V10+2c: rows 0-3, V11+2c: rows 4-7) holds
// each row's elements 4c..4c+3 (low nibbles, times activation word c of
// V6) and 16+4c..16+4c+3 (high nibbles, word c of V7).

// Q4X8CHUNK_SDOT adds chunk c (in Vp, Vq) to V4, V5 with SDOT by element.
#define Q4X8CHUNK_SDOT(p, q, c) \
	AND16B(18, p, 30) \
	USHR16B(19, p, 4) \
	AND16B(20, q, 30) \
	USHR16B(21, q, 4) \
	SDOT4SE(4, 18, 6, c) \
	SDOT4SE(5, 20, 6, c) \
	SDOT4SE(4, 19, 7, c) \
	SDOT4SE(5, 21, 7, c)

// Q4X8CHUNK_NEON adds chunk c to int16 lanes V4 (rows 0, 1), V5 (2, 3),
// V22 (4, 5), V23 (6, 7), four per row, each taking eight products over
// the block (at most 8·15·128 in magnitude).
#define Q4X8CHUNK_NEON(p, q, c) \
	DUP4S(26, 6, c) \
	DUP4S(27, 7, c) \
	AND16B(18, p, 30) \
	USHR16B(19, p, 4) \
	AND16B(20, q, 30) \
	USHR16B(21, q, 4) \
	SMLAL8H(4, 18, 26) \
	SMLAL28H(5, 18, 26) \
	SMLAL8H(22, 20, 26) \
	SMLAL28H(23, 20, 26) \
	SMLAL8H(4, 19, 27) \
	SMLAL28H(5, 19, 27) \
	SMLAL8H(22, 21, 27) \
	SMLAL28H(23, 21, 27)

#define Q4X8SUMS_SDOT \
	MOVI0(4) \
	MOVI0(5) \
	Q4X8CHUNK_SDOT(10, 11, 0) \
	Q4X8CHUNK_SDOT(12, 13, 1) \
	Q4X8CHUNK_SDOT(14, 15, 2) \
	Q4X8CHUNK_SDOT(16, 17, 3)

#define Q4X8SUMS_NEON \
	MOVI0(4) \
	MOVI0(5) \
	MOVI0(22) \
	MOVI0(23) \
	Q4X8CHUNK_NEON(10, 11, 0) \
	Q4X8CHUNK_NEON(12, 13, 1) \
	Q4X8CHUNK_NEON(14, 15, 2) \
	Q4X8CHUNK_NEON(16, 17, 3) \
	SADDLP4S(4, 4) \
	SADDLP4S(5, 5) \
	SADDLP4S(22, 22) \
	SADDLP4S(23, 23) \
	ADDP4S(4, 4, 5) \
	ADDP4S(5, 22, 23)

// Q4_0X8 is the body of dotQ4_0x8NEON and dotQ4_0x8SDOT. R0 out, R1
// groups left, R2 weights, R3 nb, R5 aux, R7 activation block, R8 blocks
// left.
#define Q4_0X8(SUMS) \
	Q4CONSTS \
group: \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(24) \
	MOVI0(25) \
block: \
	VLD1.P 16(R2), [V0.H8] \
	VLD1.P 64(R2), [V10.B16, V11.B16, V12.B16, V13.B16] \
	VLD1.P 64(R2), [V14.B16, V15.B16, V16.B16, V17.B16] \
	VLD1.P 32(R7), [V6.B16, V7.B16] \
	VLD1.P 8(R7), [V8.S2] \
	FCVTL4S(1, 0) \
	FCVTL24S(2, 0) \
	FMUL4SE(1, 1, 8, 0) \
	FMUL4SE(2, 2, 8, 0) \
	DUP4S(9, 8, 1) \
	SUMS \
	SUB4S(4, 4, 9) \
	SUB4S(5, 5, 9) \
	SCVTF4S(4, 4) \
	SCVTF4S(5, 5) \
	FMLA4S(24, 4, 1) \
	FMLA4S(25, 5, 2) \
	SUBS $1, R8 \
	BNE block \
	VST1.P [V24.S4, V25.S4], 32(R0) \
	SUBS $1, R1 \
	BNE group \
	RET

// func dotQ4_0x8NEON(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ4_0x8NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD groups+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD aux+40(FP), R5
	Q4_0X8(Q4X8SUMS_NEON)

// func dotQ4_0x8SDOT(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotQ4_0x8SDOT(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD groups+8(FP), R1
	MOVD w+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD aux+40(FP), R5
	Q4_0X8(Q4X8SUMS_SDOT)
