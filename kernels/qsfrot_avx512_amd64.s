//go:build amd64 && !purego

#include "textflag.h"
#include "rotx8_amd64.h"

// AVX-512 (F, BW, VBMI, VNNI) kernels for QSF's rotated table types, one
// row at a time in the file's layout, in quant's order, a whole 64-element
// block per zmm; the avx512 tier runs them for the rows its 8-row kernels
// leave (a matrix's last rows%8). The codes of a block are spread to its
// 64 bytes (VPSRLVQ of the broadcast code bytes) and masked, QSF_Q3R's
// high bits added (a byte mask from qh), and looked up in the table of
// T+128 (VPERMB). VPDPBUSD with the activation's quants, in an int32
// register that starts with prepRotX8's −128·Σq of sub-block k in lane 4k
// (zero elsewhere), leaves in lane l the exact sum of ΣT·q over elements
// 4l..4l+3 (lanes 4k..4k+3 summing to sub-block k's); times the lanes'
// multipliers 1+sc_(l/4) (VPMULLD) and summed per half by three shuffles
// and adds, it is I₀ in lanes 0..7 and I₁ in lanes 8..15. In float32,
// d·dₐₕ (d times prepRotX8's (dₐ₀, dₐ₁) pair, so that the even lanes have
// dₐ₀ and the odd dₐ₁) multiplies it and acc adds it: acc₀ in lane 0,
// acc₁ in lane 9. At the end of the row acc₀+acc₁ is stored, as quant's
// reference computes it, bit for bit.
//
// Registers: SI weights, DI the Q8_0 activation (68 bytes a block), R12
// its prepRotX8 form (88 bytes a block), R8 out, R9 rows left, R10 blocks
// per row, R11 and R13 the activation's and its form's start, Z0 the
// row's accumulators; Z14 the code mask, Z13 the table, Z12 the code
// shifts, Z11 bytes 4 (QSF_Q3R), Z15 the multipliers 1..16, Z10 the
// multipliers' shifts, Z9 the bias lanes' index, K2 lanes 0, 4, 8, 12.

// rotShift512x2 shifts the qwords of 128-bit lane k by 2k (2-bit codes
// broadcast to the four lanes).
DATA rotShift512x2<>+0(SB)/8, $0
DATA rotShift512x2<>+8(SB)/8, $0
DATA rotShift512x2<>+16(SB)/8, $2
DATA rotShift512x2<>+24(SB)/8, $2
DATA rotShift512x2<>+32(SB)/8, $4
DATA rotShift512x2<>+40(SB)/8, $4
DATA rotShift512x2<>+48(SB)/8, $6
DATA rotShift512x2<>+56(SB)/8, $6
GLOBL rotShift512x2<>(SB), RODATA|NOPTR, $64

// rotShift512x4 shifts the qwords of the high 256 bits by 4 (4-bit codes
// broadcast to both halves).
DATA rotShift512x4<>+0(SB)/8, $0
DATA rotShift512x4<>+8(SB)/8, $0
DATA rotShift512x4<>+16(SB)/8, $0
DATA rotShift512x4<>+24(SB)/8, $0
DATA rotShift512x4<>+32(SB)/8, $4
DATA rotShift512x4<>+40(SB)/8, $4
DATA rotShift512x4<>+48(SB)/8, $4
DATA rotShift512x4<>+56(SB)/8, $4
GLOBL rotShift512x4<>(SB), RODATA|NOPTR, $64

// rotMulShift shifts lane l of the broadcast multipliers (sc) right by
// 4·(l/4): sub-block l/4's multiplier in the low bits.
DATA rotMulShift<>+0(SB)/8, $0x0000000000000000
DATA rotMulShift<>+8(SB)/8, $0x0000000000000000
DATA rotMulShift<>+16(SB)/8, $0x0000000400000004
DATA rotMulShift<>+24(SB)/8, $0x0000000400000004
DATA rotMulShift<>+32(SB)/8, $0x0000000800000008
DATA rotMulShift<>+40(SB)/8, $0x0000000800000008
DATA rotMulShift<>+48(SB)/8, $0x0000000c0000000c
DATA rotMulShift<>+56(SB)/8, $0x0000000c0000000c
GLOBL rotMulShift<>(SB), RODATA|NOPTR, $64

// rotBiasIdx puts prepRotX8's −128·Σq of sub-blocks 0, 1, 2, 3 (dwords 0,
// 2, 1, 3 of its 16 bytes) in lanes 0, 4, 8, 12.
DATA rotBiasIdx<>+0(SB)/8, $0x0000000000000000
DATA rotBiasIdx<>+8(SB)/8, $0x0000000000000000
DATA rotBiasIdx<>+16(SB)/8, $0x0000000000000002
DATA rotBiasIdx<>+24(SB)/8, $0x0000000000000000
DATA rotBiasIdx<>+32(SB)/8, $0x0000000000000001
DATA rotBiasIdx<>+40(SB)/8, $0x0000000000000000
DATA rotBiasIdx<>+48(SB)/8, $0x0000000000000003
DATA rotBiasIdx<>+56(SB)/8, $0x0000000000000000
GLOBL rotBiasIdx<>(SB), RODATA|NOPTR, $64

