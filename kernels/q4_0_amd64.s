//go:build amd64 && !purego

#include "textflag.h"

// Q4_0 block: fp16 d, uint8 qs[16] (18 bytes); element j is (qs[j]&15)-8
// and element j+16 is (qs[j]>>4)-8. The nibbles are multiplied unsigned
// with VPMADDUBSW and the bias 8·Σa comes from the prepared activation
// (prepQ4_0: per 96-byte block da×8 as float32, then 8·(a[2i]+a[2i+1]) as
// int16, then 8·Σa as int32, unused here).
//
// The floating-point work is ggml's AVX2 vec_dot order, so results match it
// bit for bit: per block acc = fma(fp32(dw)·fp32(da), float(lanes), acc) in
// one 8-lane accumulator, then hsum_float_8.
//
// Registers: SI weights, DI activation quants, DX prepared activation.

// BLOCK computes one Q4_0×Q8_0 block at weight offset woff, activation
// offset aoff and prepared offset poff, and accumulates it into acc.
#define BLOCK(woff, aoff, poff, acc, y1, x1, y2, x2) \
	VMOVDQU woff+2(SI), x1 \
	VPSRLW $4, x1, x2 \
	VINSERTI128 $1, x2, y1, y1 \
	VPAND Y14, y1, y1 \
	VPMADDUBSW aoff+2(DI), y1, y1 \
	VPSUBW poff+32(DX), y1, y1 \
	VPMADDWD Y15, y1, y1 \
	VCVTDQ2PS y1, y1 \
	VPBROADCASTW woff(SI), x2 \
	VCVTPH2PS x2, y2 \
	VMULPS poff(DX), y2, y2 \
	VFMADD231PS y2, y1, acc

// func dotQ4_0AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask

row:
	VXORPS Y0, Y0, Y0
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

pair:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 1024(SI)
	BLOCK(0, 0, 0, Y0, Y1, X1, Y2, X2)
	BLOCK(18, 34, 96, Y0, Y9, X9, Y10, X10)
	ADDQ $36, SI
	ADDQ $68, DI
	ADDQ $192, DX
	SUBQ $2, CX
	JMP  pair

single:
	TESTQ CX, CX
	JZ    reduce
	BLOCK(0, 0, 0, Y0, Y1, X1, Y2, X2)
	ADDQ $18, SI

reduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET
