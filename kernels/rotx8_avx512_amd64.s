//go:build amd64 && !purego

#include "textflag.h"
#include "rotx8_amd64.h"

// AVX-512 (F, BW, VBMI, VNNI) kernels of the x8 layouts of QSF's rotated
// types (QSF_Q2Rx8, QSF_Q3Rx8, QSF_Q4Rx8; see rotx8.go), in quant's order,
// with the inner step of rotx8_amd64.h: lane 2r+h of a 512-bit register
// is row r of the group of 8 and half h of the block. Per unit u, the
// codes index the table of T+128 (VPERMB) and VPDPBUSD with the
// activation's quants adds Σ(T+128)·q to the integer sum of the unit's
// sub-block, which starts at −128·Σq, so that it ends as ΣT·q exactly;
// per block, the two sums times their multipliers (VPMULLD) make Iₕ, and
// one convert, multiply and add take the float step. At the end of a
// group acc₀+acc₁ of the eight rows is stored with one instruction.
//
// Each block prefetches the lines of the block 8 KiB on (decodeAhead).
//
// Registers (beside rotx8_amd64.h's): SI the group's blocks (groups
// follow each other), R11 the prepared activation's start, R10 blocks per
// row, CX blocks left, R9 groups left, R8 out; Z12 bytes 3 (QSF_Q3Rx8,
// whose units 6 and 7 merge two chunks' bits).

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

// rotX8Mul is the int32 multipliers 1..16 (VPERMD's table).
DATA rotX8Mul<>+0(SB)/8, $0x0000000200000001
DATA rotX8Mul<>+8(SB)/8, $0x0000000400000003
DATA rotX8Mul<>+16(SB)/8, $0x0000000600000005
DATA rotX8Mul<>+24(SB)/8, $0x0000000800000007
DATA rotX8Mul<>+32(SB)/8, $0x0000000a00000009
DATA rotX8Mul<>+40(SB)/8, $0x0000000c0000000b
DATA rotX8Mul<>+48(SB)/8, $0x0000000e0000000d
DATA rotX8Mul<>+56(SB)/8, $0x000000100000000f
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
	X8_CONSTS(tab)

#define X8_ZERO \
	VPXORQ Z16, Z16, Z16 \
	MOVQ R11, R12 \
	MOVQ R10, CX

// X8_HEAD converts the eight rows' d and multipliers of the block at SI.
#define X8_HEAD \
	VCVTPH2PS 0(SI), Y0 \
	VPMOVZXBD 16(SI), Z1 \
	X8_SCALES

// func dotQ2Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)
TEXT ·dotQ2Rx8AVX512(SB), NOSPLIT, $0-40
	X8_SETUP(rotX8Tab2<>(SB))
groupdotQ2Rx8AVX512:
	X8_ZERO
blockdotQ2Rx8AVX512:
	PREFETCHT0 (8192+0)(SI)
	PREFETCHT0 (8192+64)(SI)
	PREFETCHT0 (8192+128)(SI)
	X8_HEAD
	VMOVDQU64 32(SI), Z2
	VMOVDQU64 96(SI), Z9
	X8_UNITS_Q2(Z2, Z9)
	X8_FINISH
	ADDQ $160, SI
	ADDQ $88, R12
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
	X8_HEAD
	VMOVDQU64 32(SI), Z2
	VMOVDQU64 96(SI), Z9
	VMOVDQU64 160(SI), Z10
	VPERMB Z13, Z2, Z3
	X8_DP(0, Z3, Z17)
	VPSRLW $3, Z2, Z7
	VPERMB Z13, Z7, Z3
	X8_DP(1, Z3, Z17)
	VPERMB Z13, Z9, Z3
	X8_DP(2, Z3, Z17)
	VPSRLW $3, Z9, Z7
	VPERMB Z13, Z7, Z3
	X8_DP(3, Z3, Z17)
	VPERMB Z13, Z10, Z3
	X8_DP(4, Z3, Z18)
	VPSRLW $3, Z10, Z7
	VPERMB Z13, Z7, Z3
	X8_DP(5, Z3, Z18)
	VPSRLW $6, Z2, Z7
	VPSRLW $4, Z10, Z11
	VPTERNLOGD $0xD8, Z12, Z7, Z11
	VPERMB Z13, Z11, Z3
	X8_DP(6, Z3, Z18)
	VPSRLW $6, Z9, Z7
	VPSRLW $5, Z10, Z11
	VPTERNLOGD $0xD8, Z12, Z7, Z11
	VPERMB Z13, Z11, Z3
	X8_DP(7, Z3, Z18)
	X8_FINISH
	ADDQ $224, SI
	ADDQ $88, R12
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
	X8_HEAD
	VMOVDQU64 32(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_DP(0, Z3, Z17)
	X8_DP(1, Z4, Z17)
	VMOVDQU64 96(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_DP(2, Z3, Z17)
	X8_DP(3, Z4, Z17)
	VMOVDQU64 160(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_DP(4, Z3, Z18)
	X8_DP(5, Z4, Z18)
	VMOVDQU64 224(SI), Z2
	VPERMB Z13, Z2, Z3
	VPSRLW $4, Z2, Z2
	VPERMB Z13, Z2, Z4
	X8_DP(6, Z3, Z18)
	X8_DP(7, Z4, Z18)
	X8_FINISH
	ADDQ $288, SI
	ADDQ $88, R12
	DECQ CX
	JNZ blockdotQ4Rx8AVX512
	X8_STORE
	ADDQ $32, R8
	DECQ R9
	JNZ groupdotQ4Rx8AVX512
	VZEROUPPER
	RET
