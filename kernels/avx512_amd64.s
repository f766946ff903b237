//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 VNNI kernels (experimental tier "avx512"): two 32-element blocks
// per zmm, VPDPBUSD for the byte products. The activation is prepared per
// pair of blocks (prepQ8_0AVX512, prepQ4_0AVX512) with a zero second block
// when the count is odd, so the tail runs the pair code on one block.
//
// Registers: SI weights, DI prepared activation, Z0 accumulator.

// func dotQ8_0AVX512(out *float32, rows int, w *byte, nb int, aux *byte)
//
// aux per pair (128 bytes): the two blocks' quants, then [da0×8, da1×8].
// The sign trick: |w| unsigned times a negated where w < 0.
TEXT ·dotQ8_0AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ aux+32(FP), R11
	VPXORD Z31, Z31, Z31

row8:
	VPXORD Z0, Z0, Z0
	MOVQ R11, DI
	MOVQ R10, CX
	SHRQ $1, CX
	JZ   tail8

pair8:
	PREFETCHT0 1024(SI)
	VMOVDQU 2(SI), Y1
	VINSERTI64X4 $1, 36(SI), Z1, Z1
	VMOVDQU64 0(DI), Z2
	VPMOVB2M Z1, K1
	VPABSB Z1, Z1
	VPSUBB Z2, Z31, K1, Z2
	VPXORD Z4, Z4, Z4
	VPDPBUSD Z2, Z1, Z4
	VCVTDQ2PS Z4, Z4
	VPBROADCASTW 0(SI), X5
	VPBROADCASTW 34(SI), X6
	VINSERTI128 $1, X6, Y5, Y5
	VCVTPH2PS Y5, Z5
	VMULPS Z5, Z4, Z4
	VFMADD231PS 64(DI), Z4, Z0
	ADDQ $68, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  pair8

tail8:
	TESTQ $1, R10
	JZ    reduce8
	VMOVDQU 2(SI), Y1 // upper half of Z1 zeroed
	VMOVDQU64 0(DI), Z2
	VPMOVB2M Z1, K1
	VPABSB Z1, Z1
	VPSUBB Z2, Z31, K1, Z2
	VPXORD Z4, Z4, Z4
	VPDPBUSD Z2, Z1, Z4
	VCVTDQ2PS Z4, Z4
	VPBROADCASTW 0(SI), X5 // upper lanes zeroed: scale 0
	VCVTPH2PS Y5, Z5
	VMULPS Z5, Z4, Z4
	VFMADD231PS 64(DI), Z4, Z0
	ADDQ $34, SI

reduce8:
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row8
	VZEROUPPER
	RET

// func dotQ4_0AVX512(out *float32, rows int, w *byte, nb int, aux *byte)
//
// A pair's nibbles are arranged [b0 low, b1 low, b0 high, b1 high] (16 bytes
// each); aux per pair (192 bytes) holds the activation in that order, then
// −8·Σ of each dword lane's four activations as int32, then the scales as
// [da0×4, da1×4, da0×4, da1×4].
TEXT ·dotQ4_0AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ aux+32(FP), R11
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14

row4:
	VPXORD Z0, Z0, Z0
	MOVQ R11, DI
	MOVQ R10, CX
	SHRQ $1, CX
	JZ   tail4

pair4:
	PREFETCHT0 1024(SI)
	VMOVDQU 2(SI), X1
	VINSERTI128 $1, 20(SI), Y1, Y1
	VPSRLW $4, Y1, Y2
	VINSERTI64X4 $1, Y2, Z1, Z1
	VPANDD Z14, Z1, Z1
	VMOVDQU64 64(DI), Z4
	VPDPBUSD 0(DI), Z1, Z4
	VCVTDQ2PS Z4, Z4
	VPBROADCASTW 0(SI), X5
	VPBROADCASTW 18(SI), X6
	VPUNPCKLQDQ X6, X5, X5
	VCVTPH2PS X5, Y5
	VINSERTF64X4 $1, Y5, Z5, Z5
	VMULPS Z5, Z4, Z4
	VFMADD231PS 128(DI), Z4, Z0
	ADDQ $36, SI
	ADDQ $192, DI
	DECQ CX
	JNZ  pair4

tail4:
	TESTQ $1, R10
	JZ    reduce4
	VMOVDQU 2(SI), X1 // second block zero
	VPSRLW $4, Y1, Y2
	VINSERTI64X4 $1, Y2, Z1, Z1
	VPANDD Z14, Z1, Z1
	VMOVDQU64 64(DI), Z4
	VPDPBUSD 0(DI), Z1, Z4
	VCVTDQ2PS Z4, Z4
	VPBROADCASTW 0(SI), X5
	VPXOR X6, X6, X6
	VPUNPCKLQDQ X6, X5, X5
	VCVTPH2PS X5, Y5
	VINSERTF64X4 $1, Y5, Z5, Z5
	VMULPS Z5, Z4, Z4
	VFMADD231PS 128(DI), Z4, Z0
	ADDQ $18, SI

reduce4:
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row4
	VZEROUPPER
	RET
