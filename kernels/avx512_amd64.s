//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX-512 VNNI kernels of the avx512 tier for the repacked Q8_0x4
// matrices (q8_0x4.go; the Q4_0x8 ones are generated:
// q40x8_avx512_amd64.s) and float tiles. Each computes what its
// AVX2 twin (q4_0x8_amd64.s, q8_0_amd64.s, matmul_amd64.s) computes, bit
// for bit:
//
//   - the integer dot product of a block, formed with VPDPBUSD (unsigned
//     bytes × signed bytes, four products summed into an int32 lane,
//     without saturation). Integer sums are exact in any order; the AVX2
//     kernels' VPMADDUBSW never saturates on these operands (see below),
//     so the sums are the same numbers;
//   - the float work unchanged: per block acc = fma(float(isum), dw·da,
//     acc) in the same lanes, a zmm holding two of the AVX2 kernel's ymm
//     accumulators (two groups of 8 rows, or two rows), and the same
//     hsum_float_8 at the end.

// ZPROLOGUE loads the arguments of the float block kernels (below), as
// the AVX2 ones do: R8 out, R14 the output stride in bytes, R9 blocks, SI w, R12
// rowBytes, R11 act, R13 actStride, DX 3·actStride, DI scratch.
#define ZPROLOGUE \
	MOVQ out+0(FP), R8 \
	MOVQ ostride+8(FP), R14 \
	SHLQ $2, R14 \
	MOVQ blocks+16(FP), R9 \
	MOVQ w+24(FP), SI \
	MOVQ rowBytes+40(FP), R12 \
	MOVQ act+48(FP), R11 \
	MOVQ actStride+56(FP), R13 \
	LEAQ (R13)(R13*2), DX \
	MOVQ scratch+64(FP), DI

// Q8_0x4: a zmm holds two rows of a group of four (rows 0, 1 in Z16 for
// the decode kernel, rows 2, 3 in Z17), whose quants are 64 contiguous
// bytes of the block, against the activation's 32 quants in both halves.
// The product is the AVX2 kernels' sign trick, |w| (unsigned) × a·sign(w)
// (signed, wrapping: a = -128 with w < 0 stays -128): VPABSB, then a
// negated under the mask of w's sign bits. VPMADDUBSW cannot saturate
// there (|w| ≤ 128 and the signed byte ≥ -128, so a pair is at least
// -32768 and at most 2·128·127), so VPDPBUSD's sums are the AVX2 ones.
// q8Lanes01 and q8Lanes23 spread the rows' four scales over the halves.

DATA q8Lanes01<>+0(SB)/8, $0
DATA q8Lanes01<>+8(SB)/8, $0
DATA q8Lanes01<>+16(SB)/8, $0
DATA q8Lanes01<>+24(SB)/8, $0
DATA q8Lanes01<>+32(SB)/8, $0x0000000100000001
DATA q8Lanes01<>+40(SB)/8, $0x0000000100000001
DATA q8Lanes01<>+48(SB)/8, $0x0000000100000001
DATA q8Lanes01<>+56(SB)/8, $0x0000000100000001
GLOBL q8Lanes01<>(SB), RODATA|NOPTR, $64

DATA q8Lanes23<>+0(SB)/8, $0x0000000200000002
DATA q8Lanes23<>+8(SB)/8, $0x0000000200000002
DATA q8Lanes23<>+16(SB)/8, $0x0000000200000002
DATA q8Lanes23<>+24(SB)/8, $0x0000000200000002
DATA q8Lanes23<>+32(SB)/8, $0x0000000300000003
DATA q8Lanes23<>+40(SB)/8, $0x0000000300000003
DATA q8Lanes23<>+48(SB)/8, $0x0000000300000003
DATA q8Lanes23<>+56(SB)/8, $0x0000000300000003
GLOBL q8Lanes23<>(SB), RODATA|NOPTR, $64

// Q8CONST loads the lane spreads into Z28, Z29 and zero into Z30.
#define Q8CONST \
	VMOVDQU64 q8Lanes01<>(SB), Z28 \
	VMOVDQU64 q8Lanes23<>(SB), Z29 \
	VPXORD Z30, Z30, Z30

// Q8PAIR loads the quants of a pair of rows at off(SI): |w| into w, the
// mask of w < 0 into k.
#define Q8PAIR(off, w, k) \
	VMOVDQU64 off(SI), w \
	VPMOVB2M w, k \
	VPABSB w, w

// Q8DOT sets Z7 to float(isum) of the pair of rows in w (mask k) against
// the activation quants in Z12 (both halves).
#define Q8DOT(w, k) \
	VMOVDQA64 Z12, Z6 \
	VPSUBB Z12, Z30, k, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPDPBUSD Z6, w, Z7 \
	VCVTDQ2PS Z7, Z7

// Q8SCALES sets X13 to the four fp32 scales of the block at woff(SI).
#define Q8SCALES(woff) \
	VMOVQ woff(SI), X13 \
	VCVTPH2PS X13, X13

// Q8SPREAD spreads X13's four floats over the halves of Z14 (rows 0, 1)
// and Z15 (rows 2, 3).
#define Q8SPREAD \
	VPERMPS Z13, Z28, Z14 \
	VPERMPS Z13, Z29, Z15

// Q8REDUCE stores the row sums (hsum_float_8 of each half) of the pairs
// in a and b (rows 0, 1 and 2, 3) at dst.
#define Q8REDUCE(a, b, ya, yb, dst) \
	VEXTRACTF64X4 $1, a, Y1 \
	VMOVAPS ya, Y0 \
	VEXTRACTF64X4 $1, b, Y3 \
	VMOVAPS yb, Y2 \
	HSUM4 \
	VMOVUPS X5, dst

// R8BLOCK accumulates the block at woff(SI), with its activation
// prepared at aoff(DI) (q4_0x8TokBlock bytes), into Z16 and Z17.
#define R8BLOCK(woff, aoff) \
	VBROADCASTI32X8 aoff(DI), Z12 \
	Q8SCALES(woff) \
	VBROADCASTSS (aoff+32)(DI), X14 \
	VMULPS X14, X13, X13 \
	Q8SPREAD \
	Q8PAIR(woff+8, Z4, K1) \
	Q8PAIR(woff+72, Z5, K2) \
	Q8DOT(Z4, K1) \
	VFMADD231PS Z14, Z7, Z16 \
	Q8DOT(Z5, K2) \
	VFMADD231PS Z15, Z7, Z17

// func dotQ8_0x4RowsAVX512(out *float32, groups int, w *byte, nb int, aux *byte, ahead int)
//
// Decode: groups of four rows, back to back, read as one stream and
// prefetched ahead bytes ahead, against one activation prepared by
// prepQ4_0x8.
TEXT ·dotQ8_0x4RowsAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ groups+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ aux+32(FP), R11
	MOVQ ahead+40(FP), R12
	Q8CONST

r8group:
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	MOVQ R11, DI
	MOVQ nb+24(FP), CX

r8pair:
	CMPQ CX, $2
	JLT  r8single
	PREFETCHT0 0(SI)(R12*1)
	PREFETCHT0 64(SI)(R12*1)
	PREFETCHT0 128(SI)(R12*1)
	PREFETCHT0 192(SI)(R12*1)
	PREFETCHT0 256(SI)(R12*1)
	R8BLOCK(0, 0)
	R8BLOCK(136, 40)
	ADDQ $272, SI
	ADDQ $80, DI
	SUBQ $2, CX
	JMP  r8pair

r8single:
	TESTQ CX, CX
	JZ    r8reduce
	R8BLOCK(0, 0)
	ADDQ $136, SI

r8reduce:
	Q8REDUCE(Z16, Z17, Y16, Y17, (R8))
	ADDQ $16, R8
	DECQ R9
	JNZ  r8group
	VZEROUPPER
	RET

// Q8TOKZ accumulates an activation's part of the block (its prepQ4_0x8
// form at base: 32 quants, da as float32) into acc0 (rows 0, 1) and acc1
// (rows 2, 3), the rows' quants in Z4 (K1) and Z5 (K2) and their scales
// in Z14 and Z15.
#define Q8TOKZ(base, acc0, acc1) \
	VBROADCASTI32X8 (0)base, Z12 \
	Q8DOT(Z4, K1) \
	VMULPS.BCST (32)base, Z14, Z8 \
	VFMADD231PS Z8, Z7, acc0 \
	Q8DOT(Z5, K2) \
	VMULPS.BCST (32)base, Z15, Z9 \
	VFMADD231PS Z9, Z7, acc1

// func dotQ8_0x4T4AVX512(out *float32, ostride, groups int, w *byte, nb int, packed *byte)
//
// The tile: four activations packed by packQ4_0x8TZ (activation t's
// prepQ4_0x8 form at t·nb·40) against groups of four rows; activation t's rows (0, 1) and (2, 3) accumulate in Z(16+2t) and
// Z(17+2t).
TEXT ·dotQ8_0x4T4AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), DX
	MOVQ groups+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11
	MOVQ R10, R14
	IMULQ $40, R14 // activation stride
	LEAQ (R14)(R14*2), R15
	Q8CONST

r8tgroup:
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ R11, DI
	MOVQ R10, CX

r8tblock:
	Q8SCALES(0)
	Q8SPREAD
	Q8PAIR(8, Z4, K1)
	Q8PAIR(72, Z5, K2)
	Q8TOKZ((DI), Z16, Z17)
	Q8TOKZ((DI)(R14*1), Z18, Z19)
	Q8TOKZ((DI)(R14*2), Z20, Z21)
	Q8TOKZ((DI)(R15*1), Z22, Z23)
	ADDQ $136, SI
	ADDQ $40, DI
	DECQ CX
	JNZ  r8tblock

	Q8REDUCE(Z16, Z17, Y16, Y17, (R8))
	Q8REDUCE(Z18, Z19, Y18, Y19, (R8)(R12*1))
	Q8REDUCE(Z20, Z21, Y20, Y21, (R8)(R12*2))
	Q8REDUCE(Z22, Z23, Y22, Y23, (R8)(DX*1))
	ADDQ $16, R8
	DECQ R9
	JNZ  r8tgroup
	VZEROUPPER
	RET

// F32 and F16 tiles in blocks of three or two rows: the sums of
// dotF32R3T4AVX2 and its kin (matmul_amd64.s), bit for bit. ggml's four
// 8-lane accumulators of a dot cover the floats 32i+8j..32i+8j+7 of chunk
// i; accumulators 0, 1 are the 16 floats at 32i and 2, 3 those at 32i+16,
// so a zmm holds two of them and two passes (over bytes 0..63, then
// 64..127 of each 128-byte chunk of float32) do the four passes of the
// AVX2 kernels with the same FMAs, lane for lane. The scratch keeps the
// AVX2 layout (pass j's slot s at 32s + j·P): a zmm's halves are slot s of
// passes 2p and 2p+1, so the reduction is the AVX2 one (F32R3FINISH).

// ZLOAD (resume) and ZSAVE load and store slot s of accumulator z (y its
// low half) for the pair of passes at (DI), P bytes apart.
#define ZLOAD(s, P, y, z) \
	VMOVUPS (32*s)(DI), y \
	VINSERTF64X4 $1, (P+32*s)(DI), z, z

#define ZSAVE(s, P, y, z) \
	VMOVUPS y, (32*s)(DI) \
	VEXTRACTF64X4 $1, z, (P+32*s)(DI)

#define ZLOAD8(P) \
	ZLOAD(0, P, Y0, Z0) \
	ZLOAD(1, P, Y1, Z1) \
	ZLOAD(2, P, Y2, Z2) \
	ZLOAD(3, P, Y3, Z3) \
	ZLOAD(4, P, Y4, Z4) \
	ZLOAD(5, P, Y5, Z5) \
	ZLOAD(6, P, Y6, Z6) \
	ZLOAD(7, P, Y7, Z7)

#define ZSAVE8(P) \
	ZSAVE(0, P, Y0, Z0) \
	ZSAVE(1, P, Y1, Z1) \
	ZSAVE(2, P, Y2, Z2) \
	ZSAVE(3, P, Y3, Z3) \
	ZSAVE(4, P, Y4, Z4) \
	ZSAVE(5, P, Y5, Z5) \
	ZSAVE(6, P, Y6, Z6) \
	ZSAVE(7, P, Y7, Z7)

#define ZLOAD12(P) \
	ZLOAD8(P) \
	ZLOAD(8, P, Y8, Z8) \
	ZLOAD(9, P, Y9, Z9) \
	ZLOAD(10, P, Y10, Z10) \
	ZLOAD(11, P, Y11, Z11)

#define ZSAVE12(P) \
	ZSAVE8(P) \
	ZSAVE(8, P, Y8, Z8) \
	ZSAVE(9, P, Y9, Z9) \
	ZSAVE(10, P, Y10, Z10) \
	ZSAVE(11, P, Y11, Z11)

#define ZZERO8 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7

#define ZZERO12 \
	ZZERO8 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11

// Z3FMA multiplies the three rows' 16 floats (Z12..Z14) by an
// activation's at src into a, b, c; Z2FMA the two rows' (Z12, Z13).
#define Z3FMA(src, a, b, c) \
	VMOVUPS src, Z15 \
	VFMADD231PS Z15, Z12, a \
	VFMADD231PS Z15, Z13, b \
	VFMADD231PS Z15, Z14, c

#define Z2FMA(src, a, b) \
	VMOVUPS src, Z15 \
	VFMADD231PS Z15, Z12, a \
	VFMADD231PS Z15, Z13, b

// func dotF32R3T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R3T4AVX2 in two zmm passes. Pass 0 prefetches the second line of
// each 128 bytes of the rows, which pass 1 reads; pass 1 the first line
// of the next block's rows.
TEXT ·dotF32R3T4AVX512(SB), NOSPLIT, $0-88
	ZPROLOGUE

z3block:
	XORQ R10, R10

z3pass:
	TESTQ $1, flags+80(FP)
	JNZ   z3resume
	ZZERO12
	JMP   z3start

z3resume:
	ZLOAD12(384)

z3start:
	LEAQ 64(SI), BX
	CMPQ R10, $64
	JLT  z3pf
	LEAQ (SI)(R12*2), BX
	ADDQ R12, BX

z3pf:
	LEAQ (SI)(R10*1), AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

z3chunk:
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R12*1)
	PREFETCHT0 (BX)(R12*2)
	VMOVUPS (AX), Z12
	VMOVUPS (AX)(R12*1), Z13
	VMOVUPS (AX)(R12*2), Z14
	Z3FMA((R15), Z0, Z1, Z2)
	Z3FMA((R15)(R13*1), Z3, Z4, Z5)
	Z3FMA((R15)(R13*2), Z6, Z7, Z8)
	Z3FMA((R15)(DX*1), Z9, Z10, Z11)
	ADDQ $128, AX
	ADDQ $128, R15
	ADDQ $128, BX
	DECQ CX
	JNZ  z3chunk

	ZSAVE12(384)
	ADDQ $768, DI
	ADDQ $64, R10
	CMPQ R10, $128
	JNE  z3pass

	SUBQ  $1536, DI
	TESTQ $2, flags+80(FP)
	JZ    z3next
	F32R3FINISH

z3next:
	ADDQ sstride+72(FP), DI
	ADDQ $12, R8
	LEAQ (SI)(R12*2), SI
	ADDQ R12, SI
	DECQ R9
	JNZ  z3block
	VZEROUPPER
	RET

// func dotF32R2T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R2T4AVX2 in two zmm passes.
TEXT ·dotF32R2T4AVX512(SB), NOSPLIT, $0-88
	ZPROLOGUE

z2block:
	XORQ R10, R10

z2pass:
	TESTQ $1, flags+80(FP)
	JNZ   z2resume
	ZZERO8
	JMP   z2start

z2resume:
	ZLOAD8(256)

z2start:
	LEAQ 64(SI), BX
	CMPQ R10, $64
	JLT  z2pf
	LEAQ (SI)(R12*2), BX

z2pf:
	LEAQ (SI)(R10*1), AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

z2chunk:
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R12*1)
	VMOVUPS (AX), Z12
	VMOVUPS (AX)(R12*1), Z13
	Z2FMA((R15), Z0, Z1)
	Z2FMA((R15)(R13*1), Z2, Z3)
	Z2FMA((R15)(R13*2), Z4, Z5)
	Z2FMA((R15)(DX*1), Z6, Z7)
	ADDQ $128, AX
	ADDQ $128, R15
	ADDQ $128, BX
	DECQ CX
	JNZ  z2chunk

	ZSAVE8(256)
	ADDQ $512, DI
	ADDQ $64, R10
	CMPQ R10, $128
	JNE  z2pass

	SUBQ  $1024, DI
	TESTQ $2, flags+80(FP)
	JZ    z2next
	F32R2FINISH

z2next:
	ADDQ sstride+72(FP), DI
	ADDQ $8, R8
	LEAQ (SI)(R12*2), SI
	DECQ R9
	JNZ  z2block
	VZEROUPPER
	RET

// func dotF16R3T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R3T4AVX512 on F16 rows, widened as they are loaded (pass j reads
// 32 bytes at 32j of each 64-byte chunk): dotF16R3T4AVX2's sums. Both
// passes prefetch the next block's three rows.
TEXT ·dotF16R3T4AVX512(SB), NOSPLIT, $0-88
	ZPROLOGUE

h3zblock:
	XORQ R10, R10

h3zpass:
	TESTQ $1, flags+80(FP)
	JNZ   h3zresume
	ZZERO12
	JMP   h3zstart

h3zresume:
	ZLOAD12(384)

h3zstart:
	LEAQ (SI)(R12*2), BX
	ADDQ R12, BX
	MOVQ R10, AX
	SHRQ $1, AX
	ADDQ SI, AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

h3zchunk:
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R12*1)
	PREFETCHT0 (BX)(R12*2)
	VCVTPH2PS (AX), Z12
	VCVTPH2PS (AX)(R12*1), Z13
	VCVTPH2PS (AX)(R12*2), Z14
	Z3FMA((R15), Z0, Z1, Z2)
	Z3FMA((R15)(R13*1), Z3, Z4, Z5)
	Z3FMA((R15)(R13*2), Z6, Z7, Z8)
	Z3FMA((R15)(DX*1), Z9, Z10, Z11)
	ADDQ $64, AX
	ADDQ $128, R15
	ADDQ $64, BX
	DECQ CX
	JNZ  h3zchunk

	ZSAVE12(384)
	ADDQ $768, DI
	ADDQ $64, R10
	CMPQ R10, $128
	JNE  h3zpass

	SUBQ  $1536, DI
	TESTQ $2, flags+80(FP)
	JZ    h3znext
	F32R3FINISH

h3znext:
	ADDQ sstride+72(FP), DI
	ADDQ $12, R8
	LEAQ (SI)(R12*2), SI
	ADDQ R12, SI
	DECQ R9
	JNZ  h3zblock
	VZEROUPPER
	RET

// func dotF16R2T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)
//
// dotF32R2T4AVX512 on F16 rows: dotF16R2T4AVX2's sums.
TEXT ·dotF16R2T4AVX512(SB), NOSPLIT, $0-88
	ZPROLOGUE

h2zblock:
	XORQ R10, R10

h2zpass:
	TESTQ $1, flags+80(FP)
	JNZ   h2zresume
	ZZERO8
	JMP   h2zstart

h2zresume:
	ZLOAD8(256)

