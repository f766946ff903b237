//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels for the remaining 32-element block types: IQ4_NL and Q5_0
// against Q8_0 activations, Q4_1 and Q5_1 against Q8_1. Each processes
// whole rows, with the activation prepared once per matrix (prepQ8_0,
// prepQ8_1: per block the scale as eight float32, then Q4_0's bias sums, or
// s as float32). The floating-point order is that of ggml's AVX2 vec_dot
// for each type, so results match it bit for bit.
//
// Registers: SI weights, DI activation quants, DX prepared activation,
// Y15 int16 ones, Y14 low nibble mask.

// iq4nlValues is kvalues_iq4nl, twice (one copy per 128-bit lane).
DATA iq4nlValues<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nlValues<>+8(SB)/8, $0x7159453526190d01
DATA iq4nlValues<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nlValues<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4nlValues<>(SB), RODATA|NOPTR, $32

// bitShuf spreads byte k of a dword to bytes 8k..8k+7 (per lane).
DATA bitShuf<>+0(SB)/8, $0x0000000000000000
DATA bitShuf<>+8(SB)/8, $0x0101010101010101
DATA bitShuf<>+16(SB)/8, $0x0202020202020202
DATA bitShuf<>+24(SB)/8, $0x0303030303030303
GLOBL bitShuf<>(SB), RODATA|NOPTR, $32

// bitMask has every bit but bit i set in byte i of each 8.
DATA bitMask<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA bitMask<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA bitMask<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA bitMask<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL bitMask<>(SB), RODATA|NOPTR, $32


// IQ4_NL block (18 bytes): fp16 d, qs[16] as Q4_0; a nibble indexes kvalues_iq4nl.
// As ggml: even and odd blocks in two accumulators, an odd last block
// added in scalar after the horizontal sum.
//
// func dotIQ4NLAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotIQ4NLAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPCMPEQB Y13, Y13, Y13
	MOVL $0x10101010, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VBROADCASTI128 iq4nlValues<>(SB), Y10

row0:
	VXORPS Y0, Y0, Y0
	VXORPS Y11, Y11, Y11
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX
	SHRQ $1, CX
	JZ   tail0
pair0:
	PREFETCHT0 1024(SI)
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y14, Y1, Y1
	VPSHUFB Y1, Y10, Y1
	VMOVDQU 2(DI), Y2
	VPSIGNB Y1, Y2, Y2
	VPABSB Y1, Y1
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VPBROADCASTW 0(SI), X2
	VCVTPH2PS X2, Y2
	VMULPS 0(DX), Y2, Y2
	VFMADD231PS Y2, Y1, Y0
	VMOVDQU 20(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y14, Y1, Y1
	VPSHUFB Y1, Y10, Y1
	VMOVDQU 36(DI), Y2
	VPSIGNB Y1, Y2, Y2
	VPABSB Y1, Y1
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VPBROADCASTW 18(SI), X2
	VCVTPH2PS X2, Y2
	VMULPS 64(DX), Y2, Y2
	VFMADD231PS Y2, Y1, Y11
	ADDQ $36, SI
	ADDQ $68, DI
	ADDQ $128, DX
	DECQ CX
	JNZ  pair0
tail0:
	VADDPS Y11, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	TESTQ $1, R10
	JZ   done0
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y14, Y1, Y1
	VPSHUFB Y1, Y10, Y1
	VMOVDQU 2(DI), Y2
	VPSIGNB Y1, Y2, Y2
	VPABSB Y1, Y1
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDD X2, X1, X1
	VPHADDD X1, X1, X1
	VPHADDD X1, X1, X1
	VCVTDQ2PS X1, X1
	MOVWLZX 0(SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VMULSS 0(DX), X2, X2
	VFMADD231SS X2, X1, X0
	ADDQ $18, SI
done0:
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row0
	VZEROUPPER
	RET

// Q5_0 block (22 bytes): fp16 d, qh[4], qs[16]; element e is its nibble
// plus bit e of qh as bit 4, minus 16 (taken off as 16·Σa per pair).
//
// func dotQ50AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ50AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPCMPEQB Y13, Y13, Y13
	MOVL $0x10101010, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VBROADCASTI128 iq4nlValues<>(SB), Y10

row1:
	VXORPS Y0, Y0, Y0
	VXORPS Y11, Y11, Y11
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX
block1:
	PREFETCHT0 1024(SI)
	VMOVDQU 6(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y14, Y1, Y1
	VPBROADCASTD 2(SI), Y3
	VPSHUFB bitShuf<>(SB), Y3, Y3
	VPOR bitMask<>(SB), Y3, Y3
	VPCMPEQB Y13, Y3, Y3
	VPAND Y12, Y3, Y3
	VPOR Y3, Y1, Y1
	VPMADDUBSW 2(DI), Y1, Y1
	VMOVDQU 32(DX), Y3
	VPSUBW Y3, Y1, Y1
	VPSUBW Y3, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VPBROADCASTW 0(SI), X2
	VCVTPH2PS X2, Y2
	VMULPS 0(DX), Y2, Y2
	VFMADD231PS Y2, Y1, Y0
	ADDQ $22, SI
	ADDQ $34, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  block1
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row1
	VZEROUPPER
	RET

// Q4_1 block (20 bytes): fp16 d, fp16 m, qs[16]; dot = d·da·Σq·a + m·s_a,
// the second sum in a scalar accumulator as ggml's summs.
//
// func dotQ41AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ41AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPCMPEQB Y13, Y13, Y13
	MOVL $0x10101010, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VBROADCASTI128 iq4nlValues<>(SB), Y10

row2:
	VXORPS Y0, Y0, Y0
	VXORPS Y11, Y11, Y11
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX
block2:
	PREFETCHT0 1024(SI)
	VMOVDQU 4(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y14, Y1, Y1
	VPMADDUBSW 4(DI), Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VPBROADCASTW 0(SI), X2
	VCVTPH2PS X2, Y2
	VMULPS 0(DX), Y2, Y2
	VFMADD231PS Y2, Y1, Y0
	MOVWLZX 2(SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VFMADD231SS 32(DX), X2, X11
	ADDQ $20, SI
	ADDQ $36, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  block2
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VADDSS X11, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row2
	VZEROUPPER
	RET

// Q5_1 block (24 bytes): fp16 d, fp16 m, qh[4], qs[16]; dot = d·da·Σq·a +
// m·s_a, the second sum in a scalar accumulator as ggml's summs.
//
// func dotQ51AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ51AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPCMPEQB Y13, Y13, Y13
	MOVL $0x10101010, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VBROADCASTI128 iq4nlValues<>(SB), Y10

row3:
	VXORPS Y0, Y0, Y0
	VXORPS Y11, Y11, Y11
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX
block3:
	PREFETCHT0 1024(SI)
	VMOVDQU 8(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y14, Y1, Y1
	VPBROADCASTD 4(SI), Y3
	VPSHUFB bitShuf<>(SB), Y3, Y3
	VPOR bitMask<>(SB), Y3, Y3
	VPCMPEQB Y13, Y3, Y3
	VPAND Y12, Y3, Y3
	VPOR Y3, Y1, Y1
	VPMADDUBSW 4(DI), Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VPBROADCASTW 0(SI), X2
	VCVTPH2PS X2, Y2
	VMULPS 0(DX), Y2, Y2
	VFMADD231PS Y2, Y1, Y0
	MOVWLZX 2(SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VFMADD231SS 32(DX), X2, X11
	ADDQ $24, SI
	ADDQ $36, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  block3
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VADDSS X11, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row3
	VZEROUPPER
	RET
