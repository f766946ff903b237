//go:build amd64 && !purego

#include "textflag.h"
#include "attn_amd64.h"

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

// func dotF16HeadsAVX2(out *float32, ostride, n int, keys *uint16, kstride int, q *float32, heads, chunks, group, g0, next int)
// dotF32HeadsAVX2 (the same loop, DOTHEADS) on half-precision keys:
// position by position, head by head, four 8-lane accumulators over the
// chunks of 32 (a chunk of a key one line, fetched two rows ahead, and its
// counterpart next bytes on), reduced as GGML_F32x8_REDUCE.
TEXT ·dotF16HeadsAVX2(SB), NOSPLIT, $0-88
	DOTHEADS(VCVTPH2PS, 16, 6, PFDOT16, fpos, fhead, fchunk, fsame)

// func valuesF16HeadsAVX2(out *float32, n int, values *uint16, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// valuesF32HeadsAVX2 on half-precision values: valuesF16HeadsAVX512 in
// 8-lane registers, 16 columns (half a line of each value row) at a time,
// each lane quadruple's first reduction step folded into the rest of the
// tree as soon as its partner is done.
//
// Registers: as valuesF32HeadsAVX2, DI the column block in bytes of halves
// (its output twice as far on).
TEXT ·valuesF16HeadsAVX2(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), R8
	MOVQ n+8(FP), R10
	LEAQ -24(R10), R14
	MOVQ values+16(FP), R13
	MOVQ vstride+24(FP), R12
	SHLQ $3, R12
	MOVQ p+32(FP), R11
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

zhead:
	XORQ DI, DI

zblock:
	LEAQ (R13)(DI*1), CX
	YLANE(0, zf0, zt0, zd0, FMAF16, 16, Y8)
	VMOVAPS Y0, Y9
	VMOVAPS Y4, Y10
	YLANE(4, zf4, zt4, zd4, FMAF16, 16, Y8)
	VADDPS  Y0, Y9, Y9
	VADDPS  Y4, Y10, Y10
	YLANE(1, zf1, zt1, zd1, FMAF16, 16, Y8)
	VMOVAPS Y0, Y11
	VMOVAPS Y4, Y12
	YLANE(5, zf5, zt5, zd5, FMAF16, 16, Y8)
	VADDPS  Y0, Y11, Y11
	VADDPS  Y4, Y12, Y12
	VADDPS  Y11, Y9, Y9
	VADDPS  Y12, Y10, Y10
	YLANE(2, zf2, zt2, zd2, FMAF16, 16, Y8)
	VMOVAPS Y0, Y11
	VMOVAPS Y4, Y12
	YLANE(6, zf6, zt6, zd6, FMAF16, 16, Y8)
	VADDPS  Y0, Y11, Y11
	VADDPS  Y4, Y12, Y12
	YLANE(3, zf3, zt3, zd3, FMAF16, 16, Y8)
	VMOVAPS Y0, Y13
	VMOVAPS Y4, Y14
	YLANE(7, zf7, zt7, zd7, FMAF16, 16, Y8)
	VADDPS  Y0, Y13, Y13
	VADDPS  Y4, Y14, Y14
	VADDPS  Y13, Y11, Y11
	VADDPS  Y14, Y12, Y12
	VADDPS  Y11, Y9, Y9
	VADDPS  Y12, Y10, Y10
	VMOVUPS Y9, (R8)(DI*2)
	VMOVUPS Y10, 32(R8)(DI*2)
	ADDQ    $32, DI
	MOVQ    cols+56(FP), R9
	SHLQ    $1, R9
	CMPQ    DI, R9
	JLT     zblock
	ADDQ    R9, R8
	ADDQ    R9, R8
	ADDQ    pstride+40(FP), R11
	INCQ    AX
	CMPQ    AX, group+64(FP)
	JLT     zsame
	XORQ    AX, AX
	ADDQ    R9, R13

zsame:
	DECQ BX
	JNZ  zhead
	VZEROUPPER
	RET

// func lanesF16HeadsAVX2(lanes *float32, n int, values *uint16, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// lanesF32HeadsAVX2 on half-precision values (the same arguments and
// sums): lane t%32 of head j += p[j·pstride+4t] times the cols elements of
// j's value head in row t, each widened exactly and added with one
// rounding, from zero; lanes n.. (n < 32) are not written. cols is a
// multiple of 8; a lane's 32 columns are a line of its value row.
//
// Registers: as lanesF32HeadsAVX2, R14 the bytes of a head's value row
// (a lane is twice as many), DI the column in bytes of halves.
TEXT ·lanesF16HeadsAVX2(SB), NOSPLIT, $0-80
	MOVQ values+16(FP), R13
	MOVQ vstride+24(FP), R12
	MOVQ R12, R15
	SHLQ $5, R15
	MOVQ p+32(FP), R11
	MOVQ cols+56(FP), R14
	SHLQ $1, R14
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

mhead:
	MOVQ lanes+0(FP), R8
	XORQ CX, CX

mlane:
	CMPQ CX, $32
	JGE  mheaddone
	CMPQ CX, n+8(FP)
	JGE  mheaddone
	XORQ DI, DI
	MOVQ R14, R10

mcol32:
	CMPQ R10, $64
	JLT  mcol8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ CX, R9
	MOVQ CX, SI
	IMULQ R12, SI
	ADDQ R13, SI
	ADDQ DI, SI
	LEAQ (R11)(CX*4), DX

mt32:
	VBROADCASTSS (DX), Y15
	VCVTPH2PS 0(SI), Y4
	VFMADD231PS Y4, Y15, Y0
	VCVTPH2PS 16(SI), Y5
	VFMADD231PS Y5, Y15, Y1
	VCVTPH2PS 32(SI), Y6
	VFMADD231PS Y6, Y15, Y2
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS Y7, Y15, Y3
	ADDQ $32, R9
	ADDQ R15, SI
	ADDQ $128, DX
	CMPQ R9, n+8(FP)
	JLT  mt32
	VMOVUPS Y0, 0(R8)(DI*2)
	VMOVUPS Y1, 32(R8)(DI*2)
	VMOVUPS Y2, 64(R8)(DI*2)
	VMOVUPS Y3, 96(R8)(DI*2)
	ADDQ $64, DI
	SUBQ $64, R10
	JMP  mcol32

mcol8:
	TESTQ R10, R10
	JZ    mlanedone
	VXORPS Y0, Y0, Y0
	MOVQ CX, R9
	MOVQ CX, SI
	IMULQ R12, SI
	ADDQ R13, SI
	ADDQ DI, SI
	LEAQ (R11)(CX*4), DX

mt8:
	VBROADCASTSS (DX), Y15
	VCVTPH2PS (SI), Y4
	VFMADD231PS Y4, Y15, Y0
	ADDQ $32, R9
	ADDQ R15, SI
	ADDQ $128, DX
	CMPQ R9, n+8(FP)
	JLT  mt8
	VMOVUPS Y0, (R8)(DI*2)
	ADDQ $16, DI
	SUBQ $16, R10
	JMP  mcol8

mlanedone:
	LEAQ (R8)(R14*2), R8
	INCQ CX
	JMP  mlane

mheaddone:
	MOVQ R14, R10
	SHLQ $6, R10
	ADDQ R10, lanes+0(FP)
	ADDQ pstride+40(FP), R11
	INCQ AX
	CMPQ AX, group+64(FP)
	JLT  msame
	XORQ AX, AX
	ADDQ R14, R13

msame:
	DECQ BX
	JNZ  mhead
	VZEROUPPER
	RET
