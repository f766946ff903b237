//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels for QSF's rotated table types (QSF_Q2R, QSF_Q3R, QSF_Q4R)
// against Q8_0 activations, in quant's lane order. Per 64-element block:
// the codes are looked up in the type's int8 table (VPSHUFB), given the
// signs of the activation quants (VPSIGNB) and multiplied with their
// absolute values (VPMADDUBSW, the prepared |q|), the int16 pair sums
// multiplied by their sub-blocks' multipliers 1+sc_k and added in pairs
// (VPMADDWD with a row of rotMul), which leaves, for half h, eight int32
// lanes Iₕ[l] (elements 32h+4l..+3). Then in float32, lane by lane,
// accₕ += (d·dₐₕ)·float(Iₕ), every product and sum rounded (no FMA), and
// at the end of the row hsum_float_8 of acc₀+acc₁. The
// integer sums are exact, so the result equals the reference bit for bit.
//
// Registers: SI weights, DI activation, R12 its prepRot form, R13 rotMul,
// R8 out, R9 rows left, R10 blocks per row, R11/R14 activation starts,
// Y0 and Y9 the row's lanes (acc₀, acc₁); Y14 the code mask, Y13 the table, Y8 all ones,
// Y12 the lane shifts of 2-bit codes, Y7/Y6 bit spreading (QSF_Q3R).

DATA rotTab4<>+0(SB)/8, $0xfaeee1d4c6b5a081
DATA rotTab4<>+8(SB)/8, $0x7f604b3a2c1f1206
DATA rotTab4<>+16(SB)/8, $0xfaeee1d4c6b5a081
DATA rotTab4<>+24(SB)/8, $0x7f604b3a2c1f1206
GLOBL rotTab4<>(SB), RODATA|NOPTR, $32

DATA rotTab3<>+0(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotTab3<>+8(SB)/8, $0x0000000000000000
DATA rotTab3<>+16(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotTab3<>+24(SB)/8, $0x0000000000000000
GLOBL rotTab3<>(SB), RODATA|NOPTR, $32

DATA rotTab2<>+0(SB)/8, $0x000000007f26da81
DATA rotTab2<>+8(SB)/8, $0x0000000000000000
DATA rotTab2<>+16(SB)/8, $0x000000007f26da81
DATA rotTab2<>+24(SB)/8, $0x0000000000000000
GLOBL rotTab2<>(SB), RODATA|NOPTR, $32

// rotShift2 shifts the high 128-bit lane's qwords by 2: with the codes
// broadcast to both lanes, bits 2k..2k+1 of byte j (k = 0 low, 1 high)
// end in the byte's low bits.
DATA rotShift2<>+0(SB)/8, $0
DATA rotShift2<>+8(SB)/8, $0
DATA rotShift2<>+16(SB)/8, $2
DATA rotShift2<>+24(SB)/8, $2
GLOBL rotShift2<>(SB), RODATA|NOPTR, $32

// rotBitShuf spreads byte k of a dword to bytes 8k..8k+7.
DATA rotBitShuf<>+0(SB)/8, $0x0000000000000000
DATA rotBitShuf<>+8(SB)/8, $0x0101010101010101
DATA rotBitShuf<>+16(SB)/8, $0x0202020202020202
DATA rotBitShuf<>+24(SB)/8, $0x0303030303030303
GLOBL rotBitShuf<>(SB), RODATA|NOPTR, $32

// rotBitMask has every bit but bit i set in byte i of each 8.
DATA rotBitMask<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA rotBitMask<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA rotBitMask<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA rotBitMask<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL rotBitMask<>(SB), RODATA|NOPTR, $32

#define ROT_SETUP(tab, mask) \
	MOVQ out+0(FP), R8 \
	MOVQ rows+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ nb+24(FP), R10 \
	MOVQ act+32(FP), R11 \
	MOVQ aux+40(FP), R14 \
	MOVQ mul+48(FP), R13 \
	MOVL mask, AX \
	VMOVD AX, X14 \
	VPBROADCASTD X14, Y14 \
	VMOVDQU tab, Y13 \
	VPCMPEQB Y8, Y8, Y8 \
	VMOVDQU rotShift2<>(SB), Y12 \
	VMOVDQU rotBitShuf<>(SB), Y7 \
	VMOVDQU rotBitMask<>(SB), Y6

// ROT_BLOCK finishes a block whose table values are in Y1 (elements
// 0..31) and Y2 (32..63): the products with the activation at DI (its
// prepared form at R12), the multipliers from 2(SI) and 3(SI), the
// float32 lanes into Y0.
#define ROT_BLOCK \
	VPSIGNB 2(DI), Y1, Y1 \
	VPSIGNB 36(DI), Y2, Y2 \
	VMOVDQU 0(R12), Y3 \
	VPMADDUBSW Y1, Y3, Y1 \
	VMOVDQU 32(R12), Y4 \
	VPMADDUBSW Y2, Y4, Y2 \
	MOVBLZX 2(SI), AX \
	SHLQ $5, AX \
	MOVBLZX 3(SI), BX \
	SHLQ $5, BX \
	VPMADDWD (R13)(AX*1), Y1, Y1 \
	VPMADDWD (R13)(BX*1), Y2, Y2 \
	VCVTDQ2PS Y1, Y1 \
	VCVTDQ2PS Y2, Y2 \
	VPBROADCASTW 0(SI), X5 \
	VCVTPH2PS X5, Y5 \
	VMULPS 64(R12), Y5, Y3 \
	VMULPS 96(R12), Y5, Y4 \
	VMULPS Y3, Y1, Y1 \
	VMULPS Y4, Y2, Y2 \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y2, Y9, Y9

// ROT_STORE stores hsum_float_8 of Y0+Y9 at (R8): lanes l and l+4, then
// (0+2) + (1+3).
#define ROT_STORE \
	VADDPS Y9, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, (R8)

// func dotQ4RAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ4RAVX2(SB), NOSPLIT, $0-56
	ROT_SETUP(rotTab4<>(SB), $0x0f0f0f0f)
row4:
	VXORPS Y0, Y0, Y0
	VXORPS Y9, Y9, Y9
	MOVQ R11, DI
	MOVQ R14, R12
	MOVQ R10, CX
blk4:
	VMOVDQU 4(SI), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPSHUFB Y1, Y13, Y1
	VPSHUFB Y2, Y13, Y2
	ROT_BLOCK
	ADDQ $36, SI
	ADDQ $68, DI
	ADDQ $128, R12
	DECQ CX
	JNZ  blk4
	ROT_STORE
	ADDQ $4, R8
	DECQ R9
	JNZ  row4
	VZEROUPPER
	RET

// func dotQ2RAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ2RAVX2(SB), NOSPLIT, $0-56
	ROT_SETUP(rotTab2<>(SB), $0x03030303)
row2:
	VXORPS Y0, Y0, Y0
	VXORPS Y9, Y9, Y9
	MOVQ R11, DI
	MOVQ R14, R12
	MOVQ R10, CX
blk2:
	VBROADCASTI128 4(SI), Y1
	VPSRLVQ Y12, Y1, Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPSHUFB Y1, Y13, Y1
	VPSHUFB Y2, Y13, Y2
	ROT_BLOCK
	ADDQ $20, SI
	ADDQ $68, DI
	ADDQ $128, R12
	DECQ CX
	JNZ  blk2
	ROT_STORE
	ADDQ $4, R8
	DECQ R9
	JNZ  row2
	VZEROUPPER
	RET

// func dotQ3RAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ3RAVX2(SB), NOSPLIT, $0-56
	ROT_SETUP(rotTab3<>(SB), $0x03030303)
row3:
	VXORPS Y0, Y0, Y0
	VXORPS Y9, Y9, Y9
	MOVQ R11, DI
	MOVQ R14, R12
	MOVQ R10, CX
blk3:
	VBROADCASTI128 4(SI), Y1
	VPSRLVQ Y12, Y1, Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	// the high bits: element j's is bit j%8 of qh[j/8] (qh at 20(SI))
	VPBROADCASTD 20(SI), Y3
	VPSHUFB Y7, Y3, Y3
	VPOR Y6, Y3, Y3
	VPCMPEQB Y8, Y3, Y3
	VPABSB Y3, Y3
	VPSLLW $2, Y3, Y3
	VPOR Y3, Y1, Y1
	VPBROADCASTD 24(SI), Y3
	VPSHUFB Y7, Y3, Y3
	VPOR Y6, Y3, Y3
	VPCMPEQB Y8, Y3, Y3
	VPABSB Y3, Y3
	VPSLLW $2, Y3, Y3
	VPOR Y3, Y2, Y2
	VPSHUFB Y1, Y13, Y1
	VPSHUFB Y2, Y13, Y2
	ROT_BLOCK
	ADDQ $28, SI
	ADDQ $68, DI
	ADDQ $128, R12
	DECQ CX
	JNZ  blk3
	ROT_STORE
	ADDQ $4, R8
	DECQ R9
	JNZ  row3
	VZEROUPPER
	RET
