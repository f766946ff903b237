//go:build amd64 && !purego

#include "textflag.h"

// func dotF32AVX512(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte, ahead int)
//
// dotF32AVX2 with two of ggml_vec_dot_f32's four 8-lane accumulators per
// zmm (Z0: a0, a1; Z1: a2, a3: each lane sees the elements its ymm lane
// does), reduced in ggml's order: (a0+a2)+(a1+a3), then the halves, then
// two horizontal adds. Each row is one stream, prefetched ahead bytes
// ahead.
TEXT ·dotF32AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ act+40(FP), R11
	MOVQ ahead+48(FP), R13

f32zrow:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ SI, BX
	MOVQ R11, DI
	MOVQ R10, CX
	TESTQ CX, CX
	JZ   f32zdone

f32zchunk:
	PREFETCHT0 0(BX)(R13*1)
	PREFETCHT0 64(BX)(R13*1)
	VMOVUPS 0(BX), Z4
	VMOVUPS 64(BX), Z5
	VFMADD231PS 0(DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	ADDQ $128, BX
	ADDQ $128, DI
	DECQ CX
	JNZ  f32zchunk

f32zdone:
	VADDPS Z1, Z0, Z0 // [a0+a2 | a1+a3]
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ R12, SI
	DECQ R9
	JNZ  f32zrow
	VZEROUPPER
	RET
