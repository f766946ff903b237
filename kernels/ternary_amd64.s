//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 kernels for TQ1_0 and TQ2_0 against Q8_K, in the order of ggml's
// AVX2 ggml_vec_dot_tq1_0_q8_K and ggml_vec_dot_tq2_0_q8_K: per block, the
// codes (0, 1, 2 for −1, 0, +1) times the activation go through
// VPMADDUBSW into one int16 accumulator (every load covers 32 consecutive
// activations, so int32 lane l ends up with elements e, e mod 32 in
// [4l, 4l+4)); the activation's bsums come off the int16 lanes, VPMADDWD
// by ones makes the eight int32 lanes, and acc = fma(float(lanes),
// q8.d·fp16(d), acc); hsum_float_8 at the end. The integer sums are exact,
// so only the lanes and the float order matter, and they are ggml's.

// TRIT sets DST to trit n of each byte of SRC = q·3ⁿ mod 256 (a TQ1_0
// byte times a power of 3): (SRC·3) >> 8, computed as ggml does with a
// saturating decrement and two rounding averages (Y13 = 0x01 bytes,
// Y12 = 0, Y15 = 0x03 bytes).
#define TRIT(SRC, DST, TMP) \
	VPSUBUSB Y13, SRC, DST; \
	VPAVGB   Y12, DST, TMP; \
	VPAVGB   TMP, DST, DST; \
	VPSRLW   $6, DST, DST;  \
	VPAND    Y15, DST, DST

// MUL3 multiplies the bytes of R by 3 (mod 256).
#define MUL3(R, TMP) \
	VPADDB R, R, TMP; \
	VPADDB TMP, R, R

// ACCUM multiplies the codes in CODES with the 32 activations at OFF(DI)
// and adds the int16 pair sums to Y1.
#define ACCUM(CODES, OFF) \
	VPMADDUBSW OFF(DI), CODES, CODES; \
	VPADDW     CODES, Y1, Y1

// FINISH ends a block whose fp16 scale is at DOFF(SI): subtract the
// bsums, make the int32 lanes and add them, scaled, to Y0.
#define FINISH(DOFF) \
	VPSUBW       260(DI), Y1, Y1; \
	VPMADDWD     Y14, Y1, Y1;     \
	VCVTDQ2PS    Y1, Y1;          \
	MOVWLZX      DOFF(SI), AX;    \
	VMOVD        AX, X4;          \
	VCVTPH2PS    X4, X4;          \
	VMULSS       (DI), X4, X4;    \
	VBROADCASTSS X4, Y4;          \
	VFMADD231PS  Y4, Y1, Y0

// HSUM stores hsum_float_8(Y0) at (R8).
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X1, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1;     \
	VADDSS       X1, X0, X0; \
	VMOVSS       X0, (R8)

// CONSTS loads the constants both kernels use.
#define CONSTS \
	MOVL         $0x03030303, AX; \
	VMOVD        AX, X15;         \
	VPBROADCASTD X15, Y15;        \
	MOVL         $0x00010001, AX; \
	VMOVD        AX, X14;         \
	VPBROADCASTD X14, Y14;        \
	MOVL         $0x01010101, AX; \
	VMOVD        AX, X13;         \
	VPBROADCASTD X13, Y13;        \
	VPXOR        Y12, Y12, Y12

// TQ1_0 block (54 bytes): qs[48], qh[4], fp16 d. Byte m of qs[0:32]
// holds elements m+32n, byte m of qs[32:48] elements 160+m+16n (n = 0..4),
// byte j of qh elements 240+j+4n (n = 0..3); trit n of byte q is
// ((q·3ⁿ mod 256)·3) >> 8.
//
// func dotTQ1_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotTQ1_0AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	CONSTS

tq1row:
	VXORPS Y0, Y0, Y0
	MOVQ   R11, DI
	MOVQ   R10, CX

tq1block:
	PREFETCHT0 512(SI)
	VPXOR      Y1, Y1, Y1

	// qs[0:32]: five trits per byte, activations 0..159.
	VMOVDQU 0(SI), Y3
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 4)
	MUL3(Y3, Y4)
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 36)
	MUL3(Y3, Y4)
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 68)
	MUL3(Y3, Y4)
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 100)
	MUL3(Y3, Y4)
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 132)

	// qs[32:48]: trits 0|1 for activations 160..191, 2|3 for 192..223.
	VMOVDQU     32(SI), X3
	VPADDB      X3, X3, X4
	VPADDB      X4, X3, X4
	VINSERTI128 $1, X4, Y3, Y3
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 164)
	MUL3(Y3, Y4)
	MUL3(Y3, Y4)
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 196)

	// Trit 4 of qs[32:48] and the four trits of qh: activations 224..255.
	VEXTRACTI128 $1, Y3, X3
	VPADDB       X3, X3, X4
	VPADDB       X4, X3, X3
	VPBROADCASTD 48(SI), X6
	VPADDB       X6, X6, X4
	VPADDB       X4, X6, X7
	VPADDB       X7, X7, X4
	VPADDB       X4, X7, X8
	VPADDB       X8, X8, X4
	VPADDB       X4, X8, X9
	VPBLENDD     $0x2, X7, X6, X6
	VPBLENDD     $0x4, X8, X6, X6
	VPBLENDD     $0x8, X9, X6, X6
	VINSERTI128  $1, X6, Y3, Y3
	TRIT(Y3, Y5, Y4)
	ACCUM(Y5, 228)

	FINISH(52)
	ADDQ $54, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  tq1block

	HSUM
	ADDQ $4, R8
	DECQ R9
	JNZ  tq1row
	VZEROUPPER
	RET

// TQ2_0 block (66 bytes): qs[64], fp16 d. Element 128h+32n+m is bits
// 2n..2n+1 of qs[32h+m].
//
// func dotTQ2_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotTQ2_0AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	CONSTS

tq2row:
	VXORPS Y0, Y0, Y0
	MOVQ   R11, DI
	MOVQ   R10, CX

tq2block:
	PREFETCHT0 512(SI)
	VPXOR      Y1, Y1, Y1
	VMOVDQU    0(SI), Y2
	VPAND      Y15, Y2, Y3
	ACCUM(Y3, 4)
	VPSRLW     $2, Y2, Y3
	VPAND      Y15, Y3, Y3
	ACCUM(Y3, 36)
	VPSRLW     $4, Y2, Y3
	VPAND      Y15, Y3, Y3
	ACCUM(Y3, 68)
	VPSRLW     $6, Y2, Y3
	VPAND      Y15, Y3, Y3
	ACCUM(Y3, 100)
	VMOVDQU    32(SI), Y2
	VPAND      Y15, Y2, Y3
	ACCUM(Y3, 132)
	VPSRLW     $2, Y2, Y3
	VPAND      Y15, Y3, Y3
	ACCUM(Y3, 164)
	VPSRLW     $4, Y2, Y3
	VPAND      Y15, Y3, Y3
	ACCUM(Y3, 196)
	VPSRLW     $6, Y2, Y3
	VPAND      Y15, Y3, Y3
	ACCUM(Y3, 228)

	FINISH(64)
	ADDQ $66, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  tq2block

	HSUM
	ADDQ $4, R8
	DECQ R9
	JNZ  tq2row
	VZEROUPPER
	RET

// AVX-512 TQ2_0 kernels. The activation comes prepared by prepTQ
// (tqAuxBlock bytes a block): its quants permuted so that the 64 bytes at
// 64k are the activations of elements 32k..32k+31 and 128+32k..128+32k+31,
// the ones a whole 64-byte TQ2_0 qs load shifted right by 2k pairs with;
// then eight int32 at 256, the negated bsum pairs −(bsums[2l]+bsums[2l+1]);
// then q8.d at 288. VPDPBUSD (codes unsigned, activations signed; no
// saturation) sums groups of four bytes, so int32 lanes l and 8+l of the
// zmm hold the elements e of lane l (e mod 32 in [4l, 4l+4)) of the first
// and the second half of the block; adding the halves to the start value
// (the bsum term) gives exactly the AVX2 kernel's eight int32 lanes, and
// the float work is the same: fma(float(lanes), q8.d·fp16(d), acc), then
// hsum_float_8.

// TQ2CONSTS loads the constants of the AVX-512 TQ2_0 kernels: Z31 0x03
// bytes (the codes of bits 0..1), and in Z28, Z27, Z26 the GF(2) affine
// matrices that move bits 2n..2n+1 of each byte to bits 0..1 (and clear
// the rest) for n = 1, 2, 3: VGF2P8AFFINEQB sets bit i of a byte to the
// parity of the byte AND matrix byte 7−i, so matrix bytes 7 and 6 are
// 1<<2n and 1<<(2n+1). One instruction per run of codes instead of a
// shift and a mask.
#define TQ2CONSTS \
	MOVL         $0x03030303, AX;         \
	VPBROADCASTD AX, Z31;                 \
	MOVQ         $0x0408000000000000, AX; \
	VPBROADCASTQ AX, Z28;                 \
	MOVQ         $0x1020000000000000, AX; \
	VPBROADCASTQ AX, Z27;                 \
	MOVQ         $0x4080000000000000, AX; \
	VPBROADCASTQ AX, Z26

// TQ2BLK adds to ACC the block at W (fp16 d at D) of one row, against the
// prepared activation block at (DI) (TQ2CONSTS loaded). Z2..Z5 and their
// Y and X forms are temporaries.
#define TQ2BLK(W, D, ACC, Z2, Z3, Z4, Y4, Z5, Y5, X5) \
	VMOVDQU64     W, Z2;           \
	VMOVDQU32     256(DI), Y4;     \
	VPANDD        Z31, Z2, Z3;     \
	VPDPBUSD      0(DI), Z3, Z4;   \
	VGF2P8AFFINEQB $0, Z28, Z2, Z3; \
	VPDPBUSD      64(DI), Z3, Z4;  \
	VGF2P8AFFINEQB $0, Z27, Z2, Z3; \
	VPDPBUSD      128(DI), Z3, Z4; \
	VGF2P8AFFINEQB $0, Z26, Z2, Z3; \
	VPDPBUSD      192(DI), Z3, Z4; \
	VEXTRACTI64X4 $1, Z4, Y5;      \
	VPADDD        Y5, Y4, Y4;      \
	VCVTDQ2PS     Y4, Y4;          \
	VPBROADCASTW  D, X5;           \
	VCVTPH2PS     X5, Y5;          \
	VMULPS.BCST   288(DI), Y5, Y5; \
	VFMADD231PS   Y5, Y4, ACC

// func dotTQ2_0x4AVX512(out *float32, quads int, w *byte, nb, rowBytes int, aux *byte, dist int)
//
// Four rows at a time (SI, SI+R12, SI+2·R12, SI+R13), block by block, and
// HSUM4 for the four sums. The four rows are one run of memory, which the
// loop reads in four places at once; BX runs through it linearly, dist
// bytes ahead, prefetching the 264 bytes a block step consumes.
TEXT ·dotTQ2_0x4AVX512(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), R8
	MOVQ         quads+8(FP), R9
	MOVQ         w+16(FP), SI
	MOVQ         nb+24(FP), R10
	MOVQ         rowBytes+32(FP), R12
	MOVQ         aux+40(FP), R11
	MOVQ         dist+48(FP), BX
	ADDQ         SI, BX
	LEAQ         (R12)(R12*2), R13
	TQ2CONSTS

tq2x4quad:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R11, DI
	MOVQ   SI, DX
	MOVQ   R10, CX

tq2x4block:
	PREFETCHT0 0(BX)
	PREFETCHT0 64(BX)
	PREFETCHT0 128(BX)
	PREFETCHT0 192(BX)
	PREFETCHT0 256(BX)
	ADDQ       $264, BX
	TQ2BLK(0(DX), 64(DX), Y0, Z4, Z5, Z6, Y6, Z7, Y7, X7)
	TQ2BLK(0(DX)(R12*1), 64(DX)(R12*1), Y1, Z8, Z9, Z10, Y10, Z11, Y11, X11)
	TQ2BLK(0(DX)(R12*2), 64(DX)(R12*2), Y2, Z12, Z13, Z14, Y14, Z15, Y15, X15)
	TQ2BLK(0(DX)(R13*1), 64(DX)(R13*1), Y3, Z16, Z17, Z18, Y18, Z19, Y19, X19)
	ADDQ $66, DX
	ADDQ $320, DI
	DECQ CX
	JNZ  tq2x4block

	HSUM4
	VMOVUPS X5, (R8)
	ADDQ    $16, R8
	LEAQ    (SI)(R12*4), SI
	DECQ    R9
	JNZ     tq2x4quad
	VZEROUPPER
	RET

// func dotTQ2_0AVX512(out *float32, rows int, w *byte, nb int, aux *byte)
//
// One row at a time, as dotTQ2_0x4AVX512 computes each of its rows.
TEXT ·dotTQ2_0AVX512(SB), NOSPLIT, $0-40
	MOVQ         out+0(FP), R8
	MOVQ         rows+8(FP), R9
	MOVQ         w+16(FP), SI
	MOVQ         nb+24(FP), R10
	MOVQ         aux+32(FP), R11
	TQ2CONSTS

tq2row512:
	VXORPS Y0, Y0, Y0
	MOVQ   R11, DI
	MOVQ   R10, CX

tq2block512:
	TQ2BLK(0(SI), 64(SI), Y0, Z4, Z5, Z6, Y6, Z7, Y7, X7)
	ADDQ $66, SI
	ADDQ $320, DI
	DECQ CX
	JNZ  tq2block512

	HSUM
	ADDQ $4, R8
	DECQ R9
	JNZ  tq2row512
	VZEROUPPER
	RET

// TQ2BLK2 adds to ACC the TQ2_0 block at W (an address without offset)
// of one row, as dotTQ2_0AVX2 does: the int16 pair sums in I, the
// activation's d broadcast in Y13, Y15 0x03 bytes, Y14 0x0001 words; T,
// C and Y10 (X10) are temporaries.
#define TQ2BLK2(W, ACC, I, T, C) \
	VMOVDQU      0 W, T;         \
	VPAND        Y15, T, C;      \
	VPMADDUBSW   4(DI), C, I;    \
	VPSRLW       $2, T, C;       \
	VPAND        Y15, C, C;      \
	VPMADDUBSW   36(DI), C, C;   \
	VPADDW       C, I, I;        \
	VPSRLW       $4, T, C;       \
	VPAND        Y15, C, C;      \
	VPMADDUBSW   68(DI), C, C;   \
	VPADDW       C, I, I;        \
	VPSRLW       $6, T, C;       \
	VPAND        Y15, C, C;      \
	VPMADDUBSW   100(DI), C, C;  \
	VPADDW       C, I, I;        \
	VMOVDQU      32 W, T;        \
	VPAND        Y15, T, C;      \
	VPMADDUBSW   132(DI), C, C;  \
	VPADDW       C, I, I;        \
	VPSRLW       $2, T, C;       \
	VPAND        Y15, C, C;      \
	VPMADDUBSW   164(DI), C, C;  \
	VPADDW       C, I, I;        \
	VPSRLW       $4, T, C;       \
	VPAND        Y15, C, C;      \
	VPMADDUBSW   196(DI), C, C;  \
	VPADDW       C, I, I;        \
	VPSRLW       $6, T, C;       \
	VPAND        Y15, C, C;      \
	VPMADDUBSW   228(DI), C, C;  \
	VPADDW       C, I, I;        \
	VPSUBW       260(DI), I, I;  \
	VPMADDWD     Y14, I, I;      \
	VCVTDQ2PS    I, I;           \
	VPBROADCASTW 64 W, X10;      \
	VCVTPH2PS    X10, Y10;       \
	VMULPS       Y13, Y10, Y10;  \
	VFMADD231PS  Y10, I, ACC

// func dotTQ2_0x4AVX2(out *float32, quads int, w *byte, nb, rowBytes int, act *byte, dist int)
//
// Four rows at a time, each as dotTQ2_0AVX2 computes it; the prefetch as
// in dotTQ2_0x4AVX512.
TEXT ·dotTQ2_0x4AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ quads+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ act+40(FP), R11
	MOVQ dist+48(FP), BX
	ADDQ SI, BX
	LEAQ (R12)(R12*2), R13
	CONSTS

tq2x4quad2:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R11, DI
	MOVQ   SI, DX
	MOVQ   R10, CX

tq2x4block2:
	PREFETCHT0   0(BX)
	PREFETCHT0   64(BX)
	PREFETCHT0   128(BX)
	PREFETCHT0   192(BX)
	PREFETCHT0   256(BX)
	ADDQ         $264, BX
	VBROADCASTSS (DI), Y13
	TQ2BLK2((DX), Y0, Y4, Y8, Y9)
	TQ2BLK2((DX)(R12*1), Y1, Y5, Y8, Y9)
	TQ2BLK2((DX)(R12*2), Y2, Y6, Y8, Y9)
	TQ2BLK2((DX)(R13*1), Y3, Y7, Y8, Y9)
	ADDQ         $66, DX
	ADDQ         $292, DI
	DECQ         CX
	JNZ          tq2x4block2

	HSUM4
	VMOVUPS X5, (R8)
	ADDQ    $16, R8
	LEAQ    (SI)(R12*4), SI
	DECQ    R9
	JNZ     tq2x4quad2
	VZEROUPPER
	RET

// TQ2TOK adds to Y(ACC) the block whose codes are in Z5..Z8 and whose
// fp16 d is in Y9 (as float32), against token T's prepared block at
// T·320(DI); I (and IY) and D are temporaries.
#define TQ2TOK(T, ACC, I, IY, D) \
	VMOVDQU32     (T*320+256)(DI), IY; \
	VPDPBUSD      (T*320+0)(DI), Z5, I;  \
	VPDPBUSD      (T*320+64)(DI), Z6, I; \
	VPDPBUSD      (T*320+128)(DI), Z7, I; \
	VPDPBUSD      (T*320+192)(DI), Z8, I; \
	VEXTRACTI64X4 $1, I, D;              \
	VPADDD        D, IY, IY;             \
	VCVTDQ2PS     IY, IY;                \
	VMULPS.BCST   (T*320+288)(DI), Y9, D; \
	VFMADD231PS   D, IY, ACC

// func dotTQ2_0TileAVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
//
// The prefill tile: rows × four tokens, each row's codes unpacked once
// per block for the four. packed holds the four tokens' prepTQ blocks
// interleaved (block b of token t at (4b+t)·320); out[t·ostride+r]. Each
// (row, token) is computed as dotTQ2_0AVX512 computes it.
TEXT ·dotTQ2_0TileAVX512(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), R8
	MOVQ         ostride+8(FP), R9
	SHLQ         $2, R9
	LEAQ         (R9)(R9*2), R13
	MOVQ         rows+16(FP), R12
	MOVQ         w+24(FP), SI
	MOVQ         nb+32(FP), R10
	MOVQ         packed+40(FP), R11
	TQ2CONSTS

tq2tilerow:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R11, DI
	MOVQ   R10, CX

tq2tileblock:
	VMOVDQU64      (SI), Z4
	VPANDD         Z31, Z4, Z5
	VGF2P8AFFINEQB $0, Z28, Z4, Z6
	VGF2P8AFFINEQB $0, Z27, Z4, Z7
	VGF2P8AFFINEQB $0, Z26, Z4, Z8
	VPBROADCASTW 64(SI), X9
	VCVTPH2PS    X9, Y9
	TQ2TOK(0, Y0, Z10, Y10, Y11)
	TQ2TOK(1, Y1, Z12, Y12, Y13)
	TQ2TOK(2, Y2, Z14, Y14, Y15)
	TQ2TOK(3, Y3, Z16, Y16, Y17)
	ADDQ         $66, SI
	ADDQ         $1280, DI
	DECQ         CX
	JNZ          tq2tileblock

	HSUM4
	VMOVSS    X5, (R8)
	VEXTRACTPS $1, X5, (R8)(R9*1)
	VEXTRACTPS $2, X5, (R8)(R9*2)
	VEXTRACTPS $3, X5, (R8)(R13*1)
	ADDQ      $4, R8
	DECQ      R12
	JNZ       tq2tilerow
	VZEROUPPER
	RET

// TQ2CODES unpacks the 32 bytes at OFF(SI) into the codes of four runs of
// 32 elements in Y4..Y7 (Y15 0x03 bytes).
#define TQ2CODES(OFF) \
	VMOVDQU OFF(SI), Y12; \
	VPAND   Y15, Y12, Y4; \
	VPSRLW  $2, Y12, Y5;  \
	VPAND   Y15, Y5, Y5;  \
	VPSRLW  $4, Y12, Y6;  \
	VPAND   Y15, Y6, Y6;  \
	VPSRLW  $6, Y12, Y7;  \
	VPAND   Y15, Y7, Y7

// TQ2HALF adds to I the int16 pair sums of the codes in Y4..Y7 with the
// 128 activations at OFF(DI) on.
#define TQ2HALF(OFF, I) \
	VPMADDUBSW OFF(DI), Y4, Y12;       \
	VPADDW     Y12, I, I;              \
	VPMADDUBSW (OFF+32)(DI), Y5, Y12;  \
	VPADDW     Y12, I, I;              \
	VPMADDUBSW (OFF+64)(DI), Y6, Y12;  \
	VPADDW     Y12, I, I;              \
	VPMADDUBSW (OFF+96)(DI), Y7, Y12;  \
	VPADDW     Y12, I, I

// TQ2FIN ends token T's block: the bsums off I, its int32 lanes, and
// ACC += lanes · (q8.d · d) with the weight's d in Y4.
#define TQ2FIN(T, I, ACC) \
	VPSUBW       (T*292+260)(DI), I, I; \
	VPMADDWD     Y14, I, I;             \
	VCVTDQ2PS    I, I;                  \
	VBROADCASTSS (T*292)(DI), Y12;      \
	VMULPS       Y4, Y12, Y12;          \
	VFMADD231PS  Y12, I, ACC

// func dotTQ2_0TileAVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)
//
// The avx2 prefill tile: rows × four tokens, each row's codes unpacked
// once per half block for the four tokens. packed holds the four tokens'
// Q8_K blocks interleaved (block b of token t at (4b+t)·292); out[t·ostride+r].
// Each (row, token) is computed as dotTQ2_0AVX2 computes it.
TEXT ·dotTQ2_0TileAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R13
	MOVQ rows+16(FP), R12
	MOVQ w+24(FP), SI
	MOVQ nb+32(FP), R10
	MOVQ packed+40(FP), R11
	CONSTS

tq2tile2row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R11, DI
	MOVQ   R10, CX

tq2tile2block:
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	TQ2CODES(0)
	TQ2HALF(4, Y8)
	TQ2HALF(296, Y9)
	TQ2HALF(588, Y10)
	TQ2HALF(880, Y11)
	TQ2CODES(32)
	TQ2HALF(132, Y8)
	TQ2HALF(424, Y9)
	TQ2HALF(716, Y10)
	TQ2HALF(1008, Y11)
	VPBROADCASTW 64(SI), X4
	VCVTPH2PS    X4, Y4
	TQ2FIN(0, Y8, Y0)
	TQ2FIN(1, Y9, Y1)
	TQ2FIN(2, Y10, Y2)
	TQ2FIN(3, Y11, Y3)
	ADDQ         $66, SI
	ADDQ         $1168, DI
	DECQ         CX
	JNZ          tq2tile2block

	HSUM4
	VMOVSS     X5, (R8)
	VEXTRACTPS $1, X5, (R8)(R9*1)
	VEXTRACTPS $2, X5, (R8)(R9*2)
	VEXTRACTPS $3, X5, (R8)(R13*1)
	ADDQ       $4, R8
	DECQ       R12
	JNZ        tq2tile2row
	VZEROUPPER
	RET

// AVX-512 TQ1_0 kernel: two rows per zmm, the low 256 bits row A's and
// the high 256 bits row B's, so each VPDPBUSD takes both rows' codes of
// one run of 32 elements against that run of the activation twice over
// (prepTQ1: per block, run c at 64c as [32 quants, the same 32], the
// negated bsum pairs twice at 512, q8.d at 576; tq1AuxBlock bytes). The
// codes come in the AVX2 kernel's runs (the same trit-from-byte steps on
// 64 bytes at once), so int32 lane l of each half is that row's lane l of
// the AVX2 kernel, and the float work per row is the same:
// fma(float(lanes), q8.d·fp16(d), acc), then hsum_float_8 of each half.

// TRIT5 sets DST to the top trit of each byte of SRC (((SRC·3) >> 8),
// as TRIT): Z30 0x01 bytes, Z29 zero, Z31 0x03 bytes.
#define TRIT5(SRC, DST, TMP) \
	VPSUBUSB Z30, SRC, DST; \
	VPAVGB   Z29, DST, TMP; \
	VPAVGB   TMP, DST, DST; \
	VPSRLW   $6, DST, DST;  \
	VPANDD   Z31, DST, DST

// MUL35 multiplies the bytes of R by 3 (mod 256) where mask K is set.
#define MUL35(R, TMP, K) \
	VPADDB R, R, TMP; \
	VPADDB TMP, R, K, R

// TQ1CODES unpacks the blocks of the rows at (SI) and (SI)(R12*1) into
// their eight runs of codes, Z20..Z27 (run c: elements 32c..32c+31, row A
// in the low half, row B in the high half), as the AVX2 kernel forms its
// runs. Byte masks: K1 all, K2 128-bit lanes 1 and 3, K3..K5 dwords 1..3,
// 2..3 and 3 of lanes 1 and 3. Z2..Z8 are temporaries.
#define TQ1CODES \
	VMOVDQU         (SI), Y2;                \
	VINSERTI64X4    $1, (SI)(R12*1), Z2, Z2; \
	TRIT5(Z2, Z20, Z4);                      \
	MUL35(Z2, Z4, K1);                       \
	TRIT5(Z2, Z21, Z4);                      \
	MUL35(Z2, Z4, K1);                       \
	TRIT5(Z2, Z22, Z4);                      \
	MUL35(Z2, Z4, K1);                       \
	TRIT5(Z2, Z23, Z4);                      \
	MUL35(Z2, Z4, K1);                       \
	TRIT5(Z2, Z24, Z4);                      \
	VBROADCASTI32X4 32(SI), Y5;              \
	VBROADCASTI32X4 32(SI)(R12*1), Y6;       \
	VINSERTI64X4    $1, Y6, Z5, Z5;          \
	MUL35(Z5, Z6, K2);                       \
	TRIT5(Z5, Z25, Z8);                      \
	MUL35(Z5, Z6, K1);                       \
	MUL35(Z5, Z6, K1);                       \
	TRIT5(Z5, Z26, Z8);                      \
	MUL35(Z5, Z6, K1);                       \
	MUL35(Z5, Z6, K1);                       \
	VPBROADCASTD    48(SI), X6;              \
	VINSERTI32X4    $1, X6, Z5, Z5;          \
	VPBROADCASTD    48(SI)(R12*1), X6;       \
	VINSERTI32X4    $3, X6, Z5, Z5;          \
	MUL35(Z5, Z6, K3);                       \
	MUL35(Z5, Z6, K4);                       \
	MUL35(Z5, Z6, K5);                       \
	TRIT5(Z5, Z27, Z8)

// TQ1D sets Z9 to the two rows' d as float32, [dA ×8, dB ×8].
#define TQ1D \
	VPBROADCASTW 52(SI), X9;          \
	VPBROADCASTW 52(SI)(R12*1), X10;  \
	VINSERTI128  $1, X10, Y9, Y9;     \
	VCVTPH2PS    Y9, Z9

// TQ1TOK adds to ACC the block whose codes are in Z20..Z27 and whose d
// are in Z9 against the prepared block at OFF(DI); Z10, Z11 are
// temporaries.
#define TQ1TOK(OFF, ACC) \
	VMOVDQU32   (OFF+512)(DI), Z10;  \
	VPDPBUSD    (OFF+0)(DI), Z20, Z10;   \
	VPDPBUSD    (OFF+64)(DI), Z21, Z10;  \
	VPDPBUSD    (OFF+128)(DI), Z22, Z10; \
	VPDPBUSD    (OFF+192)(DI), Z23, Z10; \
	VPDPBUSD    (OFF+256)(DI), Z24, Z10; \
	VPDPBUSD    (OFF+320)(DI), Z25, Z10; \
	VPDPBUSD    (OFF+384)(DI), Z26, Z10; \
	VPDPBUSD    (OFF+448)(DI), Z27, Z10; \
	VCVTDQ2PS   Z10, Z10;                \
	VMULPS.BCST (OFF+576)(DI), Z9, Z11;  \
	VFMADD231PS Z11, Z10, ACC

// TQ1CONSTS loads the constants and masks of the TQ1_0 kernels.
#define TQ1CONSTS \
	MOVL         $0x03030303, AX;         \
	VPBROADCASTD AX, Z31;                 \
	MOVL         $0x01010101, AX;         \
	VPBROADCASTD AX, Z30;                 \
	VPXORD       Z29, Z29, Z29;           \
	MOVQ         $-1, AX;                 \
	KMOVQ        AX, K1;                  \
	MOVQ         $0xffff0000ffff0000, AX; \
	KMOVQ        AX, K2;                  \
	MOVQ         $0xfff00000fff00000, AX; \
	KMOVQ        AX, K3;                  \
	MOVQ         $0xff000000ff000000, AX; \
	KMOVQ        AX, K4;                  \
	MOVQ         $0xf0000000f0000000, AX; \
	KMOVQ        AX, K5

// TQ1HSUM reduces ACC ([row A lanes, row B lanes]) as hsum_float_8 of
// each half: quarters (0+1) and (2+3), then (0+2)+(1+3) within them; the
// sums end in lanes 0 and 8. Z2 is a temporary.
#define TQ1HSUM(ACC) \
	VSHUFF32X4 $0xb1, ACC, ACC, Z2; \
	VADDPS     Z2, ACC, ACC;        \
	VPERMILPS  $0x4e, ACC, Z2;      \
	VADDPS     Z2, ACC, ACC;        \
	VMOVSHDUP  ACC, Z2;             \
	VADDPS     Z2, ACC, ACC

// func dotTQ1_0x2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, aux *byte, dist int)
//
// Rows two at a time: rows 2i and 2i+1 (rowBytes apart) into out[2i],
// out[2i+1]. With rowBytes 0 both halves are the same row (for a last odd
// one; the caller keeps out[0]). BX prefetches the pair's bytes, dist
// ahead, as one stream.
TEXT ·dotTQ1_0x2AVX512(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), R8
	MOVQ         pairs+8(FP), R9
	MOVQ         w+16(FP), R14
	MOVQ         nb+24(FP), R10
	MOVQ         rowBytes+32(FP), R12
	MOVQ         aux+40(FP), R11
	MOVQ         dist+48(FP), BX
	ADDQ         R14, BX
	TQ1CONSTS

tq1pair:
	VPXORD Z1, Z1, Z1
	MOVQ   R11, DI
	MOVQ   R14, SI
	MOVQ   R10, CX

tq1pairblock:
	PREFETCHT0 0(BX)
	PREFETCHT0 64(BX)
	ADDQ       $108, BX
	TQ1CODES
	TQ1D
	TQ1TOK(0, Z1)
	ADDQ       $54, SI
	ADDQ       $640, DI
	DECQ       CX
	JNZ        tq1pairblock

	TQ1HSUM(Z1)
	VMOVSS        X1, (R8)
	VEXTRACTF32X4 $2, Z1, X2
	VMOVSS        X2, 4(R8)
	ADDQ          $8, R8
	LEAQ          (R14)(R12*2), R14
	DECQ          R9
	JNZ           tq1pair
	VZEROUPPER
	RET

// func dotTQ1_0TileAVX512(out *float32, ostride, pairs int, w *byte, nb, rowBytes int, packed *byte)
//
// The prefill tile: pairs of rows × four tokens, each pair's codes
// unpacked once per block for the four. packed holds the four tokens'
// prepTQ1 blocks interleaved (block b of token t at (4b+t)·640);
// out[t·ostride+r]. With rowBytes 0 both rows are the same one. Each
// (row, token) is computed as dotTQ1_0x2AVX512 computes it.
TEXT ·dotTQ1_0TileAVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R13
	MOVQ pairs+16(FP), R15
	MOVQ w+24(FP), R14
	MOVQ nb+32(FP), R10
	MOVQ rowBytes+40(FP), R12
	MOVQ packed+48(FP), R11
	TQ1CONSTS

tq1tilepair:
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	MOVQ   R11, DI
	MOVQ   R14, SI
	MOVQ   R10, CX

tq1tileblock:
	TQ1CODES
	TQ1D
	TQ1TOK(0, Z16)
	TQ1TOK(640, Z17)
	TQ1TOK(1280, Z18)
	TQ1TOK(1920, Z19)
	ADDQ $54, SI
	ADDQ $2560, DI
	DECQ CX
	JNZ  tq1tileblock

	TQ1HSUM(Z16)
	TQ1HSUM(Z17)
	TQ1HSUM(Z18)
	TQ1HSUM(Z19)
	VMOVSS        X16, (R8)
	VEXTRACTF32X4 $2, Z16, X2
	VMOVSS        X2, 4(R8)
	VMOVSS        X17, (R8)(R9*1)
	VEXTRACTF32X4 $2, Z17, X2
	VMOVSS        X2, 4(R8)(R9*1)
	VMOVSS        X18, (R8)(R9*2)
	VEXTRACTF32X4 $2, Z18, X2
	VMOVSS        X2, 4(R8)(R9*2)
	VMOVSS        X19, (R8)(R13*1)
	VEXTRACTF32X4 $2, Z19, X2
	VMOVSS        X2, 4(R8)(R13*1)
	ADDQ          $8, R8
	LEAQ          (R14)(R12*2), R14
	DECQ          R15
	JNZ           tq1tilepair
	VZEROUPPER
	RET
