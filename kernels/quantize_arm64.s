//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The activation quantizers of the neon tiers, bit for bit package quant's
// (ggml's AVX2 quantize_row_q8_0 and quantize_row_q8_1).
//
// Per block of 32: amax = max |x| (FMAX keeps a NaN, as Go's max does),
// d = amax/127, id = 127/amax (0 when amax is 0), q = round-to-even(x·id)
// converted to int32 and narrowed with signed saturation. AVX2's
// conversion turns NaN and values outside int32 into -2³¹ (so the quant
// saturates to -128), and that value goes into Q8_1's sum. Only a block
// whose amax or id is not finite (an infinity or NaN in it, or amax so
// small that 127/amax overflows) can have such products; it takes the
// slow path, which masks them.

// Q8BLOCK loads the block at R1 into V0-V7, computes amax (F16), d (F17)
// and id (F18), and branches to zero when amax is 0 and to slow when amax
// or id is not finite. F30 holds 127, F31 +Inf.
#define Q8BLOCK(zero, slow) \
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4] \
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4] \
	FABS4S(16, 0) \
	FABS4S(17, 1) \
	FABS4S(18, 2) \
	FABS4S(19, 3) \
	FABS4S(20, 4) \
	FABS4S(21, 5) \
	FABS4S(22, 6) \
	FABS4S(23, 7) \
	FMAX4S(16, 16, 17) \
	FMAX4S(18, 18, 19) \
	FMAX4S(20, 20, 21) \
	FMAX4S(22, 22, 23) \
	FMAX4S(16, 16, 18) \
	FMAX4S(20, 20, 22) \
	FMAX4S(16, 16, 20) \
	FMAXV4S(16, 16) \
	FDIVS F30, F16, F17 \
	FCMPS $(0.0), F16 \
	BEQ zero \
	FDIVS F16, F30, F18 \
	FCMPS F31, F16 \
	BPL slow \
	FCMPS F31, F18 \
	BPL slow

// Q8SCALE sets V0-V7 to x·id, Q8CVT converts them to int32 (rounding to
// even).
#define Q8SCALE \
	FMUL4SE(0, 0, 18, 0) \
	FMUL4SE(1, 1, 18, 0) \
	FMUL4SE(2, 2, 18, 0) \
	FMUL4SE(3, 3, 18, 0) \
	FMUL4SE(4, 4, 18, 0) \
	FMUL4SE(5, 5, 18, 0) \
	FMUL4SE(6, 6, 18, 0) \
	FMUL4SE(7, 7, 18, 0)

#define Q8CVT \
	FCVTNS4S(0, 0) \
	FCVTNS4S(1, 1) \
	FCVTNS4S(2, 2) \
	FCVTNS4S(3, 3) \
	FCVTNS4S(4, 4) \
	FCVTNS4S(5, 5) \
	FCVTNS4S(6, 6) \
	FCVTNS4S(7, 7)

// Q8MASK sets V8-V15 to the lanes of V0-V7 (before Q8CVT) that are in
// int32's range (|x·id| < 2³¹, false for NaN); Q8SAT then sets the other
// lanes to -2³¹, as CVTPS2DQ gives them.
#define Q8MASK \
	MOVW $0x4f000000, R3 \
	VDUP R3, V16.S4 \
	FACGT4S(8, 16, 0) \
	FACGT4S(9, 16, 1) \
	FACGT4S(10, 16, 2) \
	FACGT4S(11, 16, 3) \
	FACGT4S(12, 16, 4) \
	FACGT4S(13, 16, 5) \
	FACGT4S(14, 16, 6) \
	FACGT4S(15, 16, 7)

#define Q8SAT \
	MOVW $0x80000000, R3 \
	VDUP R3, V16.S4 \
	BIF16B(0, 16, 8) \
	BIF16B(1, 16, 9) \
	BIF16B(2, 16, 10) \
	BIF16B(3, 16, 11) \
	BIF16B(4, 16, 12) \
	BIF16B(5, 16, 13) \
	BIF16B(6, 16, 14) \
	BIF16B(7, 16, 15)

// Q8NARROW sets V28, V29 to the int32 quants V0-V7 narrowed to int8 with
// saturation.
#define Q8NARROW \
	SQXTN4H(24, 0) \
	SQXTN28H(24, 1) \
	SQXTN4H(25, 2) \
	SQXTN28H(25, 3) \
	SQXTN4H(26, 4) \
	SQXTN28H(26, 5) \
	SQXTN4H(27, 6) \
	SQXTN28H(27, 7) \
	SQXTN8B(28, 24) \
	SQXTN216B(28, 25) \
	SQXTN8B(29, 26) \
	SQXTN216B(29, 27)

#define Q8CONSTS \
	MOVW $0x42fe0000, R3 \
	FMOVS R3, F30 \
	MOVW $0x7f800000, R3 \
	FMOVS R3, F31

// func quantQ8_0NEON(dst *byte, src *float32, nb int)
TEXT ·quantQ8_0NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD nb+16(FP), R2
	Q8CONSTS

loop:
	Q8BLOCK(zero, slow)
	Q8SCALE
	Q8CVT

quants:
	Q8NARROW

store:
	FCVTSH F17, F17
	FMOVS  F17, R4
	MOVH   R4, (R0)
	ADD    $2, R0
	VST1.P [V28.B16, V29.B16], 32(R0)
	SUBS   $1, R2
	BNE    loop
	RET

zero:
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	B    store

slow:
	Q8SCALE
	Q8MASK
	Q8CVT
	Q8SAT
	B quants

// func quantQ8_1NEON(dst *byte, src *float32, nb int)
//
// As quantQ8_0NEON, with s = fp16(d·float32(Σq)) after d, Σq the int32
// quants' sum (wrapping).
TEXT ·quantQ8_1NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD nb+16(FP), R2
	Q8CONSTS

loop:
	Q8BLOCK(zero, slow)
	Q8SCALE
	Q8CVT

quants:
	ADD4S(8, 0, 1)
	ADD4S(9, 2, 3)
	ADD4S(10, 4, 5)
	ADD4S(11, 6, 7)
	ADD4S(8, 8, 9)
	ADD4S(10, 10, 11)
	ADD4S(8, 8, 10)
	ADDV4S(8, 8)
	FMOVS F8, R5
	Q8NARROW

store:
	SCVTFWS R5, F19
	FMULS   F19, F17, F19
	FCVTSH  F17, F17
	FMOVS   F17, R4
	MOVH    R4, (R0)
	FCVTSH  F19, F19
	FMOVS   F19, R4
	MOVH    R4, 2(R0)
	ADD     $4, R0
	VST1.P  [V28.B16, V29.B16], 32(R0)
	SUBS    $1, R2
	BNE     loop
	RET

zero:
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	MOVW ZR, R5
	B    store

slow:
	Q8SCALE
	Q8MASK
	Q8CVT
	Q8SAT
	B quants
