//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 (F, BW, VBMI, VNNI) kernels of the x8 layouts of QSF's rotated
// types (QSF_Q2Rx8, QSF_Q3Rx8, QSF_Q4Rx8; see rotx8.go), in quant's lane
// order: lane 2r+h of a 512-bit register is row r of the group of 8 and
// half h of the block, and accumulator u (Z16+u) holds acc_h[u] of all
// eight rows. Per block, d of the eight rows converts once (lanes (r, 0)
// and (r, 1) both d_r) and times prepRotX8's da vector gives d·da_h; the
// multipliers 1+m of sub-blocks 2h (Z25) and 2h+1 (Z26) are float32
// looked up (VPERMPS) from the multiplier bytes. Per unit u, the codes
// index a 64-byte table of T+128 (VPERMB, the table repeating so that
// the bits above a code do not matter), VPDPBUSD with the activation's
// quants adds Σ(T+128)·q to −128·Σq, leaving I = ΣT·q exactly, and in
// float32 acc_u += d·da_h·(m·I) (m·I < 2²⁴ is exact, so float32(I)·m is
// float32(m·I)). At the end of a group, hsum_float_8 of acc₀+acc₁ of the
// eight rows is computed across the accumulators and stored with one
// instruction.
//
// Each block prefetches the lines of the block 8 KiB on (decodeAhead).
//
// Registers: SI the group's blocks (groups follow each other), R12 the
// prepared activation (R11 its start), R10 blocks per row, CX blocks
// left, R9 groups left, R8 out; Z13 the code table, Z14 the lane
// duplication of d, Z15 the float32 multipliers 1..16, Z12 bytes 3
// (QSF_Q3Rx8, whose units 6 and 7 merge two chunks' bits).