h2zstart:
	LEAQ (SI)(R12*2), BX
	MOVQ R10, AX
	SHRQ $1, AX
	ADDQ SI, AX
	LEAQ (R11)(R10*1), R15
	MOVQ chunks+32(FP), CX

h2zchunk:
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R12*1)
	VCVTPH2PS (AX), Z12
	VCVTPH2PS (AX)(R12*1), Z13
	Z2FMA((R15), Z0, Z1)
	Z2FMA((R15)(R13*1), Z2, Z3)
	Z2FMA((R15)(R13*2), Z4, Z5)
	Z2FMA((R15)(DX*1), Z6, Z7)
	ADDQ $64, AX
	ADDQ $128, R15
	ADDQ $64, BX
	DECQ CX
	JNZ  h2zchunk

	ZSAVE8(256)
	ADDQ $512, DI
	ADDQ $64, R10
	CMPQ R10, $128
	JNE  h2zpass

	SUBQ  $1024, DI
	TESTQ $2, flags+80(FP)
	JZ    h2znext
	F32R2FINISH

h2znext:
	ADDQ sstride+72(FP), DI
	ADDQ $8, R8
	LEAQ (SI)(R12*2), SI
	DECQ R9
	JNZ  h2zblock
	VZEROUPPER
	RET

// Q4_K × Q8_K tile: dotQ4_KT4AVX2's arithmetic with two activations per
// register (activations 2p and 2p+1 of pair p): the integer sums in a
// zmm (lanes 0..7 and 8..15), with the row's nibbles and scales in both
// halves, lane for lane the AVX2 kernel's VPMADDUBSW and VPMADDWD; the
// float accumulator of the sums in a zmm (Z0 pair 0, Z1 pair 1), and that
// of the mins' products in a ymm (lanes 0..3 and 4..7; Y2, Y3) instead of
// memory, each lane doing the AVX2 kernel's FMA; K4ZSTORE reduces them as
// K4STORE does. The activations come packed by packQ8_KT4Z: per block,
// sub-block s of pair p's quants at 512p+64s (32 of each activation), the
// pair's da as [da0 ×8, da1 ×8] at 1024+64p and [da0 ×4, da1 ×4] at
// 1152+32p, its bsums 0..7 as [act0, act1] at 1216+64p and 8..15 32 bytes
// on.

// K4TOKZ adds the pair at poff(DI)'s part of sub-blocks 2j, 2j+1 into
// iacc: the nibbles in Z9 (low), Z10 (high), the scales in Z11, Z12.
#define K4TOKZ(j, poff, iacc) \
	VPMADDUBSW (poff+128*j)(DI), Z9, Z13 \
	VPMADDUBSW (poff+128*j+64)(DI), Z10, Z14 \
	VPMADDWD Z11, Z13, Z13 \
	VPMADDWD Z12, Z14, Z14 \
	VPADDD Z13, iacc, iacc \
	VPADDD Z14, iacc, iacc

#define K4QUADZ(j, clo, chi) \
	VBROADCASTI32X8 (16+32*j)(SI), Z9 \
	VPSRLW $4, Z9, Z10 \
	VPANDD Z15, Z9, Z9 \
	VPANDD Z15, Z10, Z10 \
	VPSHUFB clo, Z8, Z11 \
	VPSHUFB chi, Z8, Z12 \
	K4TOKZ(j, 0, Z4) \
	K4TOKZ(j, 512, Z5)

// K4ZEND finishes pair p's block: the sums in iacc, fp32(d) in every
// lane of Z6, fp32(dmin) in Y7, the mins as int16 in both halves of Y8.
#define K4ZEND(p, iacc, acc, macc) \
	VCVTDQ2PS iacc, iacc \
	VMULPS (1024+64*p)(DI), Z6, Z12 \
	VFMADD231PS Z12, iacc, acc \
	VMOVDQU (1216+64*p)(DI), Y13 \
	VPHADDW (1248+64*p)(DI), Y13, Y13 \
	VPMADDWD Y13, Y8, Y13 \
	VCVTDQ2PS Y13, Y13 \
	VMULPS (1152+32*p)(DI), Y7, Y12 \
	VFMADD231PS Y12, Y13, macc

// K4ZSTORE stores an activation's dot at dst: its sums' accumulator in
// yacc (xacc), its mins' in xm, reduced as K4STORE reduces them.
#define K4ZSTORE(yacc, xacc, xm, dst) \
	VEXTRACTF128 $1, yacc, X9 \
	VADDPS X9, xacc, xacc \
	VMOVHLPS xacc, X9, X9 \
	VADDPS X9, xacc, xacc \
	VMOVSHDUP xacc, X9 \
	VADDSS X9, xacc, xacc \
	VMOVHLPS xm, X10, X10 \
	VADDPS X10, xm, xm \
	VMOVSHDUP xm, X10 \
	VADDSS X10, xm, xm \
	VSUBSS xm, xacc, xacc \
	VMOVSS xacc, dst

// func dotQ4_KT4AVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
TEXT ·dotQ4_KT4AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	LEAQ (R14)(R14*2), R15
	MOVQ rows+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15 // low nibble mask
	VBROADCASTI32X8 ·k4ScaleShuf+0(SB), Z16
	VBROADCASTI32X8 ·k4ScaleShuf+32(SB), Z17
	VBROADCASTI32X8 ·k4ScaleShuf+64(SB), Z18
	VBROADCASTI32X8 ·k4ScaleShuf+96(SB), Z19
	VBROADCASTI32X8 ·k4ScaleShuf+128(SB), Z20
	VBROADCASTI32X8 ·k4ScaleShuf+160(SB), Z21
	VBROADCASTI32X8 ·k4ScaleShuf+192(SB), Z22
	VBROADCASTI32X8 ·k4ScaleShuf+224(SB), Z23

k4zrow:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ R11, DI
	MOVQ R10, CX

k4zblock:
	// Scales in AX (low 4 bytes) and DX, mins in BX and R12, as in
	// dotQ4_KAVX2.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL BX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12
	ANDL $0x3f3f3f3f, BX
	ANDL $0x0f0f0f0f, DX
	MOVL AX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, DX
	ANDL $0x3f3f3f3f, AX
	SHLQ $32, DX
	ORQ  DX, AX
	SHLQ $32, R12
	ORQ  R12, BX
	VMOVQ AX, X8
	VPMOVZXBW X8, X8
	VPERMQ $0x44, Y8, Y8
	VINSERTI64X4 $1, Y8, Z8, Z8 // scales as int16, in every 128-bit lane

	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	K4QUADZ(0, Z16, Z17)
	K4QUADZ(1, Z18, Z19)
	K4QUADZ(2, Z20, Z21)
	K4QUADZ(3, Z22, Z23)

	VMOVQ BX, X8
	VPMOVZXBW X8, X8
	VPERMQ $0x44, Y8, Y8 // mins as int16, in both halves
	VMOVD (SI), X9
	VCVTPH2PS X9, X9 // [d, dmin]
	VBROADCASTSS X9, Z6
	VMOVSHDUP X9, X7
	VBROADCASTSS X7, Y7
	K4ZEND(0, Z4, Z0, Y2)
	K4ZEND(1, Z5, Z1, Y3)

	ADDQ $144, SI
	ADDQ $1344, DI
	DECQ CX
	JNZ  k4zblock

	VEXTRACTF64X4 $1, Z0, Y4
	VEXTRACTF128 $1, Y2, X5
	VEXTRACTF64X4 $1, Z1, Y6
	VEXTRACTF128 $1, Y3, X7
	K4ZSTORE(Y0, X0, X2, (R8))
	K4ZSTORE(Y4, X4, X5, (R8)(R14*1))
	K4ZSTORE(Y1, X1, X3, (R8)(R14*2))
	K4ZSTORE(Y6, X6, X7, (R8)(R15*1))
	ADDQ $4, R8
	DECQ R9
	JNZ  k4zrow
	VZEROUPPER
	RET
