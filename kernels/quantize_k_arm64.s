//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// func quantQ8_KNEON(dst *byte, src *float32, nb int) (done int)
//
// The Q8_K activation quantizer of the neon tiers, bit for bit package
// quant's (quantize_row_q8_K_ref): per block of 256, amax = max |x| and mx
// the first element of that magnitude (its sign kept), iscale = −127/mx,
// q = round-to-even(iscale·x) (ggml's nearest_int; |iscale·x| ≤ 127
// rounded, so the int8 narrowing never saturates), d = 1/iscale, and the
// int16 sums of each 16 quants. It returns at the first block that needs
// the reference's care, one with amax zero, an infinity or NaN, or an
// iscale that overflows, and reports how many blocks it quantized.
//
// R0 dst block, R1 src block, R2 blocks left, R3 blocks done, R9 scan,
// R11 quants, R12 sums. F16 amax, F18 iscale, F28 1, F29 −127, F31 +Inf.
TEXT ·quantQ8_KNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD ZR, R3
	MOVW $0x3f800000, R4
	FMOVS R4, F28
	MOVW $0xc2fe0000, R4
	FMOVS R4, F29
	MOVW $0x7f800000, R4
	FMOVS R4, F31

block:
	// amax over the 256 elements, 64 at a time (FMAX keeps a NaN).
	MOVD R1, R9
	MOVD $4, R10
	MOVI0(16)

amax:
	VLD1.P 64(R9), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R9), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R9), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1.P 64(R9), [V12.S4, V13.S4, V14.S4, V15.S4]
	FABS4S(0, 0)
	FABS4S(1, 1)
	FABS4S(2, 2)
	FABS4S(3, 3)
	FABS4S(4, 4)
	FABS4S(5, 5)
	FABS4S(6, 6)
	FABS4S(7, 7)
	FABS4S(8, 8)
	FABS4S(9, 9)
	FABS4S(10, 10)
	FABS4S(11, 11)
	FABS4S(12, 12)
	FABS4S(13, 13)
	FABS4S(14, 14)
	FABS4S(15, 15)
	FMAX4S(0, 0, 1)
	FMAX4S(2, 2, 3)
	FMAX4S(4, 4, 5)
	FMAX4S(6, 6, 7)
	FMAX4S(8, 8, 9)
	FMAX4S(10, 10, 11)
	FMAX4S(12, 12, 13)
	FMAX4S(14, 14, 15)
	FMAX4S(0, 0, 2)
	FMAX4S(4, 4, 6)
	FMAX4S(8, 8, 10)
	FMAX4S(12, 12, 14)
	FMAX4S(0, 0, 4)
	FMAX4S(8, 8, 12)
	FMAX4S(16, 16, 0)
	FMAX4S(16, 16, 8)
	SUBS $1, R10
	BNE amax
	FMAXV4S(16, 16)
	FCMPS $(0.0), F16
	BEQ done
	FCMPS F31, F16
	BPL done

	// mx: the first element with |x| = amax, 16 at a time, then one by
	// one within those 16.
	DUP4S(17, 16, 0)
	MOVD R1, R9

find16:
	VLD1.P 64(R9), [V0.S4, V1.S4, V2.S4, V3.S4]
	FABS4S(0, 0)
	FABS4S(1, 1)
	FABS4S(2, 2)
	FABS4S(3, 3)
	FCMEQ4S(0, 0, 17)
	FCMEQ4S(1, 1, 17)
	FCMEQ4S(2, 2, 17)
	FCMEQ4S(3, 3, 17)
	ORR16B(0, 0, 1)
	ORR16B(2, 2, 3)
	ORR16B(0, 0, 2)
	UMAXV4S(0, 0)
	FMOVS F0, R10
	CBZW R10, find16
	SUB $64, R9

find1:
	FMOVS.P 4(R9), F0
	FABSS F0, F1
	FCMPS F16, F1
	BNE find1

	FDIVS F0, F29, F18
	FABSS F18, F1
	FCMPS F31, F1
	BPL done
	FDIVS F18, F28, F19

	// The quants and their sums, 16 at a time.
	FMOVS F19, (R0)
	ADD $4, R0, R11
	ADD $260, R0, R12
	MOVD $16, R10

quant16:
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMUL4SE(0, 0, 18, 0)
	FMUL4SE(1, 1, 18, 0)
	FMUL4SE(2, 2, 18, 0)
	FMUL4SE(3, 3, 18, 0)
	FCVTNS4S(0, 0)
	FCVTNS4S(1, 1)
	FCVTNS4S(2, 2)
	FCVTNS4S(3, 3)
	SQXTN4H(4, 0)
	SQXTN28H(4, 1)
	SQXTN4H(5, 2)
	SQXTN28H(5, 3)
	SQXTN8B(6, 4)
	SQXTN216B(6, 5)
	VST1.P [V6.B16], 16(R11)
	SADDLV16B(7, 6)
	FMOVS F7, R13
	MOVH.P R13, 2(R12)
	SUBS $1, R10
	BNE quant16

	ADD $292, R0
	ADD $1, R3
	SUBS $1, R2
	BNE block

done:
	MOVD R3, done+24(FP)
	RET
