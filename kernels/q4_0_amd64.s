//go:build amd64 && !purego

#include "textflag.h"

// Q4_0 block: fp16 d, uint8 qs[16] (18 bytes); element j is (qs[j]&15)-8
// and element j+16 is (qs[j]>>4)-8. The nibbles are multiplied unsigned
// with VPMADDUBSW and the bias is taken off as 8·Σa, also with VPMADDUBSW.

// BLOCK computes one Q4_0×Q8_0 block at weight offset woff and activation
// offset aoff and accumulates it into acc, using t1..t4 as scratch.
#define BLOCK(woff, aoff, acc, y1, x1, y2, x2, x3, x4) \
	VMOVDQU woff+2(SI), x1 \
	VPSRLW $4, x1, x2 \
	VINSERTI128 $1, x2, y1, y1 \
	VPAND Y14, y1, y1 \
	VMOVDQU aoff+2(DI), y2 \
	VPMADDUBSW y2, y1, y1 \
	VPMADDUBSW y2, Y13, y2 \
	VPSUBW y2, y1, y1 \
	VPMADDWD Y15, y1, y1 \
	VCVTDQ2PS y1, y1 \
	MOVWLZX woff(SI), AX \
	MOVWLZX aoff(DI), BX \
	VMOVD AX, x3 \
	VMOVD BX, x4 \
	VCVTPH2PS x3, x3 \
	VCVTPH2PS x4, x4 \
	VMULSS x4, x3, x3 \
	VBROADCASTSS x3, y2 \
	VFMADD231PS y2, y1, acc

// func dotQ4_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask
	MOVL $0x08080808, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13 // bias 8

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	MOVQ R11, DI
	MOVQ R10, CX

pair:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 1024(SI)
	BLOCK(0, 0, Y0, Y1, X1, Y2, X2, X3, X4)
	BLOCK(18, 34, Y8, Y9, X9, Y10, X10, X11, X12)
	ADDQ $36, SI
	ADDQ $68, DI
	SUBQ $2, CX
	JMP  pair

single:
	TESTQ CX, CX
	JZ    reduce
	BLOCK(0, 0, Y0, Y1, X1, Y2, X2, X3, X4)
	ADDQ $18, SI

reduce:
	VADDPS Y8, Y0, Y0
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