DATA rotX8Tab2<>+0(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+8(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+16(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+24(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+32(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+40(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+48(SB)/8, $0xffa65a01ffa65a01
DATA rotX8Tab2<>+56(SB)/8, $0xffa65a01ffa65a01
GLOBL rotX8Tab2<>(SB), RODATA|NOPTR, $64

DATA rotX8Tab3<>+0(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+8(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+16(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+24(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+32(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+40(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+48(SB)/8, $0xffcfad8e72533101
DATA rotX8Tab3<>+56(SB)/8, $0xffcfad8e72533101
GLOBL rotX8Tab3<>(SB), RODATA|NOPTR, $64

DATA rotX8Tab4<>+0(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+8(SB)/8, $0xffe0cbbaac9f9286
DATA rotX8Tab4<>+16(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+24(SB)/8, $0xffe0cbbaac9f9286
DATA rotX8Tab4<>+32(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+40(SB)/8, $0xffe0cbbaac9f9286
DATA rotX8Tab4<>+48(SB)/8, $0x7a6e615446352001
DATA rotX8Tab4<>+56(SB)/8, $0xffe0cbbaac9f9286
GLOBL rotX8Tab4<>(SB), RODATA|NOPTR, $64

DATA rotX8Mul<>+0(SB)/8, $0x400000003f800000
DATA rotX8Mul<>+8(SB)/8, $0x4080000040400000
DATA rotX8Mul<>+16(SB)/8, $0x40c0000040a00000
DATA rotX8Mul<>+24(SB)/8, $0x4100000040e00000
DATA rotX8Mul<>+32(SB)/8, $0x4120000041100000
DATA rotX8Mul<>+40(SB)/8, $0x4140000041300000
DATA rotX8Mul<>+48(SB)/8, $0x4160000041500000
DATA rotX8Mul<>+56(SB)/8, $0x4180000041700000
GLOBL rotX8Mul<>(SB), RODATA|NOPTR, $64

DATA rotX8Dup<>+0(SB)/8, $0x0000000000000000
DATA rotX8Dup<>+8(SB)/8, $0x0000000100000001
DATA rotX8Dup<>+16(SB)/8, $0x0000000200000002
DATA rotX8Dup<>+24(SB)/8, $0x0000000300000003
DATA rotX8Dup<>+32(SB)/8, $0x0000000400000004
DATA rotX8Dup<>+40(SB)/8, $0x0000000500000005
DATA rotX8Dup<>+48(SB)/8, $0x0000000600000006
DATA rotX8Dup<>+56(SB)/8, $0x0000000700000007
GLOBL rotX8Dup<>(SB), RODATA|NOPTR, $64

#define X8_SETUP(tab) \
	MOVQ out+0(FP), R8 \
	MOVQ groups+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ nb+24(FP), R10 \
	MOVQ aux+32(FP), R11 \
	VMOVDQU64 tab, Z13 \
	VMOVDQU64 rotX8Dup<>(SB), Z14 \
	VMOVUPS rotX8Mul<>(SB), Z15

#define X8_ZERO \
	VPXORQ Z16, Z16, Z16 \
	VPXORQ Z17, Z17, Z17 \
	VPXORQ Z18, Z18, Z18 \
	VPXORQ Z19, Z19, Z19 \
	VPXORQ Z20, Z20, Z20 \
	VPXORQ Z21, Z21, Z21 \
	VPXORQ Z22, Z22, Z22 \
	VPXORQ Z23, Z23, Z23 \
	MOVQ R11, R12 \
	MOVQ R10, CX

// X8_SCALES: Z24 = d·da_h, Z25 and Z26 the multipliers of sub-blocks 2h
// and 2h+1, per lane 2r+h.
#define X8_SCALES \
	VCVTPH2PS 0(SI), Y0 \
	VPERMPS Z0, Z14, Z0 \
	VBROADCASTSD 128(R12), Z1 \
	VMULPS Z1, Z0, Z24 \
	VPMOVZXBD 16(SI), Z1 \
	VPERMPS Z15, Z1, Z25 \
	VPSRLD $4, Z1, Z1 \
	VPERMPS Z15, Z1, Z26

// X8_UNIT finishes unit u whose table values T+128 are in zu (t, q
// temporaries, m the multipliers, acc the accumulator).
#define X8_UNIT(u, zu, t, q, m, acc) \
	VPBROADCASTQ (64+8*u)(R12), t \
	VPBROADCASTQ (8*u)(R12), q \
	VPDPBUSD q, zu, t \
	VCVTDQ2PS t, t \
	VMULPS m, t, t \
	VMULPS Z24, t, t \
	VADDPS t, acc, acc

// X8_STORE stores hsum_float_8 of acc₀+acc₁ of the eight rows at (R8).
#define X8_STORE \
	VMOVSHDUP Z16, Z0 \
	VADDPS Z0, Z16, Z16 \
	VMOVSHDUP Z17, Z1 \
	VADDPS Z1, Z17, Z17 \
	VMOVSHDUP Z18, Z2 \
	VADDPS Z2, Z18, Z18 \
	VMOVSHDUP Z19, Z3 \
	VADDPS Z3, Z19, Z19 \
	VMOVSHDUP Z20, Z4 \
	VADDPS Z4, Z20, Z20 \
	VMOVSHDUP Z21, Z5 \
	VADDPS Z5, Z21, Z21 \
	VMOVSHDUP Z22, Z6 \
	VADDPS Z6, Z22, Z22 \
	VMOVSHDUP Z23, Z7 \
	VADDPS Z7, Z23, Z23 \
	VADDPS Z20, Z16, Z16 \
	VADDPS Z21, Z17, Z17 \
	VADDPS Z22, Z18, Z18 \
	VADDPS Z23, Z19, Z19 \
	VADDPS Z18, Z16, Z16 \
	VADDPS Z19, Z17, Z17 \
	VADDPS Z17, Z16, Z16 \
	VPMOVQD Z16, Y16 \
	VMOVUPS Y16, (R8)

// func dotQ2Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)
TEXT ·dotQ2Rx8AVX512(SB), NOSPLIT, $0-40
	X8_SETUP(rotX8Tab2<>(SB))
groupdotQ2Rx8AVX512:
	X8_ZERO
blockdotQ2Rx8AVX512:
	PREFETCHT0 (8192+0)(SI)
	PREFETCHT0 (8192+64)(SI)
	PREFETCHT0 (8192+128)(SI)
	X8_SCALES
	VMOVDQU64 32(SI), Z2
	VPERMB Z13, Z2, Z3
	X8_UNIT(0, Z3, Z5, Z8, Z25, Z16)
	VPSRLW $2, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(1, Z3, Z5, Z8, Z25, Z17)
	VPSRLW $4, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(2, Z3, Z5, Z8, Z25, Z18)
	VPSRLW $6, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(3, Z3, Z5, Z8, Z25, Z19)
	VMOVDQU64 96(SI), Z2
	VPERMB Z13, Z2, Z3
	X8_UNIT(4, Z3, Z5, Z8, Z26, Z20)
	VPSRLW $2, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(5, Z3, Z5, Z8, Z26, Z21)
	VPSRLW $4, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(6, Z3, Z5, Z8, Z26, Z22)
	VPSRLW $6, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(7, Z3, Z5, Z8, Z26, Z23)
	ADDQ $160, SI
	ADDQ $136, R12
	DECQ CX
	JNZ blockdotQ2Rx8AVX512
	X8_STORE
	ADDQ $32, R8
	DECQ R9
	JNZ groupdotQ2Rx8AVX512
	VZEROUPPER
	RET

// func dotQ3Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)
TEXT ·dotQ3Rx8AVX512(SB), NOSPLIT, $0-40
	X8_SETUP(rotX8Tab3<>(SB))
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z12
groupdotQ3Rx8AVX512:
	X8_ZERO
blockdotQ3Rx8AVX512:
	PREFETCHT0 (8192+0)(SI)
	PREFETCHT0 (8192+64)(SI)
	PREFETCHT0 (8192+128)(SI)
	PREFETCHT0 (8192+192)(SI)
	X8_SCALES
	VMOVDQU64 32(SI), Z2
	VMOVDQU64 96(SI), Z9
	VMOVDQU64 160(SI), Z10
	VPERMB Z13, Z2, Z3
	X8_UNIT(0, Z3, Z5, Z8, Z25, Z16)
	VPSRLW $3, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(1, Z3, Z5, Z8, Z25, Z17)
	VPERMB Z13, Z9, Z3
	X8_UNIT(2, Z3, Z5, Z8, Z25, Z18)
	VPSRLW $3, Z9, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(3, Z3, Z5, Z8, Z25, Z19)
	VPERMB Z13, Z10, Z3
	X8_UNIT(4, Z3, Z5, Z8, Z26, Z20)
	VPSRLW $3, Z10, Z7
	VPERMB Z13, Z7, Z3
	X8_UNIT(5, Z3, Z5, Z8, Z26, Z21)
	VPSRLW $6, Z2, Z7
	VPSRLW $4, Z10, Z11
	VPTERNLOGD $0xD8, Z12, Z7, Z11
	VPERMB Z13, Z11, Z3
	X8_UNIT(6, Z3, Z5, Z8, Z26, Z22)
	VPSRLW $6, Z9, Z7
	VPSRLW $5, Z10, Z11
	VPTERNLOGD $0xD8, Z12, Z7, Z11
	VPERMB Z13, Z11, Z3
	X8_UNIT(7, Z3, Z5, Z8, Z26, Z23)
	ADDQ $224, SI
	ADDQ $136, R12
	DECQ CX
	JNZ blockdotQ3Rx8AVX512
	X8_STORE
	ADDQ $32, R8
	DECQ R9
	JNZ groupdotQ3Rx8AVX512
	VZEROUPPER
	RET

// func dotQ4Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)
TEXT ·dotQ4Rx8AVX512(SB), NOSPLIT, $0-40
	X8_SETUP(rotX8Tab4<>(SB))
groupdotQ4Rx8AVX512:
	X8_ZERO
blockdotQ4Rx8AVX512:
	PREFETCHT0 (8192+0)(SI)
	PREFETCHT0 (8192+64)(SI)
	PREFETCHT0 (8192+128)(SI)
	PREFETCHT0 (8192+192)(SI)
	PREFETCHT0 (8192+256)(SI)
	X8_SCALES
	VMOVDQU64 32(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_UNIT(0, Z3, Z5, Z8, Z25, Z16)
	X8_UNIT(1, Z4, Z6, Z8, Z25, Z17)
	VMOVDQU64 96(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_UNIT(2, Z3, Z5, Z8, Z25, Z18)
	X8_UNIT(3, Z4, Z6, Z8, Z25, Z19)
	VMOVDQU64 160(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_UNIT(4, Z3, Z5, Z8, Z26, Z20)
	X8_UNIT(5, Z4, Z6, Z8, Z26, Z21)
	VMOVDQU64 224(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_UNIT(6, Z3, Z5, Z8, Z26, Z22)
	X8_UNIT(7, Z4, Z6, Z8, Z26, Z23)
	ADDQ $288, SI
	ADDQ $136, R12
	DECQ CX
	JNZ blockdotQ4Rx8AVX512
	X8_STORE
	ADDQ $32, R8
	DECQ R9
	JNZ groupdotQ4Rx8AVX512
	VZEROUPPER
	RET

