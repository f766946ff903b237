//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The TQ1_0 and TQ2_0 kernels of the neon tiers, in the order of ggml's
// AVX2 ggml_vec_dot_tq1_0_q8_K and _tq2_0_q8_K (quant's dotTernary), one
// row after another. Per block the int32 lanes (V26: 0-3, V27: 4-7) start
// at −(bsums[2l] + bsums[2l+1]) and take code·q of the elements e with
// e mod 32 in [4l, 4l+4) (codes 0..2); then acc = fma(yd·d, float(lanes),
// acc) in V24, V25 with FMLA, and the row's result is hsum_float_8(acc).
//
// R0 out, R1 rows left, R2 row, R3 nb, R4 rowBytes, R5 act, R6 weight
// block, R7 activation block, R8 blocks left.

DATA ternaryconsts<>+0(SB)/8, $0x0303030301010101
DATA ternaryconsts<>+8(SB)/8, $0x1b1b1b1b09090909
GLOBL ternaryconsts<>(SB), RODATA|NOPTR, $16

#define TPROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD nb+24(FP), R3 \
	MOVD rowBytes+32(FP), R4 \
	MOVD act+40(FP), R5

// TACC_SDOT and TACC_NEON add the four 4-element sums of Vw·Va to the
// int32 lanes of Vacc.
#define TACC_SDOT(acc, w, a) SDOT4S(acc, w, a)
#define TACC_NEON(acc, w, a) IDOT_NEON(18, w, a, 28, 29); ADD4S(acc, acc, 18)

// TSTART begins a block whose fp16 d is at off(R6): yd·d in lane 0 of V6,
// the lanes at minus the activation's pair sums, R7 past yd.
#define TSTART(off) \
	MOVHU off(R6), R9 \
	FMOVS R9, F0 \
	FCVTHS F0, F0 \
	FMOVS (R7), F1 \
	FMULS F0, F1, F6 \
	ADD $260, R7, R9 \
	VLD1 (R9), [V14.H8, V15.H8] \
	SADDLP4S(26, 14) \
	SADDLP4S(27, 15) \
	NEG4S(26, 26) \
	NEG4S(27, 27) \
	ADD $4, R7

// TEND ends a block (R7 past the activation's quants) and the rows.
#define TEND \
	ADD $32, R7 \
	SCVTF4S(26, 26) \
	SCVTF4S(27, 27) \
	FMLA4SE(24, 26, 6, 0) \
	FMLA4SE(25, 27, 6, 0) \
	SUBS $1, R8 \
	BNE block \
	HSUM8(24, 25, 18) \
	FMOVS.P F24, 4(R0) \
	ADD R4, R2 \
	SUBS $1, R1 \
	BNE row \
	RET

#define TROWSTART \
row: \
	MOVD R2, R6 \
	MOVD R5, R7 \
	MOVD R3, R8 \
	MOVI0(24) \
	MOVI0(25) \
block:

// T2GROUP adds the 32 elements whose codes are bits s, s+1 of Vq0
// (elements 0-15) and Vq1 (16-31); V30 holds 3 in every byte.
#define T2GROUP(ACC, q0, q1, s) \
	VLD1.P 32(R7), [V8.B16, V9.B16] \
	USHR16B(16, q0, s) \
	USHR16B(17, q1, s) \
	AND16B(16, 16, 30) \
	AND16B(17, 17, 30) \
	ACC(26, 16, 8) \
	ACC(27, 17, 9)

#define T2GROUP0(ACC, q0, q1) \
	VLD1.P 32(R7), [V8.B16, V9.B16] \
	AND16B(16, q0, 30) \
	AND16B(17, q1, 30) \
	ACC(26, 16, 8) \
	ACC(27, 17, 9)

// TQ2_0: 66 bytes a block, qs[64] (code of element 128h+32n+m at bits
// 2n of byte 32h+m) and d.
#define TQ2_0ROWS(ACC) \
	VMOVI $3, V30.B16 \
	TROWSTART \
	TSTART(64) \
	VLD1.P 64(R6), [V2.B16, V3.B16, V4.B16, V5.B16] \
	ADD $2, R6 \
	T2GROUP0(ACC, 2, 3) \
	T2GROUP(ACC, 2, 3, 2) \
	T2GROUP(ACC, 2, 3, 4) \
	T2GROUP(ACC, 2, 3, 6) \
	T2GROUP0(ACC, 4, 5) \
	T2GROUP(ACC, 4, 5, 2) \
	T2GROUP(ACC, 4, 5, 4) \
	T2GROUP(ACC, 4, 5, 6) \
	TEND

