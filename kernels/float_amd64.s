//go:build amd64 && !purego

#include "textflag.h"

// The float kernels follow ggml_vec_dot_f32/_f16 on AVX2+FMA: four 8-lane
// FMA accumulators over chunks of 32 elements, reduced as (a0+a2)+(a1+a3),
// then the two 128-bit halves, then two horizontal adds. The tail of a row
// that is not a multiple of 32 is left to the Go caller.

// REDUCE sums Y0..Y3 into X0 and stores it at (R8).
#define REDUCE \
	VADDPS Y2, Y0, Y0 \
	VADDPS Y3, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0 \
	VMOVSS X0, (R8)

// func dotF32AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ act+40(FP), R11

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, BX
	MOVQ R11, DI
	MOVQ R10, CX
	TESTQ CX, CX
	JZ   done

chunk:
	PREFETCHT0 8192(BX)
	VMOVUPS 0(BX), Y4
	VMOVUPS 32(BX), Y5
	VMOVUPS 64(BX), Y6
	VMOVUPS 96(BX), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, BX
	ADDQ $128, DI
	DECQ CX
	JNZ  chunk

done:
	REDUCE
	ADDQ $4, R8
	ADDQ R12, SI
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET

// func dotF16AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ act+40(FP), R11

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, BX
	MOVQ R11, DI
	MOVQ R10, CX
	TESTQ CX, CX
	JZ   done

chunk:
	PREFETCHT0 8192(BX)
	VCVTPH2PS 0(BX), Y4
	VCVTPH2PS 16(BX), Y5
	VCVTPH2PS 32(BX), Y6
	VCVTPH2PS 48(BX), Y7
	VCVTPH2PS 0(DI), Y8
	VCVTPH2PS 16(DI), Y9
	VCVTPH2PS 32(DI), Y10
	VCVTPH2PS 48(DI), Y11
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y9, Y5, Y1
	VFMADD231PS Y10, Y6, Y2
	VFMADD231PS Y11, Y7, Y3
	ADDQ $64, BX
	ADDQ $64, DI
	DECQ CX
	JNZ  chunk

done:
	REDUCE
	ADDQ $4, R8
	ADDQ R12, SI
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET

// func dotBF16AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)
//
// act here is the activation already widened to float32 (prepBF16). As
// ggml_vec_dot_bf16 on AVX2, products and sums are separate roundings and
// the reduction is (a0+a2)+(a1+a3), halves, then pairs.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ act+40(FP), R11

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, BX
	MOVQ R11, DI
	MOVQ R10, CX
	TESTQ CX, CX
	JZ   done

chunk:
	PREFETCHT0 8192(BX)
	VPMOVZXWD 0(BX), Y4
	VPMOVZXWD 16(BX), Y5
	VPMOVZXWD 32(BX), Y6
	VPMOVZXWD 48(BX), Y7
	VPSLLD $16, Y4, Y4
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VPSLLD $16, Y7, Y7
	VMULPS 0(DI), Y4, Y4
	VMULPS 32(DI), Y5, Y5
	VMULPS 64(DI), Y6, Y6
	VMULPS 96(DI), Y7, Y7
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	ADDQ $64, BX
	ADDQ $128, DI
	DECQ CX
	JNZ  chunk

done:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ R12, SI
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET
