//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 (F, BW, VBMI) kernels for QSF's rotated table types, one row at
// a time in the file's layout, in quant's order, a whole 64-element block
// per zmm. The codes of a block are spread to its 64 bytes (VPSRLVQ of the
// broadcast code bytes), masked and given the activation quants' signs
// (VPTERNLOGD with prepRot512's 0x10 where a quant is negative: bit 4 of
// the index), and looked up in a 32-entry table, T at 0..15 and −T at
// 16..31 (VPERMB), so that the bytes hold T·sign(q). VPMADDUBSW with |q|,
// then VPMADDWD with the sub-blocks' multipliers (two rows of rotMul),
// leave eight int32 parts of I₀ in lanes 0..7 and of I₁ in lanes 8..15;
// three shuffles and adds sum each half exactly, and in float32 d·dₐₕ (d
// times prepRot512's scale vector) multiplies them and acc (acc₀ in lanes
// 0..7, acc₁ in 8..15) adds them; at the end of the row acc₀+acc₁ is
// stored, as quant's reference computes it, bit for bit. The avx512 tier
// uses them for the rows the 8-row kernels leave.
//
// Registers: SI weights, R12 the prepared activation (192 bytes a block:
// |q|, signs, scales), R13 rotMul, R8 out, R9 rows left, R10 blocks per
// row, R11 prepared activation start, Z0 the row's lanes; Z14 the code
// mask, Z13 the table, Z12 the code shifts, Z11 bytes 4 (QSF_Q3R).

DATA rotPerm2<>+0(SB)/8, $0x000000007f26da81
DATA rotPerm2<>+8(SB)/8, $0x0000000000000000
DATA rotPerm2<>+16(SB)/8, $0x0000000081da267f
DATA rotPerm2<>+24(SB)/8, $0x0000000000000000
DATA rotPerm2<>+32(SB)/8, $0x0000000000000000
DATA rotPerm2<>+40(SB)/8, $0x0000000000000000
DATA rotPerm2<>+48(SB)/8, $0x0000000000000000
DATA rotPerm2<>+56(SB)/8, $0x0000000000000000
GLOBL rotPerm2<>(SB), RODATA|NOPTR, $64

DATA rotPerm3<>+0(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotPerm3<>+8(SB)/8, $0x0000000000000000
DATA rotPerm3<>+16(SB)/8, $0x81b1d3f20e2d4f7f
DATA rotPerm3<>+24(SB)/8, $0x0000000000000000
DATA rotPerm3<>+32(SB)/8, $0x0000000000000000
DATA rotPerm3<>+40(SB)/8, $0x0000000000000000
DATA rotPerm3<>+48(SB)/8, $0x0000000000000000
DATA rotPerm3<>+56(SB)/8, $0x0000000000000000
GLOBL rotPerm3<>(SB), RODATA|NOPTR, $64

DATA rotPerm4<>+0(SB)/8, $0xfaeee1d4c6b5a081
DATA rotPerm4<>+8(SB)/8, $0x7f604b3a2c1f1206
DATA rotPerm4<>+16(SB)/8, $0x06121f2c3a4b607f
DATA rotPerm4<>+24(SB)/8, $0x81a0b5c6d4e1eefa
DATA rotPerm4<>+32(SB)/8, $0x0000000000000000
DATA rotPerm4<>+40(SB)/8, $0x0000000000000000
DATA rotPerm4<>+48(SB)/8, $0x0000000000000000
DATA rotPerm4<>+56(SB)/8, $0x0000000000000000
GLOBL rotPerm4<>(SB), RODATA|NOPTR, $64

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

#define ROT512_SETUP(tab, shift, mask) \
	MOVQ out+0(FP), R8 \
	MOVQ rows+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ nb+24(FP), R10 \
	MOVQ aux+32(FP), R11 \
	MOVQ mul+40(FP), R13 \
	MOVL mask, AX \
	VPBROADCASTD AX, Z14 \
	MOVL $0x04040404, AX \
	VPBROADCASTD AX, Z11 \
	VMOVDQU64 tab, Z13 \
	VMOVDQU64 shift, Z12

// ROT512_BLOCK finishes a block whose spread, masked and signed codes are
// in Z1: the table, the products with |q| at R12, the multipliers from
// 2(SI) and 3(SI), which leave four elements' sum in each int32 lane,
// lanes 0..7 half 0; the sums of the halves (I₀ in lanes 0..7, I₁ in
// 8..15), converted, times d·dₐₕ, into Z0.
#define ROT512_BLOCK \
	VPERMB Z13, Z1, Z1 \
	VMOVDQU64 0(R12), Z2 \
	VPMADDUBSW Z1, Z2, Z1 \
	MOVBLZX 2(SI), AX \
	SHLQ $5, AX \
	MOVBLZX 3(SI), BX \
	SHLQ $5, BX \
	VMOVDQU (R13)(AX*1), Y3 \
	VINSERTI64X4 $1, (R13)(BX*1), Z3, Z3 \
	VPMADDWD Z3, Z1, Z1 \
	VPSHUFD $0x4E, Z1, Z2 \
	VPADDD Z2, Z1, Z1 \
	VPSHUFD $0xB1, Z1, Z2 \
	VPADDD Z2, Z1, Z1 \
	VSHUFI64X2 $0xB1, Z1, Z1, Z2 \
	VPADDD Z2, Z1, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VPBROADCASTW 0(SI), Y5 \
	VCVTPH2PS Y5, Z5 \
	VMULPS 128(R12), Z5, Z5 \
	VMULPS Z5, Z1, Z1 \
	VADDPS Z1, Z0, Z0

// ROT512_STORE stores acc₀+acc₁ (lanes 0 and 8 of Z0) at (R8).
#define ROT512_STORE \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, (R8)

// func dotQ2RAVX512(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ2RAVX512(SB), NOSPLIT, $0-48
	ROT512_SETUP(rotPerm2<>(SB), rotShift512x2<>(SB), $0x03030303)
row2:
	VPXORQ Z0, Z0, Z0
	MOVQ R11, R12
	MOVQ R10, CX
blk2:
	VBROADCASTI32X4 4(SI), Z1
	VPSRLVQ Z12, Z1, Z1
	VPTERNLOGD $0xEA, 64(R12), Z14, Z1
	ROT512_BLOCK
	ADDQ $20, SI
	ADDQ $192, R12
	DECQ CX
	JNZ  blk2
	ROT512_STORE
	ADDQ $4, R8
	DECQ R9
	JNZ  row2
	VZEROUPPER
	RET

// func dotQ3RAVX512(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ3RAVX512(SB), NOSPLIT, $0-48
	ROT512_SETUP(rotPerm3<>(SB), rotShift512x2<>(SB), $0x03030303)
row3:
	VPXORQ Z0, Z0, Z0
	MOVQ R11, R12
	MOVQ R10, CX
blk3:
	VBROADCASTI32X4 4(SI), Z1
	VPSRLVQ Z12, Z1, Z1
	VPTERNLOGD $0xEA, 64(R12), Z14, Z1
	// bit 2 of element j's code is bit j of the u64 qh at 20(SI)
	KMOVQ 20(SI), K1
	VPADDB Z11, Z1, K1, Z1
	ROT512_BLOCK
	ADDQ $28, SI
	ADDQ $192, R12
	DECQ CX
	JNZ  blk3
	ROT512_STORE
	ADDQ $4, R8
	DECQ R9
	JNZ  row3
	VZEROUPPER
	RET

// func dotQ4RAVX512(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ4RAVX512(SB), NOSPLIT, $0-48
	ROT512_SETUP(rotPerm4<>(SB), rotShift512x4<>(SB), $0x0f0f0f0f)
row4:
	VPXORQ Z0, Z0, Z0
	MOVQ R11, R12
	MOVQ R10, CX
blk4:
	VBROADCASTI64X4 4(SI), Z1
	VPSRLVQ Z12, Z1, Z1
	VPTERNLOGD $0xEA, 64(R12), Z14, Z1
	ROT512_BLOCK
	ADDQ $36, SI
	ADDQ $192, R12
	DECQ CX
	JNZ  blk4
	ROT512_STORE
	ADDQ $4, R8
	DECQ R9
	JNZ  row4
	VZEROUPPER
	RET