// func dotTQ2_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotTQ2_0NEON(SB), NOSPLIT, $0-48
	TPROLOGUE
	TQ2_0ROWS(TACC_NEON)

// func dotTQ2_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotTQ2_0SDOT(SB), NOSPLIT, $0-48
	TPROLOGUE
	TQ2_0ROWS(TACC_SDOT)

// TRIT sets Vd to the trits ((x·3)>>8) of the bytes x of Vx: the
// halving add (x + x>>1)>>1, then >>6, which is floor(3x/256) for every
// byte (3x is a multiple of 256 only for x = 0).
#define TRIT(d, x) \
	USHR16B(d, x, 1) \
	UHADD16B(d, x, d) \
	USHR16B(d, d, 6)

// T1WIDE adds trit n (bytes times 3ⁿ in Vx0, Vx1) of qs: elements
// 32n..32n+31.
#define T1WIDE(ACC, x0, x1) \
	VLD1.P 32(R7), [V8.B16, V9.B16] \
	TRIT(16, x0) \
	TRIT(17, x1) \
	ACC(26, 16, 8) \
	ACC(27, 17, 9)

// T1NARROW adds 16 elements (bytes times 3ⁿ in Vx) to the lanes Vacc.
#define T1NARROW(ACC, x, acc) \
	VLD1.P 16(R7), [V8.B16] \
	TRIT(16, x) \
	ACC(acc, 16, 8)

// TQ1_0: 54 bytes a block: qs[32] (five trits a byte: trit n of byte m
// is element 32n+m), qs[32:48] (element 160+16n+m), qh[4] (four trits:
// element 240+4n+j), d. A trit is ((q·3ⁿ mod 256)·3)>>8. V20-V23 hold 3,
// 9, 27 and 81 in every byte, V19 3^(k/4) in byte k.
#define TQ1_0ROWS(ACC) \
	VMOVI $3, V20.B16 \
	VMOVI $9, V21.B16 \
	VMOVI $27, V22.B16 \
	VMOVI $81, V23.B16 \
	MOVD $ternaryconsts<>(SB), R9 \
	VLD1 (R9), [V19.B16] \
	TROWSTART \
	TSTART(52) \
	VLD1.P 32(R6), [V2.B16, V3.B16] \
	VLD1.P 16(R6), [V4.B16] \
	MOVWU.P 4(R6), R10 \
	VDUP R10, V5.S4 \
	ADD $2, R6 \
	T1WIDE(ACC, 2, 3) \
	MUL16B(10, 2, 20) \
	MUL16B(11, 3, 20) \
	T1WIDE(ACC, 10, 11) \
	MUL16B(10, 2, 21) \
	MUL16B(11, 3, 21) \
	T1WIDE(ACC, 10, 11) \
	MUL16B(10, 2, 22) \
	MUL16B(11, 3, 22) \
	T1WIDE(ACC, 10, 11) \
	MUL16B(10, 2, 23) \
	MUL16B(11, 3, 23) \
	T1WIDE(ACC, 10, 11) \
	T1NARROW(ACC, 4, 26) \
	MUL16B(10, 4, 20) \
	T1NARROW(ACC, 10, 27) \
	MUL16B(10, 4, 21) \
	T1NARROW(ACC, 10, 26) \
	MUL16B(10, 4, 22) \
	T1NARROW(ACC, 10, 27) \
	MUL16B(10, 4, 23) \
	T1NARROW(ACC, 10, 26) \
	MUL16B(10, 5, 19) \
	T1NARROW(ACC, 10, 27) \
	TEND

// func dotTQ1_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotTQ1_0NEON(SB), NOSPLIT, $0-48
	TPROLOGUE
	TQ1_0ROWS(TACC_NEON)

// func dotTQ1_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)
TEXT ·dotTQ1_0SDOT(SB), NOSPLIT, $0-48
	TPROLOGUE
	TQ1_0ROWS(TACC_SDOT)
