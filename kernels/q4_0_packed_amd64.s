//go:build amd64 && !purego

#include "textflag.h"

// Packed Q4_0 (see PackedMatrix): each row holds the 16-byte quant arrays
// of its nb blocks, then their nb fp16 scales. Two blocks' quants are one
// 32-byte load whose low nibbles are elements 0..15 of both blocks and high
// nibbles elements 16..31; the activation is prepared in the same order
// (prepPackedQ4_0), 128 bytes per pair of blocks: low halves, high halves,
// bias 8·Σ per int16 lane, and [da0×4, da1×4]. A trailing odd block uses
// 64 bytes: the same, 128 bits wide.

// packedPerm spreads two floats to [f0×4, f1×4].
DATA packedPerm<>+0(SB)/8, $0x0000000000000000
DATA packedPerm<>+8(SB)/8, $0x0000000000000000
DATA packedPerm<>+16(SB)/8, $0x0000000100000001
DATA packedPerm<>+24(SB)/8, $0x0000000100000001
GLOBL packedPerm<>(SB), RODATA|NOPTR, $32

// func dotPackedQ4_0AVX2(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)
TEXT ·dotPackedQ4_0AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), R13
	MOVQ nb+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ aux+40(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // low nibble mask
	VMOVDQU packedPerm<>(SB), Y13

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	MOVQ R13, SI
	MOVQ R10, BX
	SHLQ $4, BX
	ADDQ R13, BX // scales
	MOVQ R11, DX
	MOVQ R10, CX
	SHRQ $1, CX
	JZ   tail

pair:
	PREFETCHT0 1024(SI)
	VMOVDQU (SI), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y14, Y1, Y1
	VPAND Y14, Y2, Y2
	VPMADDUBSW 0(DX), Y1, Y1
	VPMADDUBSW 32(DX), Y2, Y2
	VPADDW Y2, Y1, Y1
	VPSUBW 64(DX), Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VMOVD (BX), X3
	VCVTPH2PS X3, X3
	VPERMPS Y3, Y13, Y3
	VMULPS 96(DX), Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ $32, SI
	ADDQ $4, BX
	ADDQ $128, DX
	DECQ CX
	JNZ  pair

tail:
	TESTQ $1, R10
	JZ    reduce
	VMOVDQU (SI), X1
	VPSRLW $4, X1, X2
	VPAND X14, X1, X1
	VPAND X14, X2, X2
	VPMADDUBSW 0(DX), X1, X1
	VPMADDUBSW 16(DX), X2, X2
	VPADDW X2, X1, X1
	VPSUBW 32(DX), X1, X1
	VPMADDWD X15, X1, X1
	VCVTDQ2PS X1, X1
	MOVWLZX (BX), AX
	VMOVD AX, X3
	VCVTPH2PS X3, X3
	VBROADCASTSS X3, X3
	VMULPS 48(DX), X3, X3
	VFMADD231PS X3, X1, X8

reduce:
	VADDPS Y8, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ R12, R13
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET
