//go:build amd64 && !purego

#include "textflag.h"

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
