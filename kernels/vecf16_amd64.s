//go:build amd64 && !purego

#include "textflag.h"

// f16idx holds the lane numbers 0..31, to build the masks of a partial
// chunk.
DATA f16idx<>+0(SB)/4, $0
DATA f16idx<>+4(SB)/4, $1
DATA f16idx<>+8(SB)/4, $2
DATA f16idx<>+12(SB)/4, $3
DATA f16idx<>+16(SB)/4, $4
DATA f16idx<>+20(SB)/4, $5
DATA f16idx<>+24(SB)/4, $6
DATA f16idx<>+28(SB)/4, $7
DATA f16idx<>+32(SB)/4, $8
DATA f16idx<>+36(SB)/4, $9
DATA f16idx<>+40(SB)/4, $10
DATA f16idx<>+44(SB)/4, $11
DATA f16idx<>+48(SB)/4, $12
DATA f16idx<>+52(SB)/4, $13
DATA f16idx<>+56(SB)/4, $14
DATA f16idx<>+60(SB)/4, $15
DATA f16idx<>+64(SB)/4, $16
DATA f16idx<>+68(SB)/4, $17
DATA f16idx<>+72(SB)/4, $18
DATA f16idx<>+76(SB)/4, $19
DATA f16idx<>+80(SB)/4, $20
DATA f16idx<>+84(SB)/4, $21
DATA f16idx<>+88(SB)/4, $22
DATA f16idx<>+92(SB)/4, $23
DATA f16idx<>+96(SB)/4, $24
DATA f16idx<>+100(SB)/4, $25
DATA f16idx<>+104(SB)/4, $26
DATA f16idx<>+108(SB)/4, $27
DATA f16idx<>+112(SB)/4, $28
DATA f16idx<>+116(SB)/4, $29
DATA f16idx<>+120(SB)/4, $30
DATA f16idx<>+124(SB)/4, $31
GLOBL f16idx<>(SB), RODATA|NOPTR, $128

// func roundF16AVX2(x *float32, n int)
// x[i] = the nearest half-precision value, ties to even; n is a multiple
// of 8.
TEXT ·roundF16AVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX

round8:
	VMOVUPS (DI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  round8
	VZEROUPPER
	RET

// func f16FromF32AVX2(dst *uint16, src *float32, n int)
// dst[i] = src[i] in half precision, ties to even; n is a multiple of 8.
TEXT ·f16FromF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

conv8:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JNZ  conv8
	VZEROUPPER
	RET

// PART adds group g (lanes 8g..8g+7) of a partial chunk into accumulator
// acc: the f16 elements at 16g(BX) times the float32 ones at 32g(R14),
// fused, kept only in the lanes below rem (mask).
#define PART(g, acc, mask) \
	VCVTPH2PS (16*g)(BX), Y4 \
	VMOVAPS acc, Y5 \
	VFMADD231PS (32*g)(R14), Y4, Y5 \
	VBLENDVPS mask, Y5, acc, acc

// func dotF16F32AVX2(out *float32, rows int, w *uint16, chunks, rowBytes int, x *float32, rem int, tail *float32, pf int)
// For each row: four 8-lane accumulators, acc_j += w[32c+8j..] · x[32c+8j..]
// fused, over chunks chunks of 32; then, when rem > 0, the partial chunk
// of rem elements with its x from tail (the row's w read in whole groups
// of 8); then GGML_F32x8_REDUCE: (a0+a2)+(a1+a3), halves, two hadds.
// Each chunk prefetches the line pf bytes after its w.
TEXT ·dotF16F32AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ x+40(FP), R11
	MOVQ rem+48(FP), R13
	MOVQ tail+56(FP), R14
	MOVQ pf+64(FP), R15

	// Masks of the lanes below rem in each group of a partial chunk.
	MOVQ R13, X12
	VPBROADCASTD X12, Y12
	LEAQ f16idx<>(SB), AX
	VPCMPGTD 0(AX), Y12, Y8
	VPCMPGTD 32(AX), Y12, Y9
	VPCMPGTD 64(AX), Y12, Y10
	VPCMPGTD 96(AX), Y12, Y11

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, BX
	MOVQ R11, DI
	MOVQ R10, CX
	TESTQ CX, CX
	JZ   part

chunk:
	PREFETCHT0 (BX)(R15*1)
	VCVTPH2PS 0(BX), Y4
	VCVTPH2PS 16(BX), Y5
	VCVTPH2PS 32(BX), Y6
	VCVTPH2PS 48(BX), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, BX
	ADDQ $128, DI
	DECQ CX
	JNZ  chunk

part:
	TESTQ R13, R13
	JZ    reduce
	PART(0, Y0, Y8)
	CMPQ R13, $8
	JLE  reduce
	PART(1, Y1, Y9)
	CMPQ R13, $16
	JLE  reduce
	PART(2, Y2, Y10)
	CMPQ R13, $24
	JLE  reduce
	PART(3, Y3, Y11)

reduce:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ R12, SI
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET
