//go:build amd64 && !purego

#include "textflag.h"

// func maxAVX2(x *float32, n int) float32
// Four accumulators of 8 lanes, each lane the maximum of the values seen
// in it. VMAXPS returns its second source when either is NaN, so with
// the accumulator as second source a NaN value leaves it as it was.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0xff800000, AX // -Inf
	MOVQ AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	LEAQ (SI)(CX*4), CX

loop:
	CMPQ SI, CX
	JAE  reduce
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS  Y0, Y4, Y0
	VMAXPS  Y1, Y5, Y1
	VMAXPS  Y2, Y6, Y2
	VMAXPS  Y3, Y7, Y3
	ADDQ    $128, SI
	JMP     loop

reduce:
	// No NaN in the accumulators: any order gives the maximum.
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

// func findAVX2(x *float32, n int, v float32) int
// 32 values a round: four equality masks (ordered: NaN equals nothing),
// ORed to test them at once; then the first set lane of the first mask
// that has one.
TEXT ·findAVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS v+16(FP), Y0
	XORQ         DX, DX
	MOVQ         CX, BX
	ANDQ         $-32, BX

round:
	CMPQ   DX, BX
	JAE    eights
	VCMPPS $0, (SI)(DX*4), Y0, Y1
	VCMPPS $0, 32(SI)(DX*4), Y0, Y2
	VCMPPS $0, 64(SI)(DX*4), Y0, Y3
	VCMPPS $0, 96(SI)(DX*4), Y0, Y4
	VORPS  Y1, Y2, Y5
	VORPS  Y3, Y4, Y6
	VORPS  Y5, Y6, Y5
	VPTEST Y5, Y5
	JNZ    which
	ADDQ   $32, DX
	JMP    round

which:
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $8, DX
	VMOVMSKPS Y2, AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $8, DX
	VMOVMSKPS Y3, AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $8, DX
	VMOVMSKPS Y4, AX
	JMP       found

eights:
	CMPQ      DX, CX
	JAE       done
	VCMPPS    $0, (SI)(DX*4), Y0, Y1
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $8, DX
	JMP       eights

found:
	BSFL AX, AX
	ADDQ AX, DX

done:
	VZEROUPPER
	MOVQ DX, ret+24(FP)
	RET
