//go:build amd64 && !purego

#include "textflag.h"

// The avx512 tier's four-activation tile for Q4_0 matrices in the file's
// layout computed in ggml_gemv_q4_0_8x8_q8_0's order (the q4_0Gemv key:
// what layer streaming multiplies, the matrices not being repacked). It
// is dotQ4_0x8T4AVX512's arithmetic, lanes 0..15 of a zmm the rows of
// two groups of 8, on blocks it first gathers from the 16 rows: each
// row's block (18 bytes: fp16 d, 16 bytes of nibbles) lies rowBytes after
// the previous row's.
//
// Per block: Z(24+k) ← [row k | row k+4 | row k+8 | row k+12]'s 16 bytes
// of nibbles (a 128-bit lane each), then a 4×4 transpose of dwords within
// the 128-bit lanes leaves dword c of row L in lane L (chunk c: the low
// nibbles are quants 4c..4c+3, the high ones 16+4c..19+4c, as in Q4_0x8's
// chunks), split into the nibble registers of the Q4_0x8 tiles. All blocks but
// the last load 32 bytes from each row (two rows a zmm) and take both the
// nibbles and the 16 scales out of them with word permutations
// (VPERMI2W/VPERMT2W, AVX-512 BW): a 16-element VPGATHERDD for the scales
// cost about 15% of the tile (Zen 5: n=4, 69-71 → 60-65 cpu-µs per
// activation). The last block, whose 32-byte loads could pass the end of
// the matrix, loads 16 bytes of nibbles a row and gathers the scales (one
// dword per row, d in its low half).
//
// The matrices come from the page cache (DRAM), and 16 row streams are
// more than the hardware prefetcher follows, so the tile prefetches the
// next pair of groups while it computes one: those 16 rows are one
// contiguous run of 16·rowBytes = nb·288 bytes, of which each block
// prefetches the next 288 bytes (five lines). One sequential stream a
// pair ahead took a 5632×2048 matrix from memory from 222-237 to 88-90
// cpu-µs per activation (prefetching each row 576 bytes ahead, 16
// prefetches a block, left most loads waiting on DRAM).

// The word permutations of the 32-byte loads (see g16block): g16q takes
// each row's 16 bytes of nibbles (words 1..8 of its half) into the
// 128-bit lanes of Z(24+k); g16d1, g16d2 and g16d3 take the 16 rows'
// scales (word 0 of each half) to words 0..15 of Z16, row L in word L.
DATA g16q<>+0(SB)/8, $0x0004000300020001
DATA g16q<>+8(SB)/8, $0x0008000700060005
DATA g16q<>+16(SB)/8, $0x0014001300120011
DATA g16q<>+24(SB)/8, $0x0018001700160015
DATA g16q<>+32(SB)/8, $0x0024002300220021
DATA g16q<>+40(SB)/8, $0x0028002700260025
DATA g16q<>+48(SB)/8, $0x0034003300320031
DATA g16q<>+56(SB)/8, $0x0038003700360035
GLOBL g16q<>(SB), RODATA|NOPTR, $64
DATA g16d1<>+0(SB)/8, $0x0030002000100000
DATA g16d1<>+8(SB)/8, $0x0000000000000000
DATA g16d1<>+16(SB)/8, $0x0000000000000000
DATA g16d1<>+24(SB)/8, $0x0000000000000000
DATA g16d1<>+32(SB)/8, $0x0000000000000000
DATA g16d1<>+40(SB)/8, $0x0000000000000000
DATA g16d1<>+48(SB)/8, $0x0000000000000000
DATA g16d1<>+56(SB)/8, $0x0000000000000000
GLOBL g16d1<>(SB), RODATA|NOPTR, $64
DATA g16d2<>+0(SB)/8, $0x0003000200010000
DATA g16d2<>+8(SB)/8, $0x0023002200210020
DATA g16d2<>+16(SB)/8, $0x0000000000000000
DATA g16d2<>+24(SB)/8, $0x0000000000000000
DATA g16d2<>+32(SB)/8, $0x0000000000000000
DATA g16d2<>+40(SB)/8, $0x0000000000000000
DATA g16d2<>+48(SB)/8, $0x0000000000000000
DATA g16d2<>+56(SB)/8, $0x0000000000000000
GLOBL g16d2<>(SB), RODATA|NOPTR, $64
DATA g16d3<>+0(SB)/8, $0x0024002000040000
DATA g16d3<>+8(SB)/8, $0x0025002100050001
DATA g16d3<>+16(SB)/8, $0x0026002200060002
DATA g16d3<>+24(SB)/8, $0x0027002300070003
DATA g16d3<>+32(SB)/8, $0x0000000000000000
DATA g16d3<>+40(SB)/8, $0x0000000000000000
DATA g16d3<>+48(SB)/8, $0x0000000000000000
DATA g16d3<>+56(SB)/8, $0x0000000000000000
GLOBL g16d3<>(SB), RODATA|NOPTR, $64

// G16NIBS splits chunk src into its low nibbles (lo) and high nibbles
// (hi), as the Q4_0x8 tiles do (x40LoadM in _gen/q40x8.go).
#define G16NIBS(src, lo, hi) \
	VPSRLW $4, src, hi \
	VPANDD Z31, src, lo \
	VPANDD Z31, hi, hi

// G16TOK accumulates into acc the block of one activation at aoff+base
// against the block G16LOAD loaded: the Q4_0x8 tiles' steps (x40TokN in
// _gen/q40x8.go) on an activation whose bias is 8·Σa, subtracted once the
// low and high nibbles' two chains of sums are added.
#define G16TOK(aoff, base, acc) \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPDPBUSD.BCST (aoff+0)base, Z16, Z5 \
	VPDPBUSD.BCST (aoff+16)base, Z17, Z6 \
	VPDPBUSD.BCST (aoff+4)base, Z18, Z5 \
	VPDPBUSD.BCST (aoff+20)base, Z19, Z6 \
	VPDPBUSD.BCST (aoff+8)base, Z20, Z5 \
	VPDPBUSD.BCST (aoff+24)base, Z21, Z6 \
	VPDPBUSD.BCST (aoff+12)base, Z22, Z5 \
	VPDPBUSD.BCST (aoff+28)base, Z23, Z6 \
	VPADDD Z6, Z5, Z5 \
	VPSUBD.BCST (aoff+36)base, Z5, Z5 \
	VCVTDQ2PS Z5, Z5 \
	VMULPS.BCST (aoff+32)base, Z4, Z6 \
	VFMADD231PS Z6, Z5, acc

// func dotQ4_0GemvT4AVX512(out *float32, ostride, pairs int, w *byte, nb, rowBytes int, packed *byte, index *int32)
//
// Pairs of groups of 8 rows (16 rows, rowBytes apart) against four
// activations packed by packQ4_0x8TZ (activation t's prepQ4_0x8 form at
// t·nb·40); index holds r·rowBytes for r in [0, 16) (the gather's).
//
// Registers: SI, AX, BX, R13 rows 0, 4, 8, 12 at the current block; R12
// rowBytes, DX 3·rowBytes; R10 the pair's first row; DI the activations'
// block, R14 their stride, R15 3·stride; CX blocks left; R8 out; R9
// pairs left; R11 the prefetch pointer; Z0..Z3 the accumulators of the
// four activations; Z30 the gather's offsets.
TEXT ·dotQ4_0GemvT4AVX512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R8
	MOVQ pairs+16(FP), R9
	MOVQ w+24(FP), R10
	MOVQ rowBytes+40(FP), R12
	LEAQ (R12)(R12*2), DX
	MOVQ nb+32(FP), R14
	IMULQ $40, R14 // activation stride
	LEAQ (R14)(R14*2), R15
	MOVQ index+56(FP), AX
	VMOVDQU32 (AX), Z30
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VMOVDQU32 g16q<>(SB), Z11
	VMOVDQU32 g16d1<>(SB), Z12
	VMOVDQU32 g16d2<>(SB), Z13
	VMOVDQU32 g16d3<>(SB), Z14

g16pair:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ R10, SI
	LEAQ (R10)(R12*4), AX
	LEAQ (AX)(R12*4), BX
	LEAQ (BX)(R12*4), R13
	MOVQ packed+48(FP), DI
	MOVQ nb+32(FP), CX
	MOVQ R12, R11
	SHLQ $4, R11
	ADDQ R10, R11 // the next pair's rows

g16block:
	PREFETCHT0 (R11)
	PREFETCHT0 64(R11)
	PREFETCHT0 128(R11)
	PREFETCHT0 192(R11)
	PREFETCHT0 256(R11)
	ADDQ $288, R11
	CMPQ CX, $1
	JEQ  g16last

	// All but the last block: 32 bytes from each row's block (its scale,
	// nibbles and the next block's first 14 bytes), two rows a register:
	// Z(16+2k) holds rows k and k+4, Z(17+2k) rows k+8 and k+12.
	VMOVDQU32 (SI), Y16
	VINSERTI64X4 $1, (AX), Z16, Z16
	VMOVDQU32 (BX), Y17
	VINSERTI64X4 $1, (R13), Z17, Z17
	VMOVDQU32 (SI)(R12*1), Y18
	VINSERTI64X4 $1, (AX)(R12*1), Z18, Z18
	VMOVDQU32 (BX)(R12*1), Y19
	VINSERTI64X4 $1, (R13)(R12*1), Z19, Z19
	VMOVDQU32 (SI)(R12*2), Y20
	VINSERTI64X4 $1, (AX)(R12*2), Z20, Z20
	VMOVDQU32 (BX)(R12*2), Y21
	VINSERTI64X4 $1, (R13)(R12*2), Z21, Z21
	VMOVDQU32 (SI)(DX*1), Y22
	VINSERTI64X4 $1, (AX)(DX*1), Z22, Z22
	VMOVDQU32 (BX)(DX*1), Y23
	VINSERTI64X4 $1, (R13)(DX*1), Z23, Z23

	// The nibbles: 128-bit lane i of Z(24+k) is row k+4i.
	VMOVDQA64 Z11, Z24
	VPERMI2W Z17, Z16, Z24
	VMOVDQA64 Z11, Z25
	VPERMI2W Z19, Z18, Z25
	VMOVDQA64 Z11, Z26
	VPERMI2W Z21, Z20, Z26
	VMOVDQA64 Z11, Z27
	VPERMI2W Z23, Z22, Z27

	// The scales: words 0..3 of Z(16+2k) rows k+4i, then rows 0..7 in
	// Z16, 8..15 in Z20, then all 16 in order in Z16.
	VPERMT2W Z17, Z12, Z16
	VPERMT2W Z19, Z12, Z18
	VPERMT2W Z21, Z12, Z20
	VPERMT2W Z23, Z12, Z22
	VPERMT2W Z18, Z13, Z16
	VPERMT2W Z22, Z13, Z20
	VPERMT2W Z20, Z14, Z16
	VCVTPH2PS Y16, Z4
	JMP  g16tr

g16last:
	// The last block (the 32-byte loads would pass the matrix's end).
	// The scales: one dword per row, d in its low half.
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z30*1), K1, Z4
	VPMOVDW Z4, Y4
	VCVTPH2PS Y4, Z4

	// The nibbles: 128-bit lane i of Z(24+k) is row k+4i.
	VMOVDQU32 2(SI), X24
	VINSERTI32X4 $1, 2(AX), Z24, Z24
	VINSERTI32X4 $2, 2(BX), Z24, Z24
	VINSERTI32X4 $3, 2(R13), Z24, Z24
	VMOVDQU32 2(SI)(R12*1), X25
	VINSERTI32X4 $1, 2(AX)(R12*1), Z25, Z25
	VINSERTI32X4 $2, 2(BX)(R12*1), Z25, Z25
	VINSERTI32X4 $3, 2(R13)(R12*1), Z25, Z25
	VMOVDQU32 2(SI)(R12*2), X26
	VINSERTI32X4 $1, 2(AX)(R12*2), Z26, Z26
	VINSERTI32X4 $2, 2(BX)(R12*2), Z26, Z26
	VINSERTI32X4 $3, 2(R13)(R12*2), Z26, Z26
	VMOVDQU32 2(SI)(DX*1), X27
	VINSERTI32X4 $1, 2(AX)(DX*1), Z27, Z27
	VINSERTI32X4 $2, 2(BX)(DX*1), Z27, Z27
	VINSERTI32X4 $3, 2(R13)(DX*1), Z27, Z27

g16tr:
	// Transpose: Z(7+c) gets dword c of every row, row L in lane L.
	VPUNPCKLDQ Z25, Z24, Z28 // rows k=0,1: dwords 0, 1
	VPUNPCKHDQ Z25, Z24, Z29 // rows k=0,1: dwords 2, 3
	VPUNPCKLDQ Z27, Z26, Z24 // rows k=2,3: dwords 0, 1
	VPUNPCKHDQ Z27, Z26, Z25 // rows k=2,3: dwords 2, 3
	VPUNPCKLQDQ Z24, Z28, Z7
	VPUNPCKHQDQ Z24, Z28, Z8
	VPUNPCKLQDQ Z25, Z29, Z9
	VPUNPCKHQDQ Z25, Z29, Z10
	G16NIBS(Z7, Z16, Z17)
	G16NIBS(Z8, Z18, Z19)
	G16NIBS(Z9, Z20, Z21)
	G16NIBS(Z10, Z22, Z23)

	G16TOK(0, (DI), Z0)
	G16TOK(0, (DI)(R14*1), Z1)
	G16TOK(0, (DI)(R14*2), Z2)
	G16TOK(0, (DI)(R15*1), Z3)
	ADDQ $18, SI
	ADDQ $18, AX
	ADDQ $18, BX
	ADDQ $18, R13
	ADDQ $40, DI
	DECQ CX
	JNZ  g16block

	MOVQ ostride+8(FP), R11
	SHLQ $2, R11
	VMOVUPS Z0, (R8)
	VMOVUPS Z1, (R8)(R11*1)
	VMOVUPS Z2, (R8)(R11*2)
	LEAQ (R11)(R11*2), R11
	VMOVUPS Z3, (R8)(R11*1)
	ADDQ $64, R8
	LEAQ (R10)(R12*8), R10
	LEAQ (R10)(R12*8), R10 // 16 rows on
	DECQ R9
	JNZ  g16pair
	VZEROUPPER
	RET
