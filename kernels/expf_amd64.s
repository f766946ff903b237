//go:build amd64 && !purego

#include "textflag.h"

// ggml_v_expf (AVX2+FMA) instruction for instruction, so that every lane
// equals expf8 in expf.go, and the SiLU and softmax loops of ggml around it.
// expk holds each constant in all 8 lanes.

// 0: r = 1.5·2²³
DATA expk<>+0(SB)/8, $0x4b4000004b400000
DATA expk<>+8(SB)/8, $0x4b4000004b400000
DATA expk<>+16(SB)/8, $0x4b4000004b400000
DATA expk<>+24(SB)/8, $0x4b4000004b400000
// 32: log2 e
DATA expk<>+32(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expk<>+40(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expk<>+48(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expk<>+56(SB)/8, $0x3fb8aa3b3fb8aa3b
// 64: ln 2, high part
DATA expk<>+64(SB)/8, $0x3f3172003f317200
DATA expk<>+72(SB)/8, $0x3f3172003f317200
DATA expk<>+80(SB)/8, $0x3f3172003f317200
DATA expk<>+88(SB)/8, $0x3f3172003f317200
// 96: ln 2, low part
DATA expk<>+96(SB)/8, $0x35bfbe8e35bfbe8e
DATA expk<>+104(SB)/8, $0x35bfbe8e35bfbe8e
DATA expk<>+112(SB)/8, $0x35bfbe8e35bfbe8e
DATA expk<>+120(SB)/8, $0x35bfbe8e35bfbe8e
// 128: 1.0
DATA expk<>+128(SB)/8, $0x3f8000003f800000
DATA expk<>+136(SB)/8, $0x3f8000003f800000
DATA expk<>+144(SB)/8, $0x3f8000003f800000
DATA expk<>+152(SB)/8, $0x3f8000003f800000
// 160: |x| mask
DATA expk<>+160(SB)/8, $0x7fffffff7fffffff
DATA expk<>+168(SB)/8, $0x7fffffff7fffffff
DATA expk<>+176(SB)/8, $0x7fffffff7fffffff
DATA expk<>+184(SB)/8, $0x7fffffff7fffffff
// 192: 126.0
DATA expk<>+192(SB)/8, $0x42fc000042fc0000
DATA expk<>+200(SB)/8, $0x42fc000042fc0000
DATA expk<>+208(SB)/8, $0x42fc000042fc0000
DATA expk<>+216(SB)/8, $0x42fc000042fc0000
// 224: c0 = 0x1.0e4020p-7
DATA expk<>+224(SB)/8, $0x3c0720103c072010
DATA expk<>+232(SB)/8, $0x3c0720103c072010
DATA expk<>+240(SB)/8, $0x3c0720103c072010
DATA expk<>+248(SB)/8, $0x3c0720103c072010
// 256: c1 = 0x1.573e2ep-5
DATA expk<>+256(SB)/8, $0x3d2b9f173d2b9f17
DATA expk<>+264(SB)/8, $0x3d2b9f173d2b9f17
DATA expk<>+272(SB)/8, $0x3d2b9f173d2b9f17
DATA expk<>+280(SB)/8, $0x3d2b9f173d2b9f17
// 288: c2 = 0x1.555e66p-3
DATA expk<>+288(SB)/8, $0x3e2aaf333e2aaf33
DATA expk<>+296(SB)/8, $0x3e2aaf333e2aaf33
DATA expk<>+304(SB)/8, $0x3e2aaf333e2aaf33
DATA expk<>+312(SB)/8, $0x3e2aaf333e2aaf33
// 320: c3 = 0x1.fffdb6p-2
DATA expk<>+320(SB)/8, $0x3efffedb3efffedb
DATA expk<>+328(SB)/8, $0x3efffedb3efffedb
DATA expk<>+336(SB)/8, $0x3efffedb3efffedb
DATA expk<>+344(SB)/8, $0x3efffedb3efffedb
// 352: c4 = 0x1.ffffecp-1
DATA expk<>+352(SB)/8, $0x3f7ffff63f7ffff6
DATA expk<>+360(SB)/8, $0x3f7ffff63f7ffff6
DATA expk<>+368(SB)/8, $0x3f7ffff63f7ffff6
DATA expk<>+376(SB)/8, $0x3f7ffff63f7ffff6
// 384: 0x82000000
DATA expk<>+384(SB)/8, $0x8200000082000000
DATA expk<>+392(SB)/8, $0x8200000082000000
DATA expk<>+400(SB)/8, $0x8200000082000000
DATA expk<>+408(SB)/8, $0x8200000082000000
// 416: 0x7f000000
DATA expk<>+416(SB)/8, $0x7f0000007f000000
DATA expk<>+424(SB)/8, $0x7f0000007f000000
DATA expk<>+432(SB)/8, $0x7f0000007f000000
DATA expk<>+440(SB)/8, $0x7f0000007f000000
// 448: 192.0
DATA expk<>+448(SB)/8, $0x4340000043400000
DATA expk<>+456(SB)/8, $0x4340000043400000
DATA expk<>+464(SB)/8, $0x4340000043400000
DATA expk<>+472(SB)/8, $0x4340000043400000
// 480: lane mask: all ones
DATA expk<>+480(SB)/8, $0xffffffffffffffff
DATA expk<>+488(SB)/8, $0xffffffffffffffff
DATA expk<>+496(SB)/8, $0xffffffffffffffff
DATA expk<>+504(SB)/8, $0xffffffffffffffff
// 512: lane mask: zeros
DATA expk<>+512(SB)/8, $0x0000000000000000
DATA expk<>+520(SB)/8, $0x0000000000000000
DATA expk<>+528(SB)/8, $0x0000000000000000
DATA expk<>+536(SB)/8, $0x0000000000000000
GLOBL expk<>(SB), RODATA|NOPTR, $544

// EXPCORE starts ggml_v_expf of Y0: n in Y2, the exponent bits e in Y4,
// k = 2ⁿ in Y5, the mask |n| > 126 in Y6 and the polynomial j in Y8. It
// uses Y0..Y10.
#define EXPCORE \
	VMOVUPS expk<>+0(SB), Y1 \
	VFMADD231PS expk<>+32(SB), Y0, Y1 \
	VSUBPS expk<>+0(SB), Y1, Y2 \
	VMOVAPS Y0, Y3 \
	VFNMADD231PS expk<>+64(SB), Y2, Y3 \
	VFNMADD231PS expk<>+96(SB), Y2, Y3 \
	VPSLLD $23, Y1, Y4 \
	VPADDD expk<>+128(SB), Y4, Y5 \
	VANDPS expk<>+160(SB), Y2, Y6 \
	VCMPPS $0x1e, expk<>+192(SB), Y6, Y6 \
	VMULPS Y3, Y3, Y7 \
	VMOVUPS expk<>+224(SB), Y8 \
	VFMADD213PS expk<>+256(SB), Y3, Y8 \
	VMOVUPS expk<>+288(SB), Y9 \
	VFMADD213PS expk<>+320(SB), Y3, Y9 \
	VFMADD213PS Y9, Y7, Y8 \
	VMULPS expk<>+352(SB), Y3, Y10 \
	VFMADD213PS Y10, Y7, Y8

// EXPFAST finishes when no lane has |n| > 126: Y8 = fma(j, k, k).
#define EXPFAST \
	VFMADD213PS Y5, Y5, Y8

// EXPSLOW finishes otherwise, selecting per lane between fma(j, k, k), the
// scaled fma(s2, j, s2)·s1 and, for |n| > 192, s1·s1. Result in Y8; uses
// Y9..Y13.
#define EXPSLOW \
	VXORPS Y9, Y9, Y9 \
	VCMPPS $0x12, Y9, Y2, Y9 \
	VANDPS expk<>+384(SB), Y9, Y9 \
	VPADDD expk<>+416(SB), Y9, Y10 \
	VPSUBD Y9, Y4, Y11 \
	VANDPS expk<>+160(SB), Y2, Y12 \
	VCMPPS $0x1e, expk<>+448(SB), Y12, Y12 \
	VMULPS Y10, Y10, Y13 \
	VFMADD213PS Y11, Y8, Y11 \
	VMULPS Y10, Y11, Y11 \
	VFMADD213PS Y5, Y5, Y8 \
	VANDPS Y6, Y11, Y11 \
	VANDNPS Y8, Y6, Y9 \
	VORPS Y9, Y11, Y11 \
	VANDPS Y12, Y13, Y13 \
	VANDNPS Y11, Y12, Y11 \
	VORPS Y13, Y11, Y8

// HSUM sets X9 to the sum of Y8's lanes as hsum_float_8: upper half onto
// lower, upper pair onto lower, then lane 1 onto lane 0. Uses X10.
#define HSUM \
	VEXTRACTF128 $1, Y8, X9 \
	VADDPS X9, X8, X9 \
	VMOVHLPS X9, X9, X10 \
	VADDPS X10, X9, X9 \
	VMOVSHDUP X9, X10 \
	VADDSS X10, X9, X9

// func siluAVX2(dst, x *float32, n int)
// dst[i] = x[i]/(1+v_expf(0-x[i])) for n > 0 a multiple of 8.
TEXT ·siluAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

loop:
	VMOVUPS (SI), Y15
	VXORPS Y0, Y0, Y0
	VSUBPS Y15, Y0, Y0
	EXPCORE
	VMOVMSKPS Y6, AX
	TESTL AX, AX
	JNZ   slow
	EXPFAST
	JMP   store

slow:
	EXPSLOW

store:
	VADDPS expk<>+128(SB), Y8, Y8
	VDIVPS Y8, Y15, Y8
	VMOVUPS Y8, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  loop
	VZEROUPPER
	RET

// func expSubAVX2(dst, x *float32, n int, max float32) float64
// dst[i] = v_expf(x[i]-max) for n > 0 elements; returns the sum of the
// groups' hsums, each added in float64, a last partial group with its
// missing lanes as +0.
TEXT ·expSubAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS max+24(FP), Y15
	VXORPD X14, X14, X14

full:
	CMPQ CX, $8
	JLT  partial
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	EXPCORE
	VMOVMSKPS Y6, AX
	TESTL AX, AX
	JNZ   fullslow
	EXPFAST
	JMP   fullsum

fullslow:
	EXPSLOW

fullsum:
	VMOVUPS Y8, (DI)
	HSUM
	VCVTSS2SD X9, X9, X9
	VADDSD X9, X14, X14
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  full

partial:
	TESTQ CX, CX
	JZ    done
	// R8 = the mask of the first CX lanes: 8-CX all-ones lanes before
	// expk+512.
	LEAQ expk<>+512(SB), R8
	SHLQ $2, CX
	SUBQ CX, R8
	VMOVUPS (R8), Y1
	VMASKMOVPS (SI), Y1, Y0
	VSUBPS Y15, Y0, Y0
	EXPCORE
	VMOVMSKPS Y6, AX
	TESTL AX, AX
	JNZ   partslow
	EXPFAST
	JMP   partsum

partslow:
	EXPSLOW

partsum:
	VMOVUPS (R8), Y1
	VANDPS Y1, Y8, Y8
	VMASKMOVPS Y8, Y1, (DI)
	HSUM
	VCVTSS2SD X9, X9, X9
	VADDSD X9, X14, X14

done:
	VMOVSD X14, ret+32(FP)
	VZEROUPPER
	RET
