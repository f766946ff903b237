//go:build amd64 && !purego

#include "textflag.h"

// Q4_0x8 (Q4_0 repacked in groups of 8 rows, see q4_0x8.go) × Q8_0, in
// the arithmetic of ggml_gemv_q4_0_8x8_q8_0: per block the exact integer
// dot product isum of each row, then acc = fma(float(isum), dw·da, acc)
// with lane r of the accumulator holding row r.
//
// A block of a group is 144 bytes: the eight rows' fp16 scales, then four
// chunks of 32 bytes, chunk c holding nibble bytes 4c..4c+3 of rows 0..7.
// Its low nibbles are the quants 4c..4c+3 of each row and its high nibbles
// the quants 16+4c..19+4c, so VPMADDUBSW against the activation's quants
// 4c..4c+3 (resp. 16+4c..) broadcast to every lane gives each row's pair
// sums in its own two int16 lanes. The nibbles are unsigned (q+8); the
// bias 8·Σa is subtracted from the int32 sums. Adding the eight products'
// int16 pair sums before widening cannot overflow: each is at most
// 2·15·128 in magnitude, the total 30720.

// X8PROD sets lo and hi to the int16 pair products of chunk c of the
// block at woff(SI) (its low and high nibbles) with the activation quants
// 4c..4c+3 and 16+4c..19+4c at aoff(DI), broadcast.
#define X8PROD(c, woff, aoff, lo, hi) \
	VPBROADCASTD (aoff+4*c)(DI), Y7 \
	VPBROADCASTD (aoff+16+4*c)(DI), Y8 \
	VMOVDQU (woff+16+32*c)(SI), lo \
	VPSRLW $4, lo, hi \
	VPAND Y14, lo, lo \
	VPAND Y14, hi, hi \
	VPMADDUBSW Y7, lo, lo \
	VPMADDUBSW Y8, hi, hi

// X8BLOCK accumulates the group's block at woff(SI) into Y0, with the
// activation block prepared by prepQ4_0x8 at aoff(DI): 32 quants, da as
// float32, 8·Σa as int32. Chunks 0, 2 and 1, 3 sum in Y5 and Y6.
#define X8BLOCK(woff, aoff) \
	X8PROD(0, woff, aoff, Y1, Y2) \
	VPADDW Y1, Y2, Y5 \
	X8PROD(1, woff, aoff, Y3, Y4) \
	VPADDW Y3, Y4, Y6 \
	X8PROD(2, woff, aoff, Y1, Y2) \
	VPADDW Y1, Y5, Y5 \
	VPADDW Y2, Y5, Y5 \
	X8PROD(3, woff, aoff, Y3, Y4) \
	VPADDW Y3, Y6, Y6 \
	VPADDW Y4, Y6, Y6 \
	VPADDW Y6, Y5, Y5 \
	VPMADDWD Y15, Y5, Y5 \
	VPBROADCASTD (aoff+36)(DI), Y7 \
	VPSUBD Y7, Y5, Y5 \
	VCVTDQ2PS Y5, Y5 \
	VCVTPH2PS woff(SI), Y9 \
	VBROADCASTSS (aoff+32)(DI), Y8 \
	VMULPS Y8, Y9, Y9 \
	VFMADD231PS Y9, Y5, Y0

// func dotQ4_0x8AVX2(out *float32, groups int, w *byte, nb int, aux *byte)
//
// The groups are back to back, so SI walks the matrix as one linear
// stream; it prefetches about 8 KiB ahead (five lines per two blocks).
TEXT ·dotQ4_0x8AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ groups+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ aux+32(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask

group:
	VXORPS Y0, Y0, Y0
	MOVQ R11, DI
	MOVQ nb+24(FP), CX

block:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 8192(SI)
	PREFETCHT0 8256(SI)
	PREFETCHT0 8320(SI)
	PREFETCHT0 8384(SI)
	PREFETCHT0 8448(SI)
	X8BLOCK(0, 0)
	X8BLOCK(144, 40)
	ADDQ $288, SI
	ADDQ $80, DI
	SUBQ $2, CX
	JMP  block

single:
	TESTQ CX, CX
	JZ    store
	X8BLOCK(0, 0)
	ADDQ $144, SI

store:
	VMOVUPS Y0, (R8)
	ADDQ $32, R8
	DECQ R9
	JNZ  group
	VZEROUPPER
	RET

// X8TOK does activation t's part of one block of the tile kernel: its
// packed block (packQ4_0x8T4: 32 quants, da as float32, 8·Σa as int32) at
// off(DI), the rows' nibbles in Y8..Y15 (chunk c's low nibbles in
// Y(8+2c), high in Y(9+2c)), fp32(dw) of the rows in Y7.
#define X8TOK(off, acc) \
	VPBROADCASTD (off+0)(DI), Y4 \
	VPMADDUBSW Y4, Y8, Y4 \
	VPBROADCASTD (off+16)(DI), Y5 \
	VPMADDUBSW Y5, Y9, Y5 \
	VPBROADCASTD (off+4)(DI), Y6 \
	VPMADDUBSW Y6, Y10, Y6 \
	VPADDW Y5, Y4, Y4 \
	VPBROADCASTD (off+20)(DI), Y5 \
	VPMADDUBSW Y5, Y11, Y5 \
	VPADDW Y6, Y4, Y4 \
	VPBROADCASTD (off+8)(DI), Y6 \
	VPMADDUBSW Y6, Y12, Y6 \
	VPADDW Y5, Y4, Y4 \
	VPBROADCASTD (off+24)(DI), Y5 \
	VPMADDUBSW Y5, Y13, Y5 \
	VPADDW Y6, Y4, Y4 \
	VPBROADCASTD (off+12)(DI), Y6 \
	VPMADDUBSW Y6, Y14, Y6 \
	VPADDW Y5, Y4, Y4 \
	VPBROADCASTD (off+28)(DI), Y5 \
	VPMADDUBSW Y5, Y15, Y5 \
	VPADDW Y6, Y4, Y4 \
	VPADDW Y5, Y4, Y4 \
	VPMADDWD ·wordOnes(SB), Y4, Y4 \
	VPBROADCASTD (off+36)(DI), Y5 \
	VPSUBD Y5, Y4, Y4 \
	VCVTDQ2PS Y4, Y4 \
	VBROADCASTSS (off+32)(DI), Y5 \
	VMULPS Y7, Y5, Y5 \
	VFMADD231PS Y5, Y4, acc

// X8NIBS unpacks chunk c of the block at SI into lo and hi.
#define X8NIBS(c, lo, hi) \
	VMOVDQU (16+32*c)(SI), lo \
	VPSRLW $4, lo, hi \
	VPAND ·nibMask(SB), lo, lo \
	VPAND ·nibMask(SB), hi, hi

// func dotQ4_0x8T4AVX2(out *float32, ostride, groups int, w *byte, nb int, packed *byte)
//
// The tile kernel: four activations (packed by packQ4_0x8T4, block b of
// activation t at (4b+t)·40) against groups of 8 rows, each block's
// nibbles unpacked once for the four.
TEXT ·dotQ4_0x8T4AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), DX
	MOVQ groups+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

x4group:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R11, DI
	MOVQ R10, CX

x4block:
	VCVTPH2PS (SI), Y7
	X8NIBS(0, Y8, Y9)
	X8NIBS(1, Y10, Y11)
	X8NIBS(2, Y12, Y13)
	X8NIBS(3, Y14, Y15)
	X8TOK(0, Y0)
	X8TOK(40, Y1)
	X8TOK(80, Y2)
	X8TOK(120, Y3)
	ADDQ $144, SI
	ADDQ $160, DI
	DECQ CX
	JNZ  x4block

	VMOVUPS Y0, (R8)
	VMOVUPS Y1, (R8)(R12*1)
	VMOVUPS Y2, (R8)(R12*2)
	VMOVUPS Y3, (R8)(DX*1)
	ADDQ $32, R8
	DECQ R9
	JNZ  x4group
	VZEROUPPER
	RET
