//go:build amd64 && !purego

#include "textflag.h"

// func lanesDotSeqAVX2(out, q, keys *float32, stride, n, d int)
// LanesDotSeq: for each key t < n (at keys + t*stride bytes) the 8 lanes'
// sums out[8t..8t+7] = Σ over i = 0..d-1, in order, of round(q[8i..8i+7] ·
// k[i]) (VMULPS, then VADDPS: no fused multiply-add), from +0. Four keys
// go side by side (independent sums), then one at a time. d > 0.
//
// Registers: DI out, SI q, BX key t, R8 stride, CX keys left, DX d; in a
// pass R9 the q element, R10-R13 the keys' elements, R14 elements left.
TEXT ·lanesDotSeqAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ keys+16(FP), BX
	MOVQ stride+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ d+40(FP), DX

loop4:
	CMPQ CX, $4
	JLT  loop1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R9
	MOVQ BX, R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	MOVQ DX, R14

inner4:
	VMOVUPS      (R9), Y4
	VBROADCASTSS (R10), Y5
	VBROADCASTSS (R11), Y6
	VBROADCASTSS (R12), Y7
	VBROADCASTSS (R13), Y8
	VMULPS       Y5, Y4, Y5
	VMULPS       Y6, Y4, Y6
	VMULPS       Y7, Y4, Y7
	VMULPS       Y8, Y4, Y8
	VADDPS       Y5, Y0, Y0
	VADDPS       Y6, Y1, Y1
	VADDPS       Y7, Y2, Y2
	VADDPS       Y8, Y3, Y3
	ADDQ         $32, R9
	ADDQ         $4, R10
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	DECQ         R14
	JNZ          inner4

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	LEAQ    (BX)(R8*4), BX
	SUBQ    $4, CX
	JMP     loop4

loop1:
	TESTQ  CX, CX
	JZ     done
	VXORPS Y0, Y0, Y0
	MOVQ   SI, R9
	MOVQ   BX, R10
	MOVQ   DX, R14

inner1:
	VMOVUPS      (R9), Y4
	VBROADCASTSS (R10), Y5
	VMULPS       Y5, Y4, Y5
	VADDPS       Y5, Y0, Y0
	ADDQ         $32, R9
	ADDQ         $4, R10
	DECQ         R14
	JNZ          inner1

	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    R8, BX
	DECQ    CX
	JMP     loop1

done:
	VZEROUPPER
	RET

// ADDV adds to accumulator Y the product of Y0 and the value chunk at
// off(R11), rounded, plus Y1 when R13 is not 0 (offsets), rounded.
#define ADDV(off, Y) \
	VMULPS  off(R11), Y0, Y2 \
	TESTQ   R13, R13 \
	JZ      2(PC) \
	VADDPS  Y1, Y2, Y2 \
	VADDPS  Y2, Y, Y

// func addScaledAVX2(out *float32, stride int, v *float32, d, m int, scale, offset *float32, heads, cols int)
// AddScaledHeads' first cols columns (a positive multiple of 32) of each
// of the heads rows (heads, stride and d in bytes, m values): for each
// row h and each 32 columns, the out chunk is held in Y3-Y6 while the m
// values are added in order: out = out + (round(scale·v) + offset), each
// step rounded (VMULPS, VADDPS, VADDPS); offset 0 (nil) adds none.
//
// Registers: DI the row, BX rows left, AX the column offset, R11 the
// value chunk, R12 the weight, R13 the offset (0: none), CX values left.
TEXT ·addScaledAVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ heads+56(FP), BX
	MOVQ scale+40(FP), R9
	MOVQ offset+48(FP), R10

addRow:
	XORQ AX, AX

addCols:
	VMOVUPS (DI)(AX*1), Y3
	VMOVUPS 32(DI)(AX*1), Y4
	VMOVUPS 64(DI)(AX*1), Y5
	VMOVUPS 96(DI)(AX*1), Y6
	MOVQ    v+16(FP), R11
	ADDQ    AX, R11
	MOVQ    R9, R12
	MOVQ    R10, R13
	MOVQ    m+32(FP), CX

addValue:
	VBROADCASTSS (R12), Y0
	TESTQ        R13, R13
	JZ           noOffset
	VBROADCASTSS (R13), Y1
	ADDQ         heads+56(FP), R13

noOffset:
	ADDV(0, Y3)
	ADDV(32, Y4)
	ADDV(64, Y5)
	ADDV(96, Y6)
	ADDQ d+24(FP), R11
	ADDQ heads+56(FP), R12
	DECQ CX
	JNZ  addValue

	VMOVUPS Y3, (DI)(AX*1)
	VMOVUPS Y4, 32(DI)(AX*1)
	VMOVUPS Y5, 64(DI)(AX*1)
	VMOVUPS Y6, 96(DI)(AX*1)
	ADDQ    $128, AX
	MOVQ    cols+64(FP), DX
	SHLQ    $2, DX
	CMPQ    AX, DX
	JLT     addCols

	ADDQ stride+8(FP), DI
	ADDQ $4, R9
	TESTQ R10, R10
	JZ   nextRow
	ADDQ $4, R10

nextRow:
	SUBQ $4, BX
	JNZ  addRow
	VZEROUPPER
	RET

// Q4NIBBLES sets Y3 and Y5 to the 16 codes of the 8 bytes at SI as
// float32, in order (low nibble first); X7 holds 0x0f in every byte.
#define Q4NIBBLES \
	VMOVQ      (SI), X0 \
	VPSRLW     $4, X0, X1 \
	VPUNPCKLBW X1, X0, X2 \
	VPAND      X7, X2, X2 \
	VPMOVZXBD  X2, Y3 \
	VPSRLDQ    $8, X2, X4 \
	VPMOVZXBD  X4, Y5 \
	VCVTDQ2PS  Y3, Y3 \
	VCVTDQ2PS  Y5, Y5

// func decodeQ4AVX2(dst *float32, codes *byte, n int)
// dst[i] = code i of codes (DecodeQ4) for i < n, n a positive multiple
// of 16.
TEXT ·decodeQ4AVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         codes+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         $0x0f0f0f0f0f0f0f0f, AX
	MOVQ         AX, X7
	VPBROADCASTQ X7, X7

q4Loop:
	Q4NIBBLES
	VMOVUPS Y3, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ    $8, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JNZ     q4Loop
	VZEROUPPER
	RET

// func decodeQ4AffineAVX2(dst *float32, codes *byte, n int, scale, offset *float32)
// dst[i] = offset[i] + round(scale[i]·code i) for i < n (VMULPS, then
// VADDPS), n a positive multiple of 16.
TEXT ·decodeQ4AffineAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         codes+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         scale+24(FP), R8
	MOVQ         offset+32(FP), R9
	MOVQ         $0x0f0f0f0f0f0f0f0f, AX
	MOVQ         AX, X7
	VPBROADCASTQ X7, X7

q4aLoop:
	Q4NIBBLES
	VMULPS  (R8), Y3, Y3
	VMULPS  32(R8), Y5, Y5
	VMOVUPS (R9), Y6
	VADDPS  Y3, Y6, Y3
	VMOVUPS 32(R9), Y6
	VADDPS  Y5, Y6, Y5
	VMOVUPS Y3, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ    $8, SI
	ADDQ    $64, DI
	ADDQ    $64, R8
	ADDQ    $64, R9
	SUBQ    $16, CX
	JNZ     q4aLoop
	VZEROUPPER
	RET