#define ROT1_SETUP(tab, shift, mask) \
	MOVQ out+0(FP), R8 \
	MOVQ rows+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ nb+24(FP), R10 \
	MOVQ act+32(FP), R11 \
	MOVQ aux+40(FP), R13 \
	MOVL mask, AX \
	VPBROADCASTD AX, Z14 \
	MOVL $0x04040404, AX \
	VPBROADCASTD AX, Z11 \
	MOVW $0x1111, AX \
	KMOVW AX, K2 \
	VMOVDQU64 tab, Z13 \
	VMOVDQU64 shift, Z12 \
	VMOVDQU64 rotX8Mul<>(SB), Z15 \
	VMOVDQU64 rotMulShift<>(SB), Z10 \
	VMOVDQU64 rotBiasIdx<>(SB), Z9

#define ROT1_ROW \
	VPXORQ Z0, Z0, Z0 \
	MOVQ R11, DI \
	MOVQ R13, R12 \
	MOVQ R10, CX

// ROT1_BLOCK finishes a block whose spread and masked codes are in Z1.
#define ROT1_BLOCK \
	VPERMB Z13, Z1, Z1 \
	VMOVDQU 2(DI), Y2 \
	VINSERTI64X4 $1, 36(DI), Z2, Z2 \
	VMOVDQU 64(R12), X3 \
	VPERMD.Z Z3, Z9, K2, Z3 \
	VPDPBUSD Z2, Z1, Z3 \
	VPBROADCASTW 2(SI), Z5 \
	VPSRLVD Z10, Z5, Z5 \
	VPERMD Z15, Z5, Z5 \
	VPMULLD Z5, Z3, Z3 \
	VPSHUFD $0x4E, Z3, Z2 \
	VPADDD Z2, Z3, Z3 \
	VPSHUFD $0xB1, Z3, Z2 \
	VPADDD Z2, Z3, Z3 \
	VSHUFI64X2 $0xB1, Z3, Z3, Z2 \
	VPADDD Z2, Z3, Z3 \
	VCVTDQ2PS Z3, Z3 \
	VPBROADCASTW 0(SI), Y5 \
	VCVTPH2PS Y5, Z5 \
	VBROADCASTSD 80(R12), Z6 \
	VMULPS Z6, Z5, Z5 \
	VMULPS Z5, Z3, Z3 \
	VADDPS Z3, Z0, Z0

// ROT1_NEXT moves to the next block of bb bytes and ends the row: stores
// acc₀+acc₁ (lanes 0 and 9 of Z0) at (R8).
#define ROT1_NEXT(bb, label) \
	ADDQ $bb, SI \
	ADDQ $68, DI \
	ADDQ $88, R12 \
	DECQ CX \
	JNZ label \
	VEXTRACTF32X4 $2, Z0, X1 \
	VMOVSHDUP X1, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, (R8) \
	ADDQ $4, R8

// func dotQ2RAVX512(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ2RAVX512(SB), NOSPLIT, $0-48
	ROT1_SETUP(rotX8Tab2<>(SB), rotShift512x2<>(SB), $0x03030303)
row2:
	ROT1_ROW
blk2:
	VBROADCASTI32X4 4(SI), Z1
	VPSRLVQ Z12, Z1, Z1
	VPANDD Z14, Z1, Z1
	ROT1_BLOCK
	ROT1_NEXT(20, blk2)
	DECQ R9
	JNZ  row2
	VZEROUPPER
	RET

// func dotQ3RAVX512(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ3RAVX512(SB), NOSPLIT, $0-48
	ROT1_SETUP(rotX8Tab3<>(SB), rotShift512x2<>(SB), $0x03030303)
row3:
	ROT1_ROW
blk3:
	VBROADCASTI32X4 4(SI), Z1
	VPSRLVQ Z12, Z1, Z1
	VPANDD Z14, Z1, Z1
	// bit 2 of element j's code is bit j of the u64 qh at 20(SI)
	KMOVQ 20(SI), K1
	VPADDB Z11, Z1, K1, Z1
	ROT1_BLOCK
	ROT1_NEXT(28, blk3)
	DECQ R9
	JNZ  row3
	VZEROUPPER
	RET

// func dotQ4RAVX512(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ4RAVX512(SB), NOSPLIT, $0-48
	ROT1_SETUP(rotX8Tab4<>(SB), rotShift512x4<>(SB), $0x0f0f0f0f)
row4:
	ROT1_ROW
blk4:
	VBROADCASTI64X4 4(SI), Z1
	VPSRLVQ Z12, Z1, Z1
	VPANDD Z14, Z1, Z1
	ROT1_BLOCK
	ROT1_NEXT(36, blk4)
	DECQ R9
	JNZ  row4
	VZEROUPPER
	RET
