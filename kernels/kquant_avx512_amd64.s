//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX-512 kernels of the avx512 tier for Q4_K and Q6_K weights against
// Q8_K activations. Each computes, per (row, activation), exactly what the
// AVX2 kernels of q4_k_amd64.s and q6_k_amd64.s compute: the eight int32
// lanes of the block's integer sum (lane l: the elements 4l..4l+3 of every
// 32 quants, each weighted by its sub-block's scale; exact, so the order of
// the integer additions is free), converted to float and fma'd into an
// 8-lane accumulator with the block's float32 scale product, the mins'
// products of Q4_K into a 4-lane one, and the same reductions at the end.
// A zmm holds two 8-lane accumulators: two rows (decode) or two
// activations (tiles). VPDPWSSD does the AVX2 kernels' VPMADDWD and
// VPADDD in one instruction (the same int32 sums, without saturation).

// The decode kernels take pairs of rows, rows 2p and 2p+1 at
// w + (2p+i)·rowBytes: row 2p in lanes 0..7 of every zmm, row 2p+1 in
// lanes 8..15, the activation broadcast to both halves. As the AVX2
// kernels do, they walk the next pair as one stream, prefetching every
// line of it a pair ahead.

// K4SHUFZ loads the eight VPSHUFB controls of k4ScaleShuf (scale s of a
// 128-bit lane broadcast to all its words) into Z16..Z23.
#define K4SHUFZ \
	VBROADCASTI32X8 ·k4ScaleShuf+0(SB), Z16 \
	VBROADCASTI32X8 ·k4ScaleShuf+32(SB), Z17 \
	VBROADCASTI32X8 ·k4ScaleShuf+64(SB), Z18 \
	VBROADCASTI32X8 ·k4ScaleShuf+96(SB), Z19 \
	VBROADCASTI32X8 ·k4ScaleShuf+128(SB), Z20 \
	VBROADCASTI32X8 ·k4ScaleShuf+160(SB), Z21 \
	VBROADCASTI32X8 ·k4ScaleShuf+192(SB), Z22 \
	VBROADCASTI32X8 ·k4ScaleShuf+224(SB), Z23

// K4RQUAD does sub-blocks 2j, 2j+1 of both rows (SI, BX): the nibbles of
// 32 bytes of each, the activation's 64 quants broadcast, the scales of
// both rows in Z12 (int16, [row 0 ×2 | row 1 ×2] per 128-bit lane).
#define K4RQUAD(j, clo, chi) \
	VMOVDQU (16+32*j)(SI), Y1 \
	VINSERTI64X4 $1, (16+32*j)(BX), Z1, Z1 \
	VPSRLW $4, Z1, Z2 \
	VPANDD Z14, Z1, Z1 \
	VPANDD Z14, Z2, Z2 \
	VBROADCASTI32X8 (4+64*j)(DI), Z3 \
	VBROADCASTI32X8 (36+64*j)(DI), Z4 \
	VPMADDUBSW Z3, Z1, Z1 \
	VPMADDUBSW Z4, Z2, Z2 \
	VPSHUFB clo, Z12, Z3 \
	VPSHUFB chi, Z12, Z4 \
	VPDPWSSD Z3, Z1, Z7 \
	VPDPWSSD Z4, Z2, Z8

// func dotQ4_KRows2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, act *byte, ahead int)
//
// Registers: SI row 0 at the current block, BX row 1, R10 the prefetch
// pointer (ahead bytes past the pair's start, a multiple of 2·rowBytes), R15 rowBytes, DI the activation block, Z0 the sums'
// accumulators of both rows, Y13 the mins' (lanes 0..3 row 0, 4..7 row
// 1), Y15 the block's bsums summed in 32s (both halves), X11 da.
TEXT ·dotQ4_KRows2AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ pairs+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ rowBytes+32(FP), R15
	MOVQ act+40(FP), R11

	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14 // low nibble mask
	K4SHUFZ
	VMOVDQU32 k4zDIdx<>(SB), Z24
	VMOVDQU32 k4zMIdx<>(SB), Y25

k4rpair:
	VPXORD Z0, Z0, Z0
	VPXORD Y13, Y13, Y13
	LEAQ (SI)(R15*1), BX
	MOVQ ahead+48(FP), R10
	ADDQ SI, R10
	MOVQ R11, DI
	MOVQ nb+24(FP), CX

k4rblock:
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 128(R10)
	PREFETCHT0 192(R10)
	PREFETCHT0 256(R10)
	ADDQ $288, R10

	// bsums summed in 32s, in both halves of Y15.
	VMOVDQU 260(DI), Y3
	VEXTRACTI128 $1, Y3, X4
	VPHADDW X4, X3, X15
	VINSERTI128 $1, X15, Y15, Y15

	// Scales and mins of both rows.
	K4SCALES(SI, AX, R14, DX, R12, R13)
	VMOVQ AX, X1
	VPMOVZXBW X1, X1
	VPERMQ $0x44, Y1, Y1
	VMOVQ R14, X2
	VPMOVZXBW X2, X2
	K4SCALES(BX, AX, R14, DX, R12, R13)
	VMOVQ AX, X3
	VPMOVZXBW X3, X3
	VPERMQ $0x44, Y3, Y3
	VINSERTI64X4 $1, Y3, Z1, Z12
	VMOVQ R14, X4
	VPMOVZXBW X4, X4
	VINSERTI128 $1, X4, Y2, Y2
	VPMADDWD Y15, Y2, Y2
	VCVTDQ2PS Y2, Y2

	// [da·d, da·dmin] of both rows, spread over their lanes.
	VMOVD (SI), X5
	VPINSRD $1, (BX), X5, X5
	VCVTPH2PS X5, X5
	VBROADCASTSS (DI), X11
	VMULPS X11, X5, X5
	VPERMPS Z5, Z24, Z6 // [da·d ×8 | da·d' ×8]
	VPERMPS Y5, Y25, Y5 // [da·dmin ×4 | da·dmin' ×4]
	VFMADD231PS Y5, Y2, Y13

	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	K4RQUAD(0, Z16, Z17)
	K4RQUAD(1, Z18, Z19)
	K4RQUAD(2, Z20, Z21)
	K4RQUAD(3, Z22, Z23)
	VPADDD Z8, Z7, Z7
	VCVTDQ2PS Z7, Z7
	VFMADD231PS Z6, Z7, Z0

	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $292, DI
	DECQ CX
	JNZ  k4rblock

	VEXTRACTF64X4 $1, Z0, Y9
	VEXTRACTF128 $1, Y13, X10
	HSUM8(Y0, X0, X1)
	HSUM4M(X13, X2)
	VSUBSS X13, X0, X0
	VMOVSS X0, (R8)
	HSUM8(Y9, X9, X1)
	HSUM4M(X10, X2)
	VSUBSS X10, X9, X9
	VMOVSS X9, 4(R8)
	ADDQ $8, R8
	MOVQ BX, SI // row 1 ends where the next pair starts
	DECQ R9
	JNZ  k4rpair
	VZEROUPPER
	RET

// k4zDIdx and k4zMIdx are the VPERMPS indices that spread [d, dmin, d',
// dmin'] over the lanes of two rows: d to lanes 0..7 and d' to 8..15;
// dmin to lanes 0..3 and dmin' to 4..7.
DATA k4zDIdx<>+0(SB)/8, $0
DATA k4zDIdx<>+8(SB)/8, $0
DATA k4zDIdx<>+16(SB)/8, $0
DATA k4zDIdx<>+24(SB)/8, $0
DATA k4zDIdx<>+32(SB)/8, $0x0000000200000002
DATA k4zDIdx<>+40(SB)/8, $0x0000000200000002
DATA k4zDIdx<>+48(SB)/8, $0x0000000200000002
DATA k4zDIdx<>+56(SB)/8, $0x0000000200000002
GLOBL k4zDIdx<>(SB), RODATA|NOPTR, $64

DATA k4zMIdx<>+0(SB)/8, $0x0000000100000001
DATA k4zMIdx<>+8(SB)/8, $0x0000000100000001
DATA k4zMIdx<>+16(SB)/8, $0x0000000300000003
DATA k4zMIdx<>+24(SB)/8, $0x0000000300000003
GLOBL k4zMIdx<>(SB), RODATA|NOPTR, $32

// q6zScaleShuf holds, for pair k, the VPSHUFB control that puts int16
// scale 2k in the low 128-bit lane and scale 2k+1 in the high one (of
// each 256-bit half), as q6kScaleShuf does for a ymm.
DATA q6zScaleShuf<>+0(SB)/8, $0x0100010001000100
DATA q6zScaleShuf<>+8(SB)/8, $0x0100010001000100
DATA q6zScaleShuf<>+16(SB)/8, $0x0302030203020302
DATA q6zScaleShuf<>+24(SB)/8, $0x0302030203020302
DATA q6zScaleShuf<>+32(SB)/8, $0x0504050405040504
DATA q6zScaleShuf<>+40(SB)/8, $0x0504050405040504
DATA q6zScaleShuf<>+48(SB)/8, $0x0706070607060706
DATA q6zScaleShuf<>+56(SB)/8, $0x0706070607060706
DATA q6zScaleShuf<>+64(SB)/8, $0x0908090809080908
DATA q6zScaleShuf<>+72(SB)/8, $0x0908090809080908
DATA q6zScaleShuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6zScaleShuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6zScaleShuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6zScaleShuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6zScaleShuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6zScaleShuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6zScaleShuf<>(SB), RODATA|NOPTR, $128

// Q6SHUFZ loads the four VPSHUFB controls of q6zScaleShuf into Z24..Z27.
#define Q6SHUFZ \
	VBROADCASTI32X8 q6zScaleShuf<>+0(SB), Z24 \
	VBROADCASTI32X8 q6zScaleShuf<>+32(SB), Z25 \
	VBROADCASTI32X8 q6zScaleShuf<>+64(SB), Z26 \
	VBROADCASTI32X8 q6zScaleShuf<>+96(SB), Z27

// Q6RQ does quants 32k..32k+31 of half h of both rows, their low bits in
// Z1 and qh shifted so that bits 2k, 2k+1 sit at 4, 5 in Z2: the
// activation's quants and prepared offsets broadcast, the scales of the
// half in Z9 and the control of pair k in shuf, into iacc.
#define Q6RQ(h, k, shuf, iacc) \
	VPANDD Z15, Z2, Z2 \
	VPORD Z2, Z1, Z1 \
	VBROADCASTI32X8 (4+128*h+32*k)(DI), Z3 \
	VBROADCASTI32X8 (128*h+32*k)(DX), Z4 \
	VPMADDUBSW Z3, Z1, Z1 \
	VPSUBW Z4, Z1, Z1 \
	VPSHUFB shuf, Z9, Z3 \
	VPDPWSSD Z3, Z1, iacc

// Q6RHALF does half h (128 quants) of both rows.
#define Q6RHALF(h) \
	VPERMQ $(0x44+0xaa*h), Z13, Z9 \
	VMOVDQU (128+32*h)(SI), Y10 \
	VINSERTI64X4 $1, (128+32*h)(BX), Z10, Z10 \
	VMOVDQU (64*h)(SI), Y11 \
	VINSERTI64X4 $1, (64*h)(BX), Z11, Z11 \
	VMOVDQU (64*h+32)(SI), Y12 \
	VINSERTI64X4 $1, (64*h+32)(BX), Z12, Z12 \
	VPANDD Z14, Z11, Z1 \
	VPSLLW $4, Z10, Z2 \
	Q6RQ(h, 0, Z24, Z7) \
	VPANDD Z14, Z12, Z1 \
	VPSLLW $2, Z10, Z2 \
	Q6RQ(h, 1, Z25, Z8) \
	VPSRLW $4, Z11, Z1 \
	VPANDD Z14, Z1, Z1 \
	VMOVDQA64 Z10, Z2 \
	Q6RQ(h, 2, Z26, Z7) \
	VPSRLW $4, Z12, Z1 \
	VPANDD Z14, Z1, Z1 \
	VPSRLW $2, Z10, Z2 \
	Q6RQ(h, 3, Z27, Z8)

// func dotQ6_KRows2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, act, aux *byte, ahead int)
//
// Registers: SI row 0 at the current block, BX row 1, R13 the prefetch
// pointer (ahead bytes past the pair's start, a multiple of 2·rowBytes), R15 rowBytes, DI the activation block, DX its prepared
// offsets (prepQ6_K), Z0 the accumulators of both rows.
TEXT ·dotQ6_KRows2AVX512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R8
	MOVQ pairs+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ rowBytes+32(FP), R15
	MOVQ act+40(FP), R11
	MOVQ aux+48(FP), R12

	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14 // low nibble mask
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z15 // high-bits mask
	Q6SHUFZ

q6rpair:
	VPXORD Z0, Z0, Z0
	LEAQ (SI)(R15*1), BX
	MOVQ ahead+56(FP), R13
	ADDQ SI, R13
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

q6rblock:
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	PREFETCHT0 192(R13)
	PREFETCHT0 256(R13)
	PREFETCHT0 320(R13)
	PREFETCHT0 384(R13)
	ADDQ $420, R13

	VPMOVSXBW 192(SI), Y13
	VPMOVSXBW 192(BX), Y9
	VINSERTI64X4 $1, Y9, Z13, Z13 // scales as int16, [row 0 | row 1]
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	Q6RHALF(0)
	Q6RHALF(1)
	VPADDD Z8, Z7, Z7
	VCVTDQ2PS Z7, Z7

	// da·d of each row, as the AVX2 kernel rounds it, over its lanes.
	MOVWLZX 208(SI), AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VMULSS (DI), X5, X5
	MOVWLZX 208(BX), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DI), X6, X6
	VBROADCASTSS X5, Z5
	VBROADCASTSS X6, Y6
	VINSERTF64X4 $1, Y6, Z5, Z5
	VFMADD231PS Z5, Z7, Z0

	ADDQ $210, SI
	ADDQ $210, BX
	ADDQ $292, DI
	ADDQ $256, DX
	DECQ CX
	JNZ  q6rblock

	VEXTRACTF64X4 $1, Z0, Y6
	HSUM8(Y0, X0, X1)
	VMOVSS X0, (R8)
	HSUM8(Y6, X6, X1)
	VMOVSS X6, 4(R8)
	ADDQ $8, R8
	MOVQ BX, SI // row 1 ends where the next pair starts
	DECQ R9
	JNZ  q6rpair
	VZEROUPPER
	RET

// k4zScaleShuf is k4ScaleShuf with each control repeated over a zmm: 64
// bytes per scale.
DATA k4zScaleShuf<>+0(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+8(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+16(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+24(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+32(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+40(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+48(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+56(SB)/8, $0x0100010001000100
DATA k4zScaleShuf<>+64(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+72(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+80(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+88(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+96(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+104(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+112(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+120(SB)/8, $0x0302030203020302
DATA k4zScaleShuf<>+128(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+136(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+144(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+152(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+160(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+168(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+176(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+184(SB)/8, $0x0504050405040504
DATA k4zScaleShuf<>+192(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+200(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+208(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+216(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+224(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+232(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+240(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+248(SB)/8, $0x0706070607060706
DATA k4zScaleShuf<>+256(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+264(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+272(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+280(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+288(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+296(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+304(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+312(SB)/8, $0x0908090809080908
DATA k4zScaleShuf<>+320(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+328(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+336(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+344(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+352(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+360(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+368(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+376(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zScaleShuf<>+384(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+392(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+400(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+408(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+416(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+424(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+432(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+440(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zScaleShuf<>+448(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+456(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+464(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+472(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+480(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+488(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+496(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zScaleShuf<>+504(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4zScaleShuf<>(SB), RODATA|NOPTR, $512

// The Q4_K tile of eight activations (four pairs p: activations 2p in
// lanes 0..7, 2p+1 in lanes 8..15) against rows one at a time, each
// block's nibbles and scales unpacked once for the eight. The activations
// come packed by packQ8_KZ with four pairs: per block (2688 bytes),
// sub-block s of pair p's quants at 512p+64s (32 of each activation), the
// pair's da as [da0 ×8, da1 ×8] at 2048+64p and [da0 ×4, da1 ×4] at
// 2304+32p, its bsums 0..7 as [act0, act1] at 2432+64p and 8..15 32
// bytes on.
//
// Registers: Z0..Z3 the sums' float accumulators of pairs 0..3, Y4..Y7
// their mins' (lanes 0..3 and 4..7), Z24..Z31 the block's integer sums
// (two per pair: low and high nibbles), Z8 the row's scales as int16 in
// every 128-bit lane, Z15 the nibble mask.

// K4Z8TOK adds pair poff's part of sub-blocks 2j, 2j+1 into ilo and ihi:
// the nibbles in Z9 (low), Z10 (high), the scales in Z11, Z12.
#define K4Z8TOK(j, poff, ilo, ihi) \
	VPMADDUBSW (poff+128*j)(DI), Z9, Z13 \
	VPMADDUBSW (poff+128*j+64)(DI), Z10, Z14 \
	VPDPWSSD Z11, Z13, ilo \
	VPDPWSSD Z12, Z14, ihi

#define K4Z8QUAD(j) \
	VBROADCASTI32X8 (16+32*j)(SI), Z9 \
	VPSRLW $4, Z9, Z10 \
	VPANDD Z15, Z9, Z9 \
	VPANDD Z15, Z10, Z10 \
	VPSHUFB k4zScaleShuf<>+(128*j)(SB), Z8, Z11 \
	VPSHUFB k4zScaleShuf<>+(128*j+64)(SB), Z8, Z12 \
	K4Z8TOK(j, 0, Z24, Z25) \
	K4Z8TOK(j, 512, Z26, Z27) \
	K4Z8TOK(j, 1024, Z28, Z29) \
	K4Z8TOK(j, 1536, Z30, Z31)

// K4Z8END finishes pair p's block: its integer sums in ilo + ihi, fp32(d)
// in every lane of Z16, fp32(dmin) in Y17, the mins as int16 in both
// halves of Y18.
#define K4Z8END(p, ilo, ihi, acc, macc) \
	VPADDD ihi, ilo, ilo \
	VCVTDQ2PS ilo, ilo \
	VMULPS (2048+64*p)(DI), Z16, Z19 \
	VFMADD231PS Z19, ilo, acc \
	VMOVDQU (2432+64*p)(DI), Y13 \
	VPHADDW (2464+64*p)(DI), Y13, Y13 \
	VPMADDWD Y13, Y18, Y13 \
	VCVTDQ2PS Y13, Y13 \
	VMULPS (2304+32*p)(DI), Y17, Y14 \
	VFMADD231PS Y14, Y13, macc

// K4Z8STORE reduces pair p's accumulators (acc, macc) as dotQ4_KAVX2
// does and stores activation 2p's dot at dst0, 2p+1's at dst1.
#define K4Z8STORE(yacc, xacc, zacc, ym, xm, dst0, dst1) \
	VEXTRACTF64X4 $1, zacc, Y12 \
	VEXTRACTF128 $1, ym, X13 \
	HSUM8(yacc, xacc, X9) \
	HSUM4M(xm, X10) \
	VSUBSS xm, xacc, xacc \
	VMOVSS xacc, dst0 \
	HSUM8(Y12, X12, X9) \
	HSUM4M(X13, X10) \
	VSUBSS X13, X12, X12 \
	VMOVSS X12, dst1

// func dotQ4_KT8AVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
TEXT ·dotQ4_KT8AVX512(SB), NOSPLIT, $0-48
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

k8row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Y4, Y4, Y4
	VPXORD Y5, Y5, Y5
	VPXORD Y6, Y6, Y6
	VPXORD Y7, Y7, Y7
	MOVQ R11, DI
	MOVQ R10, CX

k8block:
	K4SCALES(SI, AX, BX, DX, R12, R13)
	VMOVQ AX, X8
	VPMOVZXBW X8, X8
	VPERMQ $0x44, Y8, Y8
	VINSERTI64X4 $1, Y8, Z8, Z8 // scales as int16, in every 128-bit lane

	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	K4Z8QUAD(0)
	K4Z8QUAD(1)
	K4Z8QUAD(2)
	K4Z8QUAD(3)

	VMOVQ BX, X9
	VPMOVZXBW X9, X9
	VPERMQ $0x44, Y9, Y18 // mins as int16, in both halves
	VMOVD (SI), X9
	VCVTPH2PS X9, X9 // [d, dmin]
	VBROADCASTSS X9, Z16
	VMOVSHDUP X9, X10
	VBROADCASTSS X10, Y17
	K4Z8END(0, Z24, Z25, Z0, Y4)
	K4Z8END(1, Z26, Z27, Z1, Y5)
	K4Z8END(2, Z28, Z29, Z2, Y6)
	K4Z8END(3, Z30, Z31, Z3, Y7)

	ADDQ $144, SI
	ADDQ $2688, DI
	DECQ CX
	JNZ  k8block

	LEAQ (R8)(R14*4), R12
	K4Z8STORE(Y0, X0, Z0, Y4, X4, (R8), (R8)(R14*1))
	K4Z8STORE(Y1, X1, Z1, Y5, X5, (R8)(R14*2), (R8)(R15*1))
	K4Z8STORE(Y2, X2, Z2, Y6, X6, (R12), (R12)(R14*1))
	K4Z8STORE(Y3, X3, Z3, Y7, X7, (R12)(R14*2), (R12)(R15*1))
	ADDQ $4, R8
	DECQ R9
	JNZ  k8row
	VZEROUPPER
	RET

// The Q6_K tile of eight activations (four pairs p: activations 2p in
// lanes 0..7, 2p+1 in lanes 8..15) against rows one at a time, each
// block's quants and scales unpacked once for the eight. The activations
// come packed by packQ6_KZ with four pairs: per block (4352 bytes), chunk
// c (quants 32c..32c+31) of pair p at 1024p+128c, the quants of both
// activations (64 bytes), then their prepared offsets (prepQ6_K, 32 bytes
// each); the pair's da as [da0 ×8, da1 ×8] at 4096+64p.
//
// Registers: Z16..Z19 the float accumulators of pairs 0..3, Z24..Z31 the
// block's integer sums (two per pair: even and odd k), Z13 the row's
// scales as int16 in both halves, Z14 and Z15 the masks, Z20..Z23 the
// scale controls.

// Q6Z8TOK adds pair poff's part of chunk c, the quants in Z1 and the
// scales in Z3, into iacc.
#define Q6Z8TOK(c, poff, iacc) \
	VPMADDUBSW (poff+128*c)(DI), Z1, Z4 \
	VPSUBW (poff+128*c+64)(DI), Z4, Z4 \
	VPDPWSSD Z3, Z4, iacc

// Q6Z8Q does quants 32k..32k+31 of half h for the four pairs, their low
// bits in Z1 and qh shifted so that bits 2k, 2k+1 sit at 4, 5 in Z2.
#define Q6Z8Q(h, k, shuf, a0, a1, a2, a3) \
	VPANDD Z15, Z2, Z2 \
	VPORD Z2, Z1, Z1 \
	VPSHUFB shuf, Z9, Z3 \
	Q6Z8TOK((4*h+k), 0, a0) \
	Q6Z8TOK((4*h+k), 1024, a1) \
	Q6Z8TOK((4*h+k), 2048, a2) \
	Q6Z8TOK((4*h+k), 3072, a3)

#define Q6Z8HALF(h) \
	VPERMQ $(0x44+0xaa*h), Z13, Z9 \
	VBROADCASTI32X8 (128+32*h)(SI), Z10 \
	VBROADCASTI32X8 (64*h)(SI), Z11 \
	VBROADCASTI32X8 (64*h+32)(SI), Z12 \
	VPANDD Z14, Z11, Z1 \
	VPSLLW $4, Z10, Z2 \
	Q6Z8Q(h, 0, Z20, Z24, Z26, Z28, Z30) \
	VPANDD Z14, Z12, Z1 \
	VPSLLW $2, Z10, Z2 \
	Q6Z8Q(h, 1, Z21, Z25, Z27, Z29, Z31) \
	VPSRLW $4, Z11, Z1 \
	VPANDD Z14, Z1, Z1 \
	VMOVDQA64 Z10, Z2 \
	Q6Z8Q(h, 2, Z22, Z24, Z26, Z28, Z30) \
	VPSRLW $4, Z12, Z1 \
	VPANDD Z14, Z1, Z1 \
	VPSRLW $2, Z10, Z2 \
	Q6Z8Q(h, 3, Z23, Z25, Z27, Z29, Z31)

// Q6Z8END finishes pair p's block: its integer sums in ie + io, fp32(d)
// in every lane of Z5.
#define Q6Z8END(p, ie, io, acc) \
	VPADDD io, ie, ie \
	VCVTDQ2PS ie, ie \
	VMULPS (4096+64*p)(DI), Z5, Z6 \
	VFMADD231PS Z6, ie, acc

// Q6Z8STORE reduces pair p's accumulator as hsum_float_8 and stores
// activation 2p's dot at dst0, 2p+1's at dst1.
#define Q6Z8STORE(zacc, dst0, dst1) \
	VMOVAPS zacc, Z0 \
	VEXTRACTF64X4 $1, Z0, Y6 \
	HSUM8(Y0, X0, X1) \
	VMOVSS X0, dst0 \
	HSUM8(Y6, X6, X1) \
	VMOVSS X6, dst1

// func dotQ6_KT8AVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
TEXT ·dotQ6_KT8AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R14
	SHLQ $2, R14
	LEAQ (R14)(R14*2), R15
	MOVQ rows+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11

	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14 // low nibble mask
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z15 // high-bits mask
	VBROADCASTI32X8 q6zScaleShuf<>+0(SB), Z20
	VBROADCASTI32X8 q6zScaleShuf<>+32(SB), Z21
	VBROADCASTI32X8 q6zScaleShuf<>+64(SB), Z22
	VBROADCASTI32X8 q6zScaleShuf<>+96(SB), Z23

q6z8row:
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	MOVQ R11, DI
	MOVQ R10, CX

q6z8block:
	VPMOVSXBW 192(SI), Y13
	VINSERTI64X4 $1, Y13, Z13, Z13 // scales as int16, in both halves
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	Q6Z8HALF(0)
	Q6Z8HALF(1)

	MOVWLZX 208(SI), AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VBROADCASTSS X5, Z5
	Q6Z8END(0, Z24, Z25, Z16)
	Q6Z8END(1, Z26, Z27, Z17)
	Q6Z8END(2, Z28, Z29, Z18)
	Q6Z8END(3, Z30, Z31, Z19)

	ADDQ $210, SI
	ADDQ $4352, DI
	DECQ CX
	JNZ  q6z8block

	LEAQ (R8)(R14*4), R12
	Q6Z8STORE(Z16, (R8), (R8)(R14*1))
	Q6Z8STORE(Z17, (R8)(R14*2), (R8)(R15*1))
	Q6Z8STORE(Z18, (R12), (R12)(R14*1))
	Q6Z8STORE(Z19, (R12)(R14*2), (R12)(R15*1))
	ADDQ $4, R8
	DECQ R9
	JNZ  q6z8row
	VZEROUPPER
	RET
