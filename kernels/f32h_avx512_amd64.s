//go:build amd64 && !purego

#include "textflag.h"

// The F32H kernels (f32h.go), a superchunk of 128 weights at a time, from
// seven aligned 64-byte lines: VPSHUFB looks the high bytes of its 128
// weights up in the row's table (in each 128-bit lane of Z20), one for
// the low nibbles of the 64 code bytes and one for the high ones;
// VPUNPCK{L,H}BW pair each third byte with its high byte, and
// VPUNPCK{L,H}WD each low word with that pair: the F32 weights of the
// file, bit for bit, in column order. The decode kernel prefetches the
// superchunk 8 KiB ahead (into L1): the hardware prefetchers alone leave
// it about 10% slower per matrix than F32 at one thread on Zen 5, and with
// the prefetch about 13% faster (32000×768, BenchmarkF32HMatVec).

DATA f32hNibble<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL f32hNibble<>(SB), RODATA|NOPTR, $8

// F32H_SETUP loads 0x0f into every byte of Z31.
#define F32H_SETUP \
	VPBROADCASTQ f32hNibble<>(SB), Z31

// F32H_TABLE loads the table of the row at SI into each lane of Z20.
#define F32H_TABLE \
	VBROADCASTI32X4 (SI), Z20

// F32H_HIGH decodes the superchunk at DI up to its high halves: the
// third and high bytes of its 128 weights, paired in column order, in
// Z6, Z7, Z8 and Z9 (clobbers Z2-Z5).
#define F32H_HIGH \
	VMOVDQU64  0(DI), Z2    \
	VPSRLW     $4, Z2, Z3   \
	VPANDD     Z31, Z2, Z2  \
	VPANDD     Z31, Z3, Z3  \
	VPSHUFB    Z2, Z20, Z2  \
	VPSHUFB    Z3, Z20, Z3  \
	VMOVDQU64  64(DI), Z4   \
	VMOVDQU64  128(DI), Z5  \
	VPUNPCKLBW Z2, Z4, Z6   \
	VPUNPCKHBW Z2, Z4, Z7   \
	VPUNPCKLBW Z3, Z5, Z8   \
	VPUNPCKHBW Z3, Z5, Z9

// func dotF32HAVX512(out *float32, rows int, w *byte, chunks int, rowBytes int, act *byte) int
//
// dotF32HAVX512 computes out[r] = dot(row r, act) of F32H rows of chunks
// superchunks of 128 columns, with dotF32AVX512's arithmetic (two of
// ggml's accumulators per zmm), up to the first row with escapes; it
// returns the rows done.
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
	CMPQ    R13, R9
	JEQ     f32h_end
	MOVBLZX 16(SI), AX
	TESTL   AX, AX
	JNZ     f32h_end
	F32H_TABLE
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	LEAQ    64(SI), DI
	MOVQ    R11, DX
	MOVQ    R10, CX

f32h_chunk:
	PREFETCHT0 8192(DI)
	PREFETCHT0 8256(DI)
	PREFETCHT0 8320(DI)
	PREFETCHT0 8384(DI)
	PREFETCHT0 8448(DI)
	PREFETCHT0 8512(DI)
	PREFETCHT0 8576(DI)
	F32H_HIGH
	VMOVDQU64  192(DI), Z10
	VPUNPCKLWD Z6, Z10, Z22
	VPUNPCKHWD Z6, Z10, Z23
	VFMADD231PS 0(DX), Z22, Z0
	VFMADD231PS 64(DX), Z23, Z1
	VMOVDQU64  256(DI), Z11
	VPUNPCKLWD Z7, Z11, Z24
	VPUNPCKHWD Z7, Z11, Z25
	VFMADD231PS 128(DX), Z24, Z0
	VFMADD231PS 192(DX), Z25, Z1
	VMOVDQU64  320(DI), Z12
	VPUNPCKLWD Z8, Z12, Z26
	VPUNPCKHWD Z8, Z12, Z27
	VFMADD231PS 256(DX), Z26, Z0
	VFMADD231PS 320(DX), Z27, Z1
	VMOVDQU64  384(DI), Z13
	VPUNPCKLWD Z9, Z13, Z28
	VPUNPCKHWD Z9, Z13, Z29
	VFMADD231PS 384(DX), Z28, Z0
	VFMADD231PS 448(DX), Z29, Z1
	ADDQ $448, DI
	ADDQ $512, DX
	DECQ CX
	JNZ  f32h_chunk

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
// decodeF32HAVX512 writes the F32 form of rows F32H rows of chunks
// superchunks to dst, row after row, all but their escapes (patchF32HRow).
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
	LEAQ 64(SI), DI
	MOVQ R10, CX

f32hd_chunk:
	F32H_HIGH
	VMOVDQU64  192(DI), Z10
	VPUNPCKLWD Z6, Z10, Z22
	VPUNPCKHWD Z6, Z10, Z23
	VMOVDQU64  Z22, 0(DX)
	VMOVDQU64  Z23, 64(DX)
	VMOVDQU64  256(DI), Z11
	VPUNPCKLWD Z7, Z11, Z24
	VPUNPCKHWD Z7, Z11, Z25
	VMOVDQU64  Z24, 128(DX)
	VMOVDQU64  Z25, 192(DX)
	VMOVDQU64  320(DI), Z12
	VPUNPCKLWD Z8, Z12, Z26
	VPUNPCKHWD Z8, Z12, Z27
	VMOVDQU64  Z26, 256(DX)
	VMOVDQU64  Z27, 320(DX)
	VMOVDQU64  384(DI), Z13
	VPUNPCKLWD Z9, Z13, Z28
	VPUNPCKHWD Z9, Z13, Z29
	VMOVDQU64  Z28, 384(DX)
	VMOVDQU64  Z29, 448(DX)
	ADDQ $448, DI
	ADDQ $512, DX
	DECQ CX
	JNZ  f32hd_chunk
	ADDQ R12, SI
	DECQ R9
	JNZ  f32hd_row

f32hd_end:
	VZEROUPPER
	RET
