//go:build amd64 && !purego

#include "textflag.h"

// Q8_0 block: fp16 d, int8 qs[32] (34 bytes). The signed×signed byte
// product uses the sign trick, |w| (unsigned) × a·sign(w) (signed) with
// VPMADDUBSW, then VPMADDWD by 1; the activation scale comes prepared as
// eight float32 per block (prepQ8_0).
//
// The floating-point work is ggml's AVX2 vec_dot order, so results match it
// bit for bit: per block acc = fma(fp32(dw)·fp32(da), float(lanes), acc) in
// one 8-lane accumulator, then hsum_float_8.
//
// Registers: SI weights, DI activation quants, DX prepared activation.

#define BLOCK(woff, aoff, poff, acc, y1, y2, x2) \
	VMOVDQU woff+2(SI), y1 \
	VMOVDQU aoff+2(DI), y2 \
	VPSIGNB y1, y2, y2 \
	VPABSB  y1, y1 \
	VPMADDUBSW y2, y1, y1 \
	VPMADDWD Y15, y1, y1 \
	VCVTDQ2PS y1, y1 \
	VPBROADCASTW woff(SI), x2 \
	VCVTPH2PS x2, y2 \
	VMULPS poff(DX), y2, y2 \
	VFMADD231PS y2, y1, acc

// func dotQ8_0AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

row:
	VXORPS Y0, Y0, Y0
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

pair:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 1024(SI)
	BLOCK(0, 0, 0, Y0, Y1, Y2, X2)
	BLOCK(34, 34, 64, Y0, Y9, Y10, X10)
	ADDQ $68, SI
	ADDQ $68, DI
	ADDQ $128, DX
	SUBQ $2, CX
	JMP  pair

single:
	TESTQ CX, CX
	JZ    reduce
	BLOCK(0, 0, 0, Y0, Y1, Y2, X2)
	ADDQ $34, SI

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
