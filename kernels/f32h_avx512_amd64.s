//go:build amd64 && !purego

#include "textflag.h"

// The F32H kernels (f32h.go): 16 weights at a time, VPERMB spreads the
// low three bytes of each into a dword (its top byte zeroed by the mask
// 0x7777…), VPSRLVD puts each lane's code in its low four bits (VPERMD
// reads only those), VPERMD looks the high byte up in the row's table
// (a dword per code, shifted to the top byte) and VPORD joins the two:
// the F32 weights of the file, bit for bit.

// f32hIdx is VPERMB's index: dword j takes bytes 3j, 3j+1, 3j+2 (and a
// zeroed top byte).
DATA f32hIdx<>+0(SB)/8, $0x0005040300020100
DATA f32hIdx<>+8(SB)/8, $0x000b0a0900080706
DATA f32hIdx<>+16(SB)/8, $0x0011100f000e0d0c
DATA f32hIdx<>+24(SB)/8, $0x0017161500141312
DATA f32hIdx<>+32(SB)/8, $0x001d1c1b001a1918
DATA f32hIdx<>+40(SB)/8, $0x0023222100201f1e
DATA f32hIdx<>+48(SB)/8, $0x0029282700262524
DATA f32hIdx<>+56(SB)/8, $0x002f2e2d002c2b2a
GLOBL f32hIdx<>(SB), RODATA|NOPTR, $64

// f32hShift is VPSRLVD's counts: 4·⌊i/2⌋ in dword i.
DATA f32hShift<>+0(SB)/8, $0x0000000000000000
DATA f32hShift<>+8(SB)/8, $0x0000000400000004
DATA f32hShift<>+16(SB)/8, $0x0000000800000008
DATA f32hShift<>+24(SB)/8, $0x0000000c0000000c
DATA f32hShift<>+32(SB)/8, $0x0000001000000010
DATA f32hShift<>+40(SB)/8, $0x0000001400000014
DATA f32hShift<>+48(SB)/8, $0x0000001800000018
DATA f32hShift<>+56(SB)/8, $0x0000001c0000001c
GLOBL f32hShift<>(SB), RODATA|NOPTR, $64

// F32H_SETUP loads the constants: K1 the byte mask, Z28 the index, Z29
// the counts.
#define F32H_SETUP \
	MOVQ      $0x7777777777777777, AX \
	KMOVQ     AX, K1                  \
	VMOVDQU64 f32hIdx<>(SB), Z28      \
	VMOVDQU64 f32hShift<>(SB), Z29

// F32H_TABLE loads the table of the row at SI into Z30.
#define F32H_TABLE \
	VPMOVZXBD (SI), Z30    \
	VPSLLD    $24, Z30, Z30

// F32H_CHUNK decodes the chunk at off(DI): columns 0..15 into z0,
// 16..31 into z1 (t0, t1 scratch).
#define F32H_CHUNK(off, z0, z1, t0, t1) \
	VPERMB.Z     off(DI), Z28, K1, z0   \
	VPERMB.Z     off+48(DI), Z28, K1, z1 \
	VPBROADCASTQ off+96(DI), t0         \
	VPBROADCASTQ off+104(DI), t1        \
	VPSRLVD      Z29, t0, t0            \
	VPSRLVD      Z29, t1, t1            \
	VPERMD       Z30, t0, t0            \
	VPERMD       Z30, t1, t1            \
	VPORD        t0, z0, z0             \
	VPORD        t1, z1, z1

// func dotF32HAVX512(out *float32, rows int, w *byte, chunks int, rowBytes int, act *byte) int
//
// dotF32HAVX512 computes out[r] = dot(row r, act) of F32H rows of chunks
// chunks of 32 columns, with dotF32AVX512's arithmetic (two of ggml's
// accumulators per zmm), up to the first row with escapes; it returns the
// rows done.
TEXT ·dotF32HAVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	MOVQ act+40(FP), R11
	F32H_SETUP
	XORQ R13, R13

f32h_row:
	CMPQ   R13, R9
	JEQ    f32h_end
	MOVBLZX 16(SI), AX
	TESTL  AX, AX
	JNZ    f32h_end
	F32H_TABLE
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	LEAQ   32(SI), DI
	MOVQ   R11, DX
	MOVQ   R10, CX
	SHRQ   $1, CX
	JZ     f32h_one

f32h_pair:
	F32H_CHUNK(0, Z4, Z5, Z6, Z7)
	F32H_CHUNK(112, Z8, Z9, Z10, Z11)
	VFMADD231PS (DX), Z4, Z0
	VFMADD231PS 64(DX), Z5, Z1
	VFMADD231PS 128(DX), Z8, Z0
	VFMADD231PS 192(DX), Z9, Z1
	ADDQ        $224, DI
	ADDQ        $256, DX
	DECQ        CX
	JNZ         f32h_pair

f32h_one:
	TESTQ       $1, R10
	JZ          f32h_done
	F32H_CHUNK(0, Z4, Z5, Z6, Z7)
	VFMADD231PS (DX), Z4, Z0
	VFMADD231PS 64(DX), Z5, Z1

f32h_done:
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $0x01, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $0x01, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	VMOVSS        X0, (R8)
	ADDQ          $4, R8
	ADDQ          R12, SI
	INCQ          R13
	JMP           f32h_row

f32h_end:
	MOVQ R13, ret+48(FP)
	VZEROUPPER
	RET

// func decodeF32HAVX512(dst *byte, rows int, w *byte, chunks int, rowBytes int)
//
// decodeF32HAVX512 writes the F32 form of rows F32H rows of chunks chunks
// to dst, row after row, all but their escapes (patchF32HRow).
TEXT ·decodeF32HAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ chunks+24(FP), R10
	MOVQ rowBytes+32(FP), R12
	F32H_SETUP
	TESTQ R9, R9
	JZ    f32hd_end

f32hd_row:
	F32H_TABLE
	LEAQ 32(SI), DI
	MOVQ R10, CX

f32hd_chunk:
	F32H_CHUNK(0, Z4, Z5, Z6, Z7)
	VMOVDQU32 Z4, (DX)
	VMOVDQU32 Z5, 64(DX)
	ADDQ      $112, DI
	ADDQ      $128, DX
	DECQ      CX
	JNZ       f32hd_chunk
	ADDQ      R12, SI
	DECQ      R9
	JNZ       f32hd_row

f32hd_end:
	VZEROUPPER
	RET
