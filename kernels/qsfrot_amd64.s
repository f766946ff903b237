//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels for QSF's rotated table types (QSF_Q2R, QSF_Q3R, QSF_Q4R)
// against Q8_0 activations. Per 64-element block: the codes are looked up
// in the type's int8 table (VPSHUFB), multiplied with the two activation
// blocks' quants (VPMADDUBSW on |t| and the sign-adjusted quants, then
// VPMADDWD into int32 lanes that each hold four elements of one 16-element
// sub-block), scaled by the sub-blocks' multipliers (VPMULLD) and summed
// to the two halves' integer sums; then, as quant's reference, in float32
// sum += (d·dₐ₀)·S₀ and sum += (d·dₐ₁)·S₁, in that order. The integer sums
// are exact, so the result equals the reference bit for bit.
//
// Registers: SI weights, DI activation, R8 out, R9 rows left, R10 blocks
// per row, R11 activation start, X0 the row's sum; Y15 int16 ones, Y14 the
// code mask, Y13 the table, Y12/Y11 the multiplier shifts of the two
// halves, Y10 dword 15, Y9 dword 1, Y8 all ones, Y7/Y6 bit spreading
// (QSF_Q3R).

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

DATA rotShift0<>+0(SB)/8, $0x0000000000000000
DATA rotShift0<>+8(SB)/8, $0x0000000000000000
DATA rotShift0<>+16(SB)/8, $0x0000000400000004
DATA rotShift0<>+24(SB)/8, $0x0000000400000004
GLOBL rotShift0<>(SB), RODATA|NOPTR, $32

DATA rotShift1<>+0(SB)/8, $0x0000000800000008
DATA rotShift1<>+8(SB)/8, $0x0000000800000008
DATA rotShift1<>+16(SB)/8, $0x0000000c0000000c
DATA rotShift1<>+24(SB)/8, $0x0000000c0000000c
GLOBL rotShift1<>(SB), RODATA|NOPTR, $32

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
	MOVL $0x00010001, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL mask, AX \
	VMOVD AX, X14 \
	VPBROADCASTD X14, Y14 \
	VMOVDQU tab, Y13 \
	VMOVDQU rotShift0<>(SB), Y12 \
	VMOVDQU rotShift1<>(SB), Y11 \
	MOVL $15, AX \
	VMOVD AX, X10 \
	VPBROADCASTD X10, Y10 \
	MOVL $1, AX \
	VMOVD AX, X9 \
	VPBROADCASTD X9, Y9 \
	VPCMPEQB Y8, Y8, Y8 \
	VMOVDQU rotBitShuf<>(SB), Y7 \
	VMOVDQU rotBitMask<>(SB), Y6

// ROT_BLOCK finishes a block whose table values are in Y1 (elements
// 0..31) and Y2 (32..63): the products with the activation at DI, the
// multipliers from the u16 at 2(SI), the float32 accumulation into X0.
#define ROT_BLOCK \
	VMOVDQU 2(DI), Y3 \
	VPSIGNB Y1, Y3, Y3 \
	VPABSB Y1, Y1 \
	VPMADDUBSW Y3, Y1, Y1 \
	VPMADDWD Y15, Y1, Y1 \
	VMOVDQU 36(DI), Y4 \
	VPSIGNB Y2, Y4, Y4 \
	VPABSB Y2, Y2 \
	VPMADDUBSW Y4, Y2, Y2 \
	VPMADDWD Y15, Y2, Y2 \
	MOVWLZX 2(SI), AX \
	VMOVD AX, X5 \
	VPBROADCASTD X5, Y5 \
	VPSRLVD Y12, Y5, Y3 \
	VPAND Y10, Y3, Y3 \
	VPADDD Y9, Y3, Y3 \
	VPSRLVD Y11, Y5, Y4 \
	VPAND Y10, Y4, Y4 \
	VPADDD Y9, Y4, Y4 \
	VPMULLD Y3, Y1, Y1 \
	VPMULLD Y4, Y2, Y2 \
	VPHADDD Y2, Y1, Y1 \
	VEXTRACTI128 $1, Y1, X2 \
	VPADDD X2, X1, X1 \
	VPHADDD X1, X1, X1 \
	VCVTDQ2PS X1, X1 \
	VPBROADCASTW 0(SI), X2 \
	VCVTPH2PS X2, X2 \
	MOVWLZX 0(DI), AX \
	VMOVD AX, X3 \
	MOVWLZX 34(DI), AX \
	VPINSRW $1, AX, X3, X3 \
	VCVTPH2PS X3, X3 \
	VMULPS X3, X2, X2 \
	VMULPS X1, X2, X2 \
	VADDSS X2, X0, X0 \
	VMOVSHDUP X2, X2 \
	VADDSS X2, X0, X0

// func dotQ4RAVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ4RAVX2(SB), NOSPLIT, $0-40
	ROT_SETUP(rotTab4<>(SB), $0x0f0f0f0f)
row4:
	VXORPS X0, X0, X0
	MOVQ R11, DI
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
	DECQ CX
	JNZ  blk4
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row4
	VZEROUPPER
	RET

// func dotQ2RAVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ2RAVX2(SB), NOSPLIT, $0-40
	ROT_SETUP(rotTab2<>(SB), $0x03030303)
row2:
	VXORPS X0, X0, X0
	MOVQ R11, DI
	MOVQ R10, CX
blk2:
	VMOVDQU 4(SI), X1
	VPSRLW $2, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPSHUFB Y1, Y13, Y1
	VPSHUFB Y2, Y13, Y2
	ROT_BLOCK
	ADDQ $20, SI
	ADDQ $68, DI
	DECQ CX
	JNZ  blk2
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row2
	VZEROUPPER
	RET

// func dotQ3RAVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ3RAVX2(SB), NOSPLIT, $0-40
	ROT_SETUP(rotTab3<>(SB), $0x03030303)
row3:
	VXORPS X0, X0, X0
	MOVQ R11, DI
	MOVQ R10, CX
blk3:
	VMOVDQU 4(SI), X1
	VPSRLW $2, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
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
	DECQ CX
	JNZ  blk3
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row3
	VZEROUPPER
	RET
