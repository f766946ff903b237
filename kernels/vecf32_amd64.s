//go:build amd64 && !purego

#include "textflag.h"

// func axpyF32AVX2(y, x *float32, n int, a float32)
// y[i] = x[i]*a + y[i] with one rounding (VFMADD231), 8 lanes at a time,
// then one element at a time.
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-28
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y0

loop8:
	CMPQ CX, $8
	JLT  tail
	VMOVUPS (SI), Y1
	VMOVUPS (DI), Y2
	VFMADD231PS Y1, Y0, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

tail:
	TESTQ CX, CX
	JZ   done
	VMOVSS (SI), X1
	VMOVSS (DI), X2
	VFMADD231SS X1, X0, X2
	VMOVSS X2, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	RET
