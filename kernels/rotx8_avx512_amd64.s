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
	VPERMPS Z0, Z14, Z0 \
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
// rotF8Cnt shifts lane 2r+h right by 16+8h: the multiplier byte of half h.
DATA rotF8Cnt<>+0(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+8(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+16(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+24(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+32(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+40(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+48(SB)/8, $0x0000001800000010
DATA rotF8Cnt<>+56(SB)/8, $0x0000001800000010
GLOBL rotF8Cnt<>(SB), RODATA|NOPTR, $64

// rotF8T0 and rotF8T1 take qwords 0, 1 and 2, 3 of four rows from two
// registers of two rows each (VPERMI2Q).
DATA rotF8T0<>+0(SB)/8, $0x0000000000000000
DATA rotF8T0<>+8(SB)/8, $0x0000000000000004
DATA rotF8T0<>+16(SB)/8, $0x0000000000000008
DATA rotF8T0<>+24(SB)/8, $0x000000000000000c
DATA rotF8T0<>+32(SB)/8, $0x0000000000000001
DATA rotF8T0<>+40(SB)/8, $0x0000000000000005
DATA rotF8T0<>+48(SB)/8, $0x0000000000000009
DATA rotF8T0<>+56(SB)/8, $0x000000000000000d
GLOBL rotF8T0<>(SB), RODATA|NOPTR, $64


DATA rotF8T1<>+0(SB)/8, $0x0000000000000002
DATA rotF8T1<>+8(SB)/8, $0x0000000000000006
DATA rotF8T1<>+16(SB)/8, $0x000000000000000a
DATA rotF8T1<>+24(SB)/8, $0x000000000000000e
DATA rotF8T1<>+32(SB)/8, $0x0000000000000003
DATA rotF8T1<>+40(SB)/8, $0x0000000000000007
DATA rotF8T1<>+48(SB)/8, $0x000000000000000b
DATA rotF8T1<>+56(SB)/8, $0x000000000000000f
GLOBL rotF8T1<>(SB), RODATA|NOPTR, $64

// rotF8Even and rotF8Odd take qword 0 and qword 1 of eight rows from two
// registers of four rows each (VPERMI2Q).
DATA rotF8Even<>+0(SB)/8, $0x0000000000000000
DATA rotF8Even<>+8(SB)/8, $0x0000000000000002
DATA rotF8Even<>+16(SB)/8, $0x0000000000000004
DATA rotF8Even<>+24(SB)/8, $0x0000000000000006
DATA rotF8Even<>+32(SB)/8, $0x0000000000000008
DATA rotF8Even<>+40(SB)/8, $0x000000000000000a
DATA rotF8Even<>+48(SB)/8, $0x000000000000000c
DATA rotF8Even<>+56(SB)/8, $0x000000000000000e
GLOBL rotF8Even<>(SB), RODATA|NOPTR, $64


DATA rotF8Odd<>+0(SB)/8, $0x0000000000000001
DATA rotF8Odd<>+8(SB)/8, $0x0000000000000003
DATA rotF8Odd<>+16(SB)/8, $0x0000000000000005
DATA rotF8Odd<>+24(SB)/8, $0x0000000000000007
DATA rotF8Odd<>+32(SB)/8, $0x0000000000000009
DATA rotF8Odd<>+40(SB)/8, $0x000000000000000b
DATA rotF8Odd<>+48(SB)/8, $0x000000000000000d
DATA rotF8Odd<>+56(SB)/8, $0x000000000000000f
GLOBL rotF8Odd<>(SB), RODATA|NOPTR, $64

// rotF8C<a><b> selects (VPMULTISHIFTQB) for byte i of lane 2r+h the
// bits from 32a+8i+4h+2b of qword r: dword a of the qword, nibble h
// (4-bit codes, b = 0) or bit pair 2h+b (2-bit codes).
DATA rotF8C0<>+0(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+8(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+16(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+24(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+32(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+40(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+48(SB)/8, $0x1c140c0418100800
DATA rotF8C0<>+56(SB)/8, $0x1c140c0418100800
GLOBL rotF8C0<>(SB), RODATA|NOPTR, $64


DATA rotF8C1<>+0(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+8(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+16(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+24(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+32(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+40(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+48(SB)/8, $0x3c342c2438302820
DATA rotF8C1<>+56(SB)/8, $0x3c342c2438302820
GLOBL rotF8C1<>(SB), RODATA|NOPTR, $64


DATA rotF8C0s<>+0(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+8(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+16(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+24(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+32(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+40(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+48(SB)/8, $0x1e160e061a120a02
DATA rotF8C0s<>+56(SB)/8, $0x1e160e061a120a02
GLOBL rotF8C0s<>(SB), RODATA|NOPTR, $64


DATA rotF8C1s<>+0(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+8(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+16(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+24(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+32(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+40(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+48(SB)/8, $0x3e362e263a322a22
DATA rotF8C1s<>+56(SB)/8, $0x3e362e263a322a22
GLOBL rotF8C1s<>(SB), RODATA|NOPTR, $64

// rotF8Hi3 is, for unit u at 64u, the selection of bit 32h+4u+i of
// qword r (QSF_Q3R's high bits) into bit 2 of byte i of lane 2r+h.
DATA rotF8Hi3<>+0(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+8(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+16(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+24(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+32(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+40(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+48(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+56(SB)/8, $0x21201f1e01003f3e
DATA rotF8Hi3<>+64(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+72(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+80(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+88(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+96(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+104(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+112(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+120(SB)/8, $0x2524232205040302
DATA rotF8Hi3<>+128(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+136(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+144(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+152(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+160(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+168(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+176(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+184(SB)/8, $0x2928272609080706
DATA rotF8Hi3<>+192(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+200(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+208(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+216(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+224(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+232(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+240(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+248(SB)/8, $0x2d2c2b2a0d0c0b0a
DATA rotF8Hi3<>+256(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+264(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+272(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+280(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+288(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+296(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+304(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+312(SB)/8, $0x31302f2e11100f0e
DATA rotF8Hi3<>+320(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+328(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+336(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+344(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+352(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+360(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+368(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+376(SB)/8, $0x3534333215141312
DATA rotF8Hi3<>+384(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+392(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+400(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+408(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+416(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+424(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+432(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+440(SB)/8, $0x3938373619181716
DATA rotF8Hi3<>+448(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+456(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+464(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+472(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+480(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+488(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+496(SB)/8, $0x3d3c3b3a1d1c1b1a
DATA rotF8Hi3<>+504(SB)/8, $0x3d3c3b3a1d1c1b1a
GLOBL rotF8Hi3<>(SB), RODATA|NOPTR, $512

// rotF8Three is bytes 3.
DATA rotF8Three<>+0(SB)/8, $0x0303030303030303
DATA rotF8Three<>+8(SB)/8, $0x0303030303030303
DATA rotF8Three<>+16(SB)/8, $0x0303030303030303
DATA rotF8Three<>+24(SB)/8, $0x0303030303030303
DATA rotF8Three<>+32(SB)/8, $0x0303030303030303
DATA rotF8Three<>+40(SB)/8, $0x0303030303030303
DATA rotF8Three<>+48(SB)/8, $0x0303030303030303
DATA rotF8Three<>+56(SB)/8, $0x0303030303030303
GLOBL rotF8Three<>(SB), RODATA|NOPTR, $64

// The file layout's 8-row kernels (dotQ2RF8AVX512, dotQ3RF8AVX512,
// dotQ4RF8AVX512) multiply groups of 8 rows of a QSF_Q2R, QSF_Q3R or
// QSF_Q4R matrix in the file's layout: rows r..r+7 are eight streams, and
// each block's codes are rearranged in registers into the x8 kernels' form
// before the same inner step (rotx8_amd64.h). The eight rows' headers (d
// and the multipliers, one dword a row) are broadcast and blended; the
// code bytes of the eight rows are loaded, two rows a register, and
// transposed into registers Q_k whose qword r is qword k of row r's codes
// (VPERMI2Q, VSHUFI64X2), and one VPMULTISHIFTQB per unit picks, for each
// byte i of lane 2r+h, the bits of the code of row r, element 32h+4u+i
// into the byte's low bits (the bits above do not matter to the table).
// QSF_Q3R's high bits (the qh qword of each row, a third Q) are picked the
// same way into bit 2 and merged (VPTERNLOGD).
//
// Each block prefetches the eight rows' block of the group after the
// next, which is one run of memory (a group's rows follow each other):
// one group ahead (9 KiB for 2048 columns of QSF_Q4R) is too near for
// the memory's latency (BenchmarkRotStream, 5632×2048 QSF_Q4R: 25k →
// 32k cpuMB/s).
//
// Registers (beside rotx8_amd64.h's): SI rows 0..3's block (row r at
// SI+r·BX), DI rows 4..7's (DI = SI+4·BX), BX the row's bytes, DX 3·BX,
// R13 the bytes to prefetch (two groups on), R12 the prepared activation (R11
// its start), R10 blocks per row, CX blocks left, R9 groups left, R8 out;
// Z20 rotF8Cnt, Z21 and Z22 the transposes' indices, Z27..Z30 the unit
// selections, Z31 bytes 3 and K3 a row's 24 code bytes (QSF_Q3R).

// F8_SETUP loads the arguments and the constants.
#define F8_SETUP(tab) \
	MOVQ out+0(FP), R8 \
	MOVQ groups+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ rb+24(FP), BX \
	MOVQ nb+32(FP), R10 \
	MOVQ aux+40(FP), R11 \
	LEAQ (BX)(BX*2), DX \
	X8_CONSTS(tab) \
	VMOVDQU64 rotF8Cnt<>(SB), Z20

// F8_GROUP starts a group of 8 rows at SI.
#define F8_GROUP \
	VPXORQ Z16, Z16, Z16 \
	MOVQ R11, R12 \
	MOVQ R10, CX \
	LEAQ (SI)(BX*4), DI \
	LEAQ (SI)(BX*8), R13 \
	LEAQ (R13)(BX*8), R13

// F8_HEAD loads the eight rows' d and multipliers (the dword at the
// start of each row's block) into lanes 2r and 2r+1 of Z5 (a broadcast
// a row, blended) and converts them (X8_SCALES).
#define F8_HEAD \
	VPBROADCASTD (SI), Y5 \
	VPBROADCASTD (SI)(BX*1), Y6 \
	VPBLENDD $0x0c, Y6, Y5, Y5 \
	VPBROADCASTD (SI)(BX*2), Y6 \
	VPBLENDD $0x30, Y6, Y5, Y5 \
	VPBROADCASTD (SI)(DX*1), Y6 \
	VPBLENDD $0xc0, Y6, Y5, Y5 \
	VPBROADCASTD (DI), Y7 \
	VPBROADCASTD (DI)(BX*1), Y6 \
	VPBLENDD $0x0c, Y6, Y7, Y7 \
	VPBROADCASTD (DI)(BX*2), Y6 \
	VPBLENDD $0x30, Y6, Y7, Y7 \
	VPBROADCASTD (DI)(DX*1), Y6 \
	VPBLENDD $0xc0, Y6, Y7, Y7 \
	VINSERTI64X4 $1, Y7, Z5, Z5 \
	F8_SCALES

// F8_SCALES converts the headers in Z5 (lane 2r+h: row r's d and
// multipliers): d to float32 in Z0, multiplier byte h to the low byte of
// Z1, then X8_SCALES.
#define F8_SCALES \
	VPMOVDW Z5, Y0 \
	VCVTPH2PS Y0, Z0 \
	VPSRLVD Z20, Z5, Z1 \
	X8_SCALES

// F8_NEXT moves to the next block of bb bytes a row, and ends the group.
#define F8_NEXT(bb, label) \
	ADDQ $bb, SI \
	ADDQ $bb, DI \
	ADDQ $(8*bb), R13 \
	ADDQ $88, R12 \
	DECQ CX \
	JNZ label \
	X8_STORE \
	ADDQ $32, R8 \
	LEAQ (SI)(DX*2), SI \
	ADDQ BX, SI

// F8_ROWS32 loads 32 bytes at off of each row: rows 0, 1 in Z4, 2, 3 in
// Z6, 4, 5 in Z7, 6, 7 in Z9.
#define F8_ROWS32(off) \
	VMOVDQU off(SI), Y4 \
	VINSERTI64X4 $1, off(SI)(BX*1), Z4, Z4 \
	VMOVDQU off(SI)(BX*2), Y6 \
	VINSERTI64X4 $1, off(SI)(DX*1), Z6, Z6 \
	VMOVDQU off(DI), Y7 \
	VINSERTI64X4 $1, off(DI)(BX*1), Z7, Z7 \
	VMOVDQU off(DI)(BX*2), Y9 \
	VINSERTI64X4 $1, off(DI)(DX*1), Z9, Z9

// F8_TRANSPOSE3 turns F8_ROWS32's registers into Z23 (qword r: qword 0
// of row r), Z10 (qword 1) and Z12 (qword 2); T1 and T3 (qwords 2, 3 of
// rows 0..3 and 4..7) are left in Z4 and Z7.
#define F8_TRANSPOSE3 \
	VMOVDQA64 Z21, Z10 \
	VPERMI2Q Z6, Z4, Z10 \
	VPERMT2Q Z6, Z22, Z4 \
	VMOVDQA64 Z21, Z12 \
	VPERMI2Q Z9, Z7, Z12 \
	VPERMT2Q Z9, Z22, Z7 \
	VSHUFI64X2 $0x44, Z12, Z10, Z23 \
	VSHUFI64X2 $0xEE, Z12, Z10, Z10 \
	VSHUFI64X2 $0x44, Z7, Z4, Z12

// F8_UNIT adds unit u, selected from data by ctl, to sum.
#define F8_UNIT(u, data, ctl, sum) \
	VPMULTISHIFTQB data, ctl, Z3 \
	VPERMB Z13, Z3, Z3 \
	X8_DP(u, Z3, sum)

// func dotQ4RF8AVX512(out *float32, groups int, w *byte, rb, nb int, aux *byte)
TEXT ·dotQ4RF8AVX512(SB), NOSPLIT, $0-48
	F8_SETUP(rotX8Tab4<>(SB))
	VMOVDQU64 rotF8T0<>(SB), Z21
	VMOVDQU64 rotF8T1<>(SB), Z22
	VMOVDQU64 rotF8C0<>(SB), Z27
	VMOVDQU64 rotF8C1<>(SB), Z28
groupdotQ4RF8AVX512:
	F8_GROUP
blockdotQ4RF8AVX512:
	PREFETCHT0 0(R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	PREFETCHT0 192(R13)
	PREFETCHT0 256(R13)
	F8_HEAD
	F8_ROWS32(4)
	F8_TRANSPOSE3
	VSHUFI64X2 $0xEE, Z7, Z4, Z4
	F8_UNIT(0, Z23, Z27, Z17)
	F8_UNIT(1, Z23, Z28, Z17)
	F8_UNIT(2, Z10, Z27, Z17)
	F8_UNIT(3, Z10, Z28, Z17)
	F8_UNIT(4, Z12, Z27, Z18)
	F8_UNIT(5, Z12, Z28, Z18)
	F8_UNIT(6, Z4, Z27, Z18)
	F8_UNIT(7, Z4, Z28, Z18)
	X8_FINISH
	F8_NEXT(36, blockdotQ4RF8AVX512)
	DECQ R9
	JNZ groupdotQ4RF8AVX512
	VZEROUPPER
	RET

// func dotQ2RF8AVX512(out *float32, groups int, w *byte, rb, nb int, aux *byte)
TEXT ·dotQ2RF8AVX512(SB), NOSPLIT, $0-48
	F8_SETUP(rotX8Tab2<>(SB))
	VMOVDQU64 rotF8Even<>(SB), Z21
	VMOVDQU64 rotF8Odd<>(SB), Z22
	VMOVDQU64 rotF8C0<>(SB), Z27
	VMOVDQU64 rotF8C1<>(SB), Z28
	VMOVDQU64 rotF8C0s<>(SB), Z29
	VMOVDQU64 rotF8C1s<>(SB), Z30
groupdotQ2RF8AVX512:
	F8_GROUP
blockdotQ2RF8AVX512:
	PREFETCHT0 0(R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	F8_HEAD
	// The 16 code bytes of rows 0..3 in Z4, of rows 4..7 in Z6, then
	// qword 0 of the eight rows in Z10, qword 1 in Z4.
	VMOVDQU 4(SI), X4
	VINSERTI32X4 $1, 4(SI)(BX*1), Z4, Z4
	VINSERTI32X4 $2, 4(SI)(BX*2), Z4, Z4
	VINSERTI32X4 $3, 4(SI)(DX*1), Z4, Z4
	VMOVDQU 4(DI), X6
	VINSERTI32X4 $1, 4(DI)(BX*1), Z6, Z6
	VINSERTI32X4 $2, 4(DI)(BX*2), Z6, Z6
	VINSERTI32X4 $3, 4(DI)(DX*1), Z6, Z6
	VMOVDQA64 Z21, Z10
	VPERMI2Q Z6, Z4, Z10
	VPERMT2Q Z6, Z22, Z4
	F8_UNIT(0, Z10, Z27, Z17)
	F8_UNIT(1, Z10, Z28, Z17)
	F8_UNIT(2, Z4, Z27, Z17)
	F8_UNIT(3, Z4, Z28, Z17)
	F8_UNIT(4, Z10, Z29, Z18)
	F8_UNIT(5, Z10, Z30, Z18)
	F8_UNIT(6, Z4, Z29, Z18)
	F8_UNIT(7, Z4, Z30, Z18)
	X8_FINISH
	F8_NEXT(20, blockdotQ2RF8AVX512)
	DECQ R9
	JNZ groupdotQ2RF8AVX512
	VZEROUPPER
	RET

// F8_UNIT3 adds unit u of a 3-bit block: the low bits selected from data
// by ctl, the high bit from Z12 by rotF8Hi3's selection at off.
#define F8_UNIT3(u, off, data, ctl, sum) \
	VPMULTISHIFTQB data, ctl, Z3 \
	VMOVDQU64 rotF8Hi3<>+off(SB), Z2 \
	VPMULTISHIFTQB Z12, Z2, Z7 \
	VPTERNLOGD $0xD8, Z31, Z3, Z7 \
	VPERMB Z13, Z7, Z3 \
	X8_DP(u, Z3, sum)

// func dotQ3RF8AVX512(out *float32, groups int, w *byte, rb, nb int, aux *byte)
TEXT ·dotQ3RF8AVX512(SB), NOSPLIT, $0-48
	F8_SETUP(rotX8Tab3<>(SB))
	VMOVDQU64 rotF8T0<>(SB), Z21
	VMOVDQU64 rotF8T1<>(SB), Z22
	VMOVDQU64 rotF8C0<>(SB), Z27
	VMOVDQU64 rotF8C1<>(SB), Z28
	VMOVDQU64 rotF8C0s<>(SB), Z29
	VMOVDQU64 rotF8C1s<>(SB), Z30
	VMOVDQU64 rotF8Three<>(SB), Z31
	// K3 loads a row's 24 code bytes (a 32-byte load would read past
	// the last row's last block).
	MOVL $0x00ffffff, AX
	KMOVD AX, K3
groupdotQ3RF8AVX512:
	F8_GROUP
blockdotQ3RF8AVX512:
	PREFETCHT0 0(R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	PREFETCHT0 192(R13)
	F8_HEAD
	VMOVDQU8.Z 4(SI), K3, Y4
	VMOVDQU8.Z 4(SI)(BX*1), K3, Y11
	VINSERTI64X4 $1, Y11, Z4, Z4
	VMOVDQU8.Z 4(SI)(BX*2), K3, Y6
	VMOVDQU8.Z 4(SI)(DX*1), K3, Y11
	VINSERTI64X4 $1, Y11, Z6, Z6
	VMOVDQU8.Z 4(DI), K3, Y7
	VMOVDQU8.Z 4(DI)(BX*1), K3, Y11
	VINSERTI64X4 $1, Y11, Z7, Z7
	VMOVDQU8.Z 4(DI)(BX*2), K3, Y9
	VMOVDQU8.Z 4(DI)(DX*1), K3, Y11
	VINSERTI64X4 $1, Y11, Z9, Z9
	F8_TRANSPOSE3
	F8_UNIT3(0, 0, Z23, Z27, Z17)
	F8_UNIT3(1, 64, Z23, Z28, Z17)
	F8_UNIT3(2, 128, Z10, Z27, Z17)
	F8_UNIT3(3, 192, Z10, Z28, Z17)
	F8_UNIT3(4, 256, Z23, Z29, Z18)
	F8_UNIT3(5, 320, Z23, Z30, Z18)
	F8_UNIT3(6, 384, Z10, Z29, Z18)
	F8_UNIT3(7, 448, Z10, Z30, Z18)
	X8_FINISH
	F8_NEXT(28, blockdotQ3RF8AVX512)
	DECQ R9
	JNZ groupdotQ3RF8AVX512
	VZEROUPPER
	RET
