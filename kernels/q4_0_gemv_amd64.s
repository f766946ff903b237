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
// Registers: SI row 0 of the group at the current block, BX row 4, R13
// rowBytes, R14 3·rowBytes, DI activation quants, DX prepared activation,
// Y13 the block's activation quants, Y12 its bias, Y14 the nibble mask, Y15
// int16 ones, Y0 the accumulator.

// ROW sets y to the eight int32 partial sums of the block at addr (the
// first quant byte) times the activation: unsigned nibbles by VPMADDUBSW,
// minus the bias 8·Σa, then pairs of int16 added into int32.
#define ROW(addr, y, x, y2, x2) \
	VMOVDQU addr, x \
	VPSRLW $4, x, x2 \
	VINSERTI128 $1, x2, y, y \
	VPAND Y14, y, y \
	VPMADDUBSW Y13, y, y \
	VPSUBW Y12, y, y \
	VPMADDWD Y15, y, y

// func dotQ4_0GemvAVX2(out *float32, groups int, w *byte, nb, rowBytes int, act, aux *byte)
TEXT ·dotQ4_0GemvAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ groups+8(FP), R9
	MOVQ w+16(FP), R15
	MOVQ nb+24(FP), R10
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
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

block:
	VMOVDQU 2(DI), Y13
	VMOVDQU 32(DX), Y12

	// Rows 0 to 3, reduced pairwise with VPHADDD: lanes 0..3 of Y1 hold
	// the sums of quants 0..15 of rows 0..3, lanes 4..7 those of 16..31.
	ROW(2(SI), Y1, X1, Y5, X5)
	ROW(2(SI)(R13*1), Y2, X2, Y6, X6)
	VPHADDD Y2, Y1, Y1
	ROW(2(SI)(R13*2), Y3, X3, Y7, X7)
	ROW(2(SI)(R14*1), Y4, X4, Y8, X8)
	VPHADDD Y4, Y3, Y3
	VPHADDD Y3, Y1, Y1

	// Rows 4 to 7 likewise into Y2.
	ROW(2(BX), Y2, X2, Y5, X5)
	ROW(2(BX)(R13*1), Y3, X3, Y6, X6)
	VPHADDD Y3, Y2, Y2
	ROW(2(BX)(R13*2), Y4, X4, Y7, X7)
	ROW(2(BX)(R14*1), Y9, X9, Y8, X8)
	VPHADDD Y9, Y4, Y4
	VPHADDD Y4, Y2, Y2

	// isum of row r in lane r: low halves of Y1 and high halves of Y2
	// plus the other halves.
	VPERM2I128 $0x21, Y2, Y1, Y3
	VPBLENDD $0xf0, Y2, Y1, Y1
	VPADDD Y3, Y1, Y1
	VCVTDQ2PS Y1, Y1

	// The eight rows' scales dw, times da.
	VPBROADCASTW (SI), X9
	VPINSRW $1, (SI)(R13*1), X9, X9
	VPINSRW $2, (SI)(R13*2), X9, X9
	VPINSRW $3, (SI)(R14*1), X9, X9
	VPINSRW $4, (BX), X9, X9
	VPINSRW $5, (BX)(R13*1), X9, X9
	VPINSRW $6, (BX)(R13*2), X9, X9
	VPINSRW $7, (BX)(R14*1), X9, X9
	VCVTPH2PS X9, Y9
	VMULPS (DX), Y9, Y9

	VFMADD231PS Y9, Y1, Y0

	ADDQ $18, SI
	ADDQ $18, BX
	ADDQ $34, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  block

	VMOVUPS Y0, (R8)
	ADDQ $32, R8
	LEAQ (R15)(R13*8), R15
	DECQ R9
	JNZ  group
	VZEROUPPER
	RET
