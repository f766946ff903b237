//go:build amd64 && !purego

#include "textflag.h"

// func dotQ8_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)
//
// Q8_0 block: fp16 d, int8 qs[32] (34 bytes). For each row the kernel sums
// fp32(dw)*fp32(da)*Σ w·a over the blocks, two blocks per iteration into
// two accumulators. The signed×signed byte product uses the sign trick:
// |w| (unsigned) × a·sign(w) (signed) with VPMADDUBSW, then VPMADDWD by 1.
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

row:
	VXORPS Y0, Y0, Y0 // accumulator, even blocks
	VXORPS Y8, Y8, Y8 // accumulator, odd blocks
	MOVQ R11, DI
	MOVQ R10, CX

pair:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 1024(SI)

	VMOVDQU 2(SI), Y1
	VMOVDQU 2(DI), Y2
	VPSIGNB Y1, Y2, Y2  // a·sign(w)
	VPABSB  Y1, Y1      // |w|
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	MOVWLZX (SI), AX
	MOVWLZX (DI), BX
	VMOVD AX, X3
	VMOVD BX, X4
	VCVTPH2PS X3, X3
	VCVTPH2PS X4, X4
	VMULSS X4, X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS Y3, Y1, Y0

	VMOVDQU 36(SI), Y9
	VMOVDQU 36(DI), Y10
	VPSIGNB Y9, Y10, Y10
	VPABSB  Y9, Y9
	VPMADDUBSW Y10, Y9, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	MOVWLZX 34(SI), AX
	MOVWLZX 34(DI), BX
	VMOVD AX, X11
	VMOVD BX, X12
	VCVTPH2PS X11, X11
	VCVTPH2PS X12, X12
	VMULSS X12, X11, X11
	VBROADCASTSS X11, Y11
	VFMADD231PS Y11, Y9, Y8

	ADDQ $68, SI
	ADDQ $68, DI
	SUBQ $2, CX
	JMP  pair

single:
	TESTQ CX, CX
	JZ    reduce
	VMOVDQU 2(SI), Y1
	VMOVDQU 2(DI), Y2
	VPSIGNB Y1, Y2, Y2
	VPABSB  Y1, Y1
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	MOVWLZX (SI), AX
	MOVWLZX (DI), BX
	VMOVD AX, X3
	VMOVD BX, X4
	VCVTPH2PS X3, X3
	VCVTPH2PS X4, X4
	VMULSS X4, X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ $34, SI

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
