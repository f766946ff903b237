//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The prefill tiles of the neon-dotprod tier for Q4_K and Q6_K: one row
// at a time, a super-block's weights unpacked once (scales and quants)
// while the four activations of packQ8_Kx4's form pass over them, each
// (row, activation) with exactly the arithmetic of the one-activation
// kernels (q4_k_arm64.s, q6_k_arm64.s). The float accumulators of the
// four activations (12 registers) wait in scratch between blocks: the
// unpacked weights fill the registers.
//
// Shared: R0, R23, R24, R25 the outputs of the four activations, R2 rows
// left, R3 row, R4 nb, R5 packed, R6 weight block, R7 activation block,
// R8 blocks left, R9 scratch of the activation, R26 scratch.

// TILEPROLOGUE loads the arguments of
// func(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32).
#define TILEPROLOGUE \
	MOVD out+0(FP), R0 \
	MOVD ostride+8(FP), R1 \
	MOVD rows+16(FP), R2 \
	MOVD w+24(FP), R3 \
	MOVD nb+32(FP), R4 \
	MOVD rowBytes+40(FP), R15 \
	MOVD packed+48(FP), R5 \
	MOVD scratch+56(FP), R26 \
	LSL $2, R1 \
	ADD R1, R0, R23 \
	ADD R1, R23, R24 \
	ADD R1, R24, R25

// TILEROWSTART zeroes the four activations' accumulators in scratch
// (with V24-V26) and starts the row's blocks.
#define TILEROWSTART \
	MOVD R3, R6 \
	MOVD R5, R7 \
	MOVD R4, R8 \
	MOVI0(24) \
	MOVI0(25) \
	MOVI0(26) \
	MOVD R26, R9 \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R9) \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R9) \
	VST1.P [V24.S4, V25.S4, V26.S4], 48(R9) \
	VST1 [V24.S4, V25.S4, V26.S4], (R9)

// Q4KTOUT writes one activation's result for the row to (Rout) and
// advances Rout, as the end of Q4_KROWS does: hsum_float_8 of the lanes
// (V29, V30) plus ((m0+m2) + (m1+m3)) of the mins (V28).
#define Q4KTOUT(out) \
	VLD1.P 48(R9), [V28.S4, V29.S4, V30.S4] \
	HSUM8(29, 30, 31) \
	EXT16B(31, 28, 28, 8) \
	FADD2S(28, 28, 31) \
	FADDPS(28, 28) \
	FADDS F28, F29, F29 \
	FMOVS.P F29, 4(out)

// Q4KTCHUNK adds chunk c of the unpacked quants (low nibbles Vlp, Vlq,
// high ones Vhp, Vhq) with the activation's next 64 quants to the int32
// lanes V26, V27, as Q4KCHUNK does; sc, lo, hi name the scales.
#define Q4KTCHUNK(lp, lq, hp, hq, sc, lo, hi) \
	VLD1.P 32(R7), [V3.B16, V4.B16] \
	IDOT_SDOT(31, lp, 3, 0, 0) \
	IDOT_SDOT(9, lq, 4, 0, 0) \
	MLA4SE(26, 31, sc, lo) \
	MLA4SE(27, 9, sc, lo) \
	VLD1.P 32(R7), [V3.B16, V4.B16] \
	IDOT_SDOT(31, hp, 3, 0, 0) \
	IDOT_SDOT(9, hq, 4, 0, 0) \
	MLA4SE(26, 31, sc, hi) \
	MLA4SE(27, 9, sc, hi)

// Q4KTOK adds the activation block at R7 (advanced past it) to its
// accumulators at R9 (advanced past them): the mins into V28 with FMLS,
// the lanes into V29, V30 with FMLA, as Q4_KROWS does. V0 holds d, dmin;
// V5-V8 the scales and mins; the quants' low nibbles of chunk c are in
// V10+2c, V11+2c, the high ones in V18+2c, V19+2c.
#define Q4KTOK \
	FMOVS (R7), F1 \
	FMUL4SE(2, 0, 1, 0) \
	ADD $260, R7, R10 \
	VLD1 (R10), [V3.H8, V4.H8] \
	SADDLP4S(3, 3) \
	SADDLP4S(4, 4) \
	MUL4S(3, 3, 7) \
	MUL4S(4, 4, 8) \
	ADDP4S(3, 3, 4) \
	SCVTF4S(3, 3) \
	VLD1 (R9), [V28.S4, V29.S4, V30.S4] \
	FMLS4SE(28, 3, 2, 1) \
	ADD $4, R7 \
	MOVI0(26) \
	MOVI0(27) \
	Q4KTCHUNK(10, 11, 18, 19, 5, 0, 1) \
	Q4KTCHUNK(12, 13, 20, 21, 5, 2, 3) \
	Q4KTCHUNK(14, 15, 22, 23, 6, 0, 1) \
	Q4KTCHUNK(16, 17, 24, 25, 6, 2, 3) \
	ADD $32, R7 \
	SCVTF4S(26, 26) \
	SCVTF4S(27, 27) \
	FMLA4SE(29, 26, 2, 0) \
	FMLA4SE(30, 27, 2, 0) \
	VST1.P [V28.S4, V29.S4, V30.S4], 48(R9)

// func dotQ4_Kx4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32)
TEXT ·dotQ4_Kx4SDOT(SB), NOSPLIT, $0-64
	TILEPROLOGUE
	MOVD R15, R16
	MOVW $0x3f3f3f3f, R19
	MOVW $0x0f0f0f0f, R20
	MOVW $0x03030303, R21

q4krow:
	TILEROWSTART

q4kblock:
	FMOVS (R6), F0
	FCVTL4S(0, 0)
	MOVWU 4(R6), R10
	MOVWU 8(R6), R11
	MOVWU 12(R6), R12
	LSRW $4, R12, R13
	ANDW R20, R13, R13
	LSRW $6, R11, R14
	ANDW R21, R14, R14
	ORRW R14<<4, R13, R13
	ANDW R19, R11, R15
	ANDW R20, R12, R14
	LSRW $6, R10, R22
	ANDW R21, R22, R22
	ORRW R22<<4, R14, R14
	ANDW R19, R10, R10
	ORR R14<<32, R10, R10
	ORR R13<<32, R15, R15
	FMOVD R10, F3
	FMOVD R15, F4
	UXTL8H(3, 3)
	UXTL8H(4, 4)
	UXTL4S(5, 3)
	UXTL24S(6, 3)
	UXTL4S(7, 4)
	UXTL24S(8, 4)
	ADD $16, R6
	VLD1.P 64(R6), [V10.B16, V11.B16, V12.B16, V13.B16]
	VLD1.P 64(R6), [V14.B16, V15.B16, V16.B16, V17.B16]
	VMOVI $15, V1.B16
	USHR16B(18, 10, 4)
	USHR16B(19, 11, 4)
	USHR16B(20, 12, 4)
	USHR16B(21, 13, 4)
	USHR16B(22, 14, 4)
	USHR16B(23, 15, 4)
	USHR16B(24, 16, 4)
	USHR16B(25, 17, 4)
	AND16B(10, 10, 1)
	AND16B(11, 11, 1)
	AND16B(12, 12, 1)
	AND16B(13, 13, 1)
	AND16B(14, 14, 1)
	AND16B(15, 15, 1)
	AND16B(16, 16, 1)
	AND16B(17, 17, 1)
	MOVD R26, R9
	Q4KTOK
	Q4KTOK
	Q4KTOK
	Q4KTOK
	SUBS $1, R8
	BNE q4kblock

	MOVD R26, R9
	Q4KTOUT(R0)
	Q4KTOUT(R23)
	Q4KTOUT(R24)
	Q4KTOUT(R25)
	ADD R16, R3
	SUBS $1, R2
	BNE q4krow
	RET

// Q6TUNPACK makes group u of a half super-block, the 6-bit quants minus
// 32 as Q6GROUP does: lo writes the low 4 bits to Vu, hi the high 2 to
// V2 (then masked to bits 4-5 by V31); V1 holds 32 in every byte.
#define Q6TUNPACK(u, lo, hi) \
	lo \
	hi \
	AND16B(2, 2, 31) \
	ORR16B(u, u, 2) \
	SUB16B(u, u, 1)

// Q6THALF unpacks a half super-block (ql in V24-V27, qh in V28, V29) to
// the groups in Vu0..Vu0+7; V30 holds 0x0F in every byte.
#define Q6THALF(u0, u1, u2, u3, u4, u5, u6, u7) \
	Q6TUNPACK(u0, AND16B(u0, 24, 30), SHL16B(2, 28, 4)) \
	Q6TUNPACK(u1, AND16B(u1, 25, 30), SHL16B(2, 29, 4)) \
	Q6TUNPACK(u2, AND16B(u2, 26, 30), SHL16B(2, 28, 2)) \
	Q6TUNPACK(u3, AND16B(u3, 27, 30), SHL16B(2, 29, 2)) \
	Q6TUNPACK(u4, USHR16B(u4, 24, 4), MOV16B(2, 28)) \
	Q6TUNPACK(u5, USHR16B(u5, 25, 4), MOV16B(2, 29)) \
	Q6TUNPACK(u6, USHR16B(u6, 26, 4), USHR16B(2, 28, 2)) \
	Q6TUNPACK(u7, USHR16B(u7, 27, 4), USHR16B(2, 29, 2))

// Q6TPAIR adds groups Vu (even: lanes 0-3, V26) and Vu+1 (odd: lanes 4-7,
// V27) times the activation's next 32 quants, with scales sc[lo], sc[hi].
#define Q6TPAIR(u, v, sc, lo, hi) \
	VLD1.P 32(R7), [V2.B16, V3.B16] \
	IDOT_SDOT(28, u, 2, 0, 0) \
	IDOT_SDOT(29, v, 3, 0, 0) \
	MLA4SE(26, 28, sc, lo) \
	MLA4SE(27, 29, sc, hi)

// Q6KTOK adds the activation block at R7 (advanced past it) to its
// accumulators at R9 (V24, V25; advanced past them), as Q6_KROWS does:
// group j (in V4+j) with scale sc[j] (lane j%4 of V20+j/4).
#define Q6KTOK \
	FMOVS (R7), F1 \
	FMULS F0, F1, F1 \
	VLD1 (R9), [V24.S4, V25.S4] \
	MOVI0(26) \
	MOVI0(27) \
	ADD $4, R7 \
	Q6TPAIR(4, 5, 20, 0, 1) \
	Q6TPAIR(6, 7, 20, 2, 3) \
	Q6TPAIR(8, 9, 21, 0, 1) \
	Q6TPAIR(10, 11, 21, 2, 3) \
	Q6TPAIR(12, 13, 22, 0, 1) \
	Q6TPAIR(14, 15, 22, 2, 3) \
	Q6TPAIR(16, 17, 23, 0, 1) \
	Q6TPAIR(18, 19, 23, 2, 3) \
	ADD $32, R7 \
	SCVTF4S(26, 26) \
	SCVTF4S(27, 27) \
	FMLA4SE(24, 26, 1, 0) \
	FMLA4SE(25, 27, 1, 0) \
	VST1.P [V24.S4, V25.S4], 32(R9)

// Q6KTOUT writes one activation's result for the row to (Rout) and
// advances Rout: hsum_float_8 of V24, V25.
#define Q6KTOUT(out) \
	VLD1.P 32(R9), [V24.S4, V25.S4] \
	HSUM8(24, 25, 26) \
	FMOVS.P F24, 4(out)

// func dotQ6_Kx4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32)
//
// Per block the sixteen groups of 16 quants, unpacked, in V4-V19, the
// scales in V20-V23, d in V0; the activations' accumulators in scratch
// (32 bytes each).
TEXT ·dotQ6_Kx4SDOT(SB), NOSPLIT, $0-64
	TILEPROLOGUE
	MOVD R15, R16
	VMOVI $15, V30.B16
	VMOVI $48, V31.B16

q6krow:
	TILEROWSTART

q6kblock:
	ADD $192, R6, R10
	VLD1 (R10), [V24.B16]
	SXTL8H(26, 24)
	SXTL28H(27, 24)
	SXTL4S(20, 26)
	SXTL24S(21, 26)
	SXTL4S(22, 27)
	SXTL24S(23, 27)
	MOVHU 208(R6), R10
	FMOVS R10, F0
	FCVTHS F0, F0
	VMOVI $32, V1.B16
	VLD1.P 64(R6), [V24.B16, V25.B16, V26.B16, V27.B16]
	ADD $64, R6, R10
	VLD1 (R10), [V28.B16, V29.B16]
	Q6THALF(4, 5, 6, 7, 8, 9, 10, 11)
	VLD1.P 64(R6), [V24.B16, V25.B16, V26.B16, V27.B16]
	ADD $32, R6, R10
	VLD1 (R10), [V28.B16, V29.B16]
	Q6THALF(12, 13, 14, 15, 16, 17, 18, 19)
	ADD $82, R6
	MOVD R26, R9
	Q6KTOK
	Q6KTOK
	Q6KTOK
	Q6KTOK
	SUBS $1, R8
	BNE q6kblock

	MOVD R26, R9
	Q6KTOUT(R0)
	Q6KTOUT(R23)
	Q6KTOUT(R24)
	Q6KTOUT(R25)
	ADD R16, R3
	SUBS $1, R2
	BNE q6krow
	RET
