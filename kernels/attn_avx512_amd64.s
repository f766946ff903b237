//go:build amd64 && !purego

#include "textflag.h"

// The avx512 tier's attention kernels (vecf32.go): the weighted values of
// several heads summed to their outputs in one pass (ValuesF32Heads).

// VLANE sums lane l (0..7) of the 32 of the current head's column block
// and lanes l+8, l+16, l+24 beside it (positions l+8k+32r < n, weight
// times value row, each added with one rounding from +0, in increasing
// r, as LanesF32 sums them), then sets T to their first step of
// ReduceLanes32F32, (lane l + lane l+16) + (lane l+8 + lane l+24).
// CX is the value row l at column DI, R10 n, R14 n-24, R12 8 value
// rows (bytes), R11 the weights of the head; R9, SI, DX, R15 and
// Z0..Z7 are clobbered.
#define VLANE(l, T, full, tail, done) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	MOVQ   $l, R9 \
	MOVQ   CX, SI \
	LEAQ   (4*l)(R11), DX \
	CMPQ   R9, R14 \
	JGE    tail \
full: \
	VBROADCASTSS 0(DX), Z4 \
	VFMADD231PS  (SI), Z4, Z0 \
	VBROADCASTSS 32(DX), Z5 \
	VFMADD231PS  (SI)(R12*1), Z5, Z1 \
	VBROADCASTSS 64(DX), Z6 \
	VFMADD231PS  (SI)(R12*2), Z6, Z2 \
	LEAQ         (SI)(R12*2), R15 \
	VBROADCASTSS 96(DX), Z7 \
	VFMADD231PS  (R15)(R12*1), Z7, Z3 \
	ADDQ         $32, R9 \
	LEAQ         (SI)(R12*4), SI \
	ADDQ         $128, DX \
	CMPQ         R9, R14 \
	JLT          full \
tail: \
	CMPQ         R9, R10 \
	JGE          done \
	VBROADCASTSS 0(DX), Z4 \
	VFMADD231PS  (SI), Z4, Z0 \
	LEAQ         8(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 32(DX), Z5 \
	VFMADD231PS  (SI)(R12*1), Z5, Z1 \
	LEAQ         16(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 64(DX), Z6 \
	VFMADD231PS  (SI)(R12*2), Z6, Z2 \
done: \
	VADDPS Z2, Z0, Z0 \
	VADDPS Z3, Z1, Z1 \
	VADDPS Z1, Z0, T \
	ADDQ   vstride+24(FP), CX

// func valuesF32HeadsAVX512(out *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// For head j < heads and column c < cols (a multiple of 16): out[j·cols+c]
// = the sum over positions t < n of p[j·pstride+4t (bytes)] times element
// c of j's value head in row t (values + t·vstride, the value head
// advancing every group heads, the first after group-g0), in the order of
// LanesF32 of width 32 (a lane per t%32, each term one rounding, from
// +0) and ReduceLanes32F32 (GGML_F32x8_REDUCE's tree) after it: the lanes
// of 16 columns are summed in registers and reduced at once, never
// stored. n > 0.
//
// Registers: R8 the output of head j, R13 its value head, R11 its
// weights, DI the column block (bytes), CX the value row of the lane
// being summed at DI, R10 n, R14 n-24, R12 8·vstride, AX j's place in its
// group, BX the heads left.
TEXT ·valuesF32HeadsAVX512(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), R8
	MOVQ n+8(FP), R10
	LEAQ -24(R10), R14
	MOVQ values+16(FP), R13
	MOVQ vstride+24(FP), R12
	SHLQ $3, R12
	MOVQ p+32(FP), R11
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

vhead:
	XORQ DI, DI

vblock:
	LEAQ (R13)(DI*1), CX
	VLANE(0, Z16, vf0, vt0, vd0)
	VLANE(1, Z17, vf1, vt1, vd1)
	VLANE(2, Z18, vf2, vt2, vd2)
	VLANE(3, Z19, vf3, vt3, vd3)
	VLANE(4, Z20, vf4, vt4, vd4)
	VLANE(5, Z21, vf5, vt5, vd5)
	VLANE(6, Z22, vf6, vt6, vd6)
	VLANE(7, Z23, vf7, vt7, vd7)
	VADDPS Z20, Z16, Z16
	VADDPS Z21, Z17, Z17
	VADDPS Z17, Z16, Z16
	VADDPS Z22, Z18, Z18
	VADDPS Z23, Z19, Z19
	VADDPS Z19, Z18, Z18
	VADDPS Z18, Z16, Z16
	VMOVUPS Z16, (R8)(DI*1)
	ADDQ $64, DI
	MOVQ cols+56(FP), R9
	SHLQ $2, R9
	CMPQ DI, R9
	JLT  vblock
	ADDQ R9, R8
	ADDQ pstride+40(FP), R11
	INCQ AX
	CMPQ AX, group+64(FP)
	JLT  vsame
	XORQ AX, AX
	ADDQ R9, R13

vsame:
	DECQ BX
	JNZ  vhead
	VZEROUPPER
	RET
