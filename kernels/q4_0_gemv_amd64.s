//go:build amd64 && !purego

#include "textflag.h"

// Q4_0 rows in the order of ggml_gemv_q4_0_8x8_q8_0 (AVX2), which llama.cpp
// uses for Q4_0 matrices it repacks (a multiple of 8 rows): eight rows at
// once, lane r of one accumulator holding row r, and per block
//
//	acc = fma(float(isum), fp16(dw)·fp16(da), acc)
//
// where isum is the exact integer dot product of the block's quants. The
// weights stay in the file's layout: row r of a group starts rowBytes after
// row r-1, and each row is a run of 18-byte blocks (fp16 d, 16 bytes of
// nibbles). The activation's quants and the prepared data of prepQ8_0 (per
// block da×8 as float32, then 8·(a[2i]+a[2i+1]) as int16) are loaded once
// per block for all eight rows.
//
// The rows of a group are contiguous, so every row pointer of the group
// walks memory another row pointer of the same group reads at the same
// time; prefetching a fixed distance ahead within the row would mostly
// touch lines already loaded. Instead each row prefetches the same column
// of the next group's row (8 rows on), AX and R10 walking rows 8 and 12:
// a group later, which is ample distance ahead of DRAM latency.
//
// Registers: SI row 0 of the group at the current block, BX row 4, R13
// rowBytes, R14 3·rowBytes, DI activation quants, DX prepared activation
// (prepQ4_0: per 96-byte block da×8 as float32, int16 pair biases, then
// 8·Σa as eight int32), Y13 and Y12 the block's activation quants 0..15 and
// 16..31 in both halves, Y14 the nibble mask, Y15 int16 ones, Y0 the
// accumulator, whose lanes hold rows 0, 2, 4, 6, 1, 3, 5, 7 until the
// group is stored.

// PAIR sets y to the int16 sums of 4 products of rows a (lower half) and b
// (upper half): u[j]·a[j] + u[j+1]·a[j+1] + u[j+16]·a[j+16] +
// u[j+17]·a[j+17] for j = 0, 2, ..., 14, u the unsigned nibbles.
#define PAIR(a, b, y, x, h) \
	VMOVDQU a, x \
	VINSERTI128 $1, b, y, y \
	VPSRLW $4, y, h \
	VPAND Y14, y, y \
	VPAND Y14, h, h \
	VPMADDUBSW Y13, y, y \
	VPMADDUBSW Y12, h, h \
	VPADDW h, y, y

// BLOCK accumulates the block at weight offset woff, activation offset
// aoff and prepared offset poff of the eight rows into Y0. The rows go in
// pairs (0,1), (2,3), (4,5), (6,7), then are added pairwise with VPHADDW
// twice: the lower half of Y1 then holds two partial sums of rows 0, 2, 4,
// 6 each, the upper half those of rows 1, 3, 5, 7, each over 16 quants, at
// most 16·15·128 in magnitude, so no int16 overflows; VPMADDWD adds each
// row's two into int32, and minus the block's bias 8·Σa that is the exact
// isum. The scales dw are gathered in the same lane order and multiplied
// by da, then one FMA per block into the accumulator.
#define BLOCK(woff, aoff, poff) \
	VBROADCASTI128 aoff+2(DI), Y13 \
	VBROADCASTI128 aoff+18(DI), Y12 \
	PAIR(woff+2(SI), woff+2(SI)(R13*1), Y1, X1, Y2) \
	PAIR(woff+2(SI)(R13*2), woff+2(SI)(R14*1), Y3, X3, Y4) \
	PAIR(woff+2(BX), woff+2(BX)(R13*1), Y5, X5, Y6) \
	PAIR(woff+2(BX)(R13*2), woff+2(BX)(R14*1), Y7, X7, Y8) \
	VPHADDW Y3, Y1, Y1 \
	VPHADDW Y7, Y5, Y5 \
	VPHADDW Y5, Y1, Y1 \
	VPMADDWD Y15, Y1, Y1 \
	VPSUBD poff+64(DX), Y1, Y1 \
	VCVTDQ2PS Y1, Y1 \
	VPBROADCASTW woff(SI), X9 \
	VPINSRW $1, woff(SI)(R13*2), X9, X9 \
	VPINSRW $2, woff(BX), X9, X9 \
	VPINSRW $3, woff(BX)(R13*2), X9, X9 \
	VPINSRW $4, woff(SI)(R13*1), X9, X9 \
	VPINSRW $5, woff(SI)(R14*1), X9, X9 \
	VPINSRW $6, woff(BX)(R13*1), X9, X9 \
	VPINSRW $7, woff(BX)(R14*1), X9, X9 \
	VCVTPH2PS X9, Y9 \
	VMULPS poff(DX), Y9, Y9 \
	VFMADD231PS Y9, Y1, Y0

// gemvLanes puts the accumulator's lanes back in row order.
DATA gemvLanes<>+0(SB)/8, $0x0000000400000000
DATA gemvLanes<>+8(SB)/8, $0x0000000500000001
DATA gemvLanes<>+16(SB)/8, $0x0000000600000002
DATA gemvLanes<>+24(SB)/8, $0x0000000700000003
GLOBL gemvLanes<>(SB), RODATA|NOPTR, $32

// func dotQ4_0GemvAVX2(out *float32, groups int, w *byte, nb, rowBytes int, act, aux *byte)
TEXT ·dotQ4_0GemvAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ groups+8(FP), R9
	MOVQ w+16(FP), R15
	MOVQ rowBytes+32(FP), R13
	MOVQ act+40(FP), R11
	MOVQ aux+48(FP), R12
	LEAQ (R13)(R13*2), R14

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask

group:
	VXORPS Y0, Y0, Y0
	MOVQ R15, SI
	LEAQ (R15)(R13*4), BX
	LEAQ (R15)(R13*8), AX
	LEAQ (BX)(R13*8), R10
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ nb+24(FP), CX

block:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 (AX)
	PREFETCHT0 (AX)(R13*1)
	PREFETCHT0 (AX)(R13*2)
	PREFETCHT0 (AX)(R14*1)
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(R13*1)
	PREFETCHT0 (R10)(R13*2)
	PREFETCHT0 (R10)(R14*1)
	BLOCK(0, 0, 0)
	BLOCK(18, 34, 96)
	ADDQ $36, SI
	ADDQ $36, BX
	ADDQ $36, AX
	ADDQ $36, R10
	ADDQ $68, DI
	ADDQ $192, DX
	SUBQ $2, CX
	JMP  block

single:
	TESTQ CX, CX
	JZ    store
	BLOCK(0, 0, 0)

store:
	VMOVDQU gemvLanes<>(SB), Y1
	VPERMD Y0, Y1, Y0
	VMOVUPS Y0, (R8)
	ADDQ $32, R8
	LEAQ (R15)(R13*8), R15
	DECQ R9
	JNZ  group
	VZEROUPPER
	RET
