//go:build amd64 && !purego

#include "textflag.h"
#include "attn_amd64.h"

// The avx512 tier's attention kernels (vecf32.go, vecf16.go): the scores
// of several heads (DotF32Heads eight positions at a time, DotF16Heads
// position by position) and their weighted values summed to the outputs in
// one pass (ValuesF32Heads, ValuesF16Heads: the same loops, attn_amd64.h,
// on rows of halves widened exactly by VCVTPH2PS for f16, so the same sums
// in the same order over half the bytes).

// func valuesF32HeadsAVX512(out *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// For head j < heads and column c < cols (a multiple of 16): out[j·cols+c]
// = the sum over positions t < n of p[j·pstride+4t (bytes)] times element
// c of j's value head in row t (values + t·vstride, the value head
// advancing every group heads, the first after group-g0), in the order of
// LanesF32 of width 32 (a lane per t%32, each term one rounding, from
// +0) and ReduceLanes32F32 (GGML_F32x8_REDUCE's tree) after it: the lanes
// of 16 columns are summed in registers and reduced at once, never
// stored. n > 0. The columns go 32 at a time (two lines of each value
// row read together), the last 16 alone.
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
	MOVQ cols+56(FP), R9
	SHLQ $2, R9

vblock2:
	LEAQ 128(DI), CX
	CMPQ CX, R9
	JGT  vblock
	LEAQ (R13)(DI*1), CX
	VLANE2(0, Z16, Z24, wf0, wt0, wd0, FMAF32, 64)
	VLANE2(1, Z17, Z25, wf1, wt1, wd1, FMAF32, 64)
	VLANE2(2, Z18, Z26, wf2, wt2, wd2, FMAF32, 64)
	VLANE2(3, Z19, Z27, wf3, wt3, wd3, FMAF32, 64)
	VLANE2(4, Z20, Z28, wf4, wt4, wd4, FMAF32, 64)
	VLANE2(5, Z21, Z29, wf5, wt5, wd5, FMAF32, 64)
	VLANE2(6, Z22, Z30, wf6, wt6, wd6, FMAF32, 64)
	VLANE2(7, Z23, Z31, wf7, wt7, wd7, FMAF32, 64)
	VTREE(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VTREE(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
	VMOVUPS Z16, (R8)(DI*1)
	VMOVUPS Z24, 64(R8)(DI*1)
	ADDQ $128, DI
	MOVQ cols+56(FP), R9
	SHLQ $2, R9
	JMP  vblock2

vblock:
	CMPQ DI, R9
	JGE  vheaddone
	LEAQ (R13)(DI*1), CX
	VLANE(0, Z16, vf0, vt0, vd0, FMAF32)
	VLANE(1, Z17, vf1, vt1, vd1, FMAF32)
	VLANE(2, Z18, vf2, vt2, vd2, FMAF32)
	VLANE(3, Z19, vf3, vt3, vd3, FMAF32)
	VLANE(4, Z20, vf4, vt4, vd4, FMAF32)
	VLANE(5, Z21, vf5, vt5, vd5, FMAF32)
	VLANE(6, Z22, vf6, vt6, vd6, FMAF32)
	VLANE(7, Z23, vf7, vt7, vd7, FMAF32)
	VTREE(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VMOVUPS Z16, (R8)(DI*1)

vheaddone:
	MOVQ cols+56(FP), R9
	SHLQ $2, R9
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

// The index of the scores of positions 0..7 in the register VDOT8 reduces
// them to: position k (k < 4) in element 0 of 128-bit lane k, 4+k in
// element 1.
DATA dotOrder<>+0(SB)/4, $0
DATA dotOrder<>+4(SB)/4, $4
DATA dotOrder<>+8(SB)/4, $8
DATA dotOrder<>+12(SB)/4, $12
DATA dotOrder<>+16(SB)/4, $1
DATA dotOrder<>+20(SB)/4, $5
DATA dotOrder<>+24(SB)/4, $9
DATA dotOrder<>+28(SB)/4, $13
DATA dotOrder<>+32(SB)/4, $0
DATA dotOrder<>+36(SB)/4, $0
DATA dotOrder<>+40(SB)/4, $0
DATA dotOrder<>+44(SB)/4, $0
DATA dotOrder<>+48(SB)/4, $0
DATA dotOrder<>+52(SB)/4, $0
DATA dotOrder<>+56(SB)/4, $0
DATA dotOrder<>+60(SB)/4, $0
GLOBL dotOrder<>(SB), RODATA|NOPTR, $64

// DOTP sets S to the sum of position p's accumulators of one head,
// (x0+x2 | x1+x3) of GGML_F32x8_REDUCE: the chunks of 32 floats of its
// key (R10, row p, + R15, the key head) times those of the query (R11),
// in two 16-lane FMA accumulators (x0 and x1, x2 and x3 side by side),
// the line next bytes on (R9) from each key line fetched with it. Then R10 moves to row p+1 unless p+1 positions are all that are
// left (R12): a block's rows past the last repeat it. hb-8(SP) holds the
// bytes of a head; DI, CX, R14, Z0, Z1, Z4, Z5 are clobbered.
#define DOTP(p, S, loop) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	LEAQ   (R10)(R15*1), DI \
	XORQ   CX, CX \
loop: \
	LEAQ        (DI)(CX*1), R14 \
	PREFETCHT0  (R14)(R9*1) \
	PREFETCHT0  64(R14)(R9*1) \
	VMOVUPS     (R14), Z4 \
	VMOVUPS     64(R14), Z5 \
	VFMADD231PS (R11)(CX*1), Z4, Z0 \
	VFMADD231PS 64(R11)(CX*1), Z5, Z1 \
	ADDQ        $128, CX \
	CMPQ        CX, hb-8(SP) \
	JLT         loop \
	VADDPS      Z1, Z0, S \
	LEAQ        (R10)(R13*1), R14 \
	CMPQ        R12, $(p+1) \
	CMOVQGT     R14, R10

// DOTP2 is DOTP for heads of two chunks (64 floats), without the loop.
// The first chunk is added to +0 too (a product of −0 makes a lane +0, as
// in ggml): not a plain product. Z2 and Z3 are clobbered too.
#define DOTP2(p, S) \
	LEAQ        (R10)(R15*1), DI \
	PREFETCHT0  (DI)(R9*1) \
	PREFETCHT0  64(DI)(R9*1) \
	PREFETCHT0  128(DI)(R9*1) \
	PREFETCHT0  192(DI)(R9*1) \
	VPXORD      Z0, Z0, Z0 \
	VPXORD      Z1, Z1, Z1 \
	VMOVUPS     (DI), Z2 \
	VMOVUPS     64(DI), Z3 \
	VFMADD231PS (R11), Z2, Z0 \
	VFMADD231PS 64(R11), Z3, Z1 \
	VMOVUPS     128(DI), Z4 \
	VMOVUPS     192(DI), Z5 \
	VFMADD231PS 128(R11), Z4, Z0 \
	VFMADD231PS 192(R11), Z5, Z1 \
	VADDPS      Z1, Z0, S \
	LEAQ        (R10)(R13*1), R14 \
	CMPQ        R12, $(p+1) \
	CMOVQGT     R14, R10

// func dotF32HeadsAVX512(out *float32, ostride, n int, keys *byte, kstride int, q *byte, heads, chunks, group, g0, next int)
// dotF32HeadsAVX2 (the same arguments and sums) eight positions at a
// time: for a block of 8 positions (the last repeating its last row)
// and each head, the 8 dot products' accumulators are reduced together
// (GGML_F32x8_REDUCE's tree on each, in 128-bit lanes and shuffles) and
// the 8 scores stored at once (under a mask past n). The keys are left to
// the hardware's prefetch (a block of rows is read in order, head by head):
// fetching them a block ahead too made the kernel slower, on keys in L2
// and in memory alike.
//
// Registers: R8 the score of head 0 at the block's first position, SI the
// block's first row, R12 the positions left, DX the score of head j, R11
// query j, R15 its key head's offset in a row, AX j's place in its
// group, BX the heads left, R10 the row of the position being summed,
// R13 kstride, R9 next, K1 the block's positions.
TEXT ·dotF32HeadsAVX512(SB), NOSPLIT, $8-88
	MOVQ out+0(FP), R8
	MOVQ n+16(FP), R12
	MOVQ keys+24(FP), SI
	MOVQ kstride+32(FP), R13
	MOVQ next+80(FP), R9
	MOVQ chunks+56(FP), CX
	SHLQ $7, CX
	MOVQ CX, hb-8(SP)
	VMOVDQU32 dotOrder<>(SB), Z31

dblock:
	MOVQ   R12, CX
	CMPQ   CX, $8
	JLE    dmask
	MOVQ   $8, CX

dmask:
	MOVL   $1, R14
	SHLL   CX, R14
	DECL   R14
	KMOVW  R14, K1
	MOVQ   R8, DX
	MOVQ   q+40(FP), R11
	XORQ   R15, R15
	MOVQ   g0+72(FP), AX
	MOVQ   heads+48(FP), BX

dhead:
	MOVQ SI, R10
	CMPQ hb-8(SP), $256
	JNE  dany
	DOTP2(0, Z16)
	DOTP2(1, Z17)
	DOTP2(2, Z18)
	DOTP2(3, Z19)
	DOTP2(4, Z20)
	DOTP2(5, Z21)
	DOTP2(6, Z22)
	DOTP2(7, Z23)
	JMP  dreduce

dany:
	DOTP(0, Z16, dl0)
	DOTP(1, Z17, dl1)
	DOTP(2, Z18, dl2)
	DOTP(3, Z19, dl3)
	DOTP(4, Z20, dl4)
	DOTP(5, Z21, dl5)
	DOTP(6, Z22, dl6)
	DOTP(7, Z23, dl7)

dreduce:
	// (x0+x2)+(x1+x3) of each, two positions a register.
	VSHUFF64X2 $0x44, Z17, Z16, Z24
	VSHUFF64X2 $0xee, Z17, Z16, Z25
	VADDPS     Z25, Z24, Z16
	VSHUFF64X2 $0x44, Z19, Z18, Z24
	VSHUFF64X2 $0xee, Z19, Z18, Z25
	VADDPS     Z25, Z24, Z18
	VSHUFF64X2 $0x44, Z21, Z20, Z24
	VSHUFF64X2 $0xee, Z21, Z20, Z25
	VADDPS     Z25, Z24, Z20
	VSHUFF64X2 $0x44, Z23, Z22, Z24
	VSHUFF64X2 $0xee, Z23, Z22, Z25
	VADDPS     Z25, Z24, Z22
	// The low 128 bits plus the high, four positions a register.
	VSHUFF32X4 $0x88, Z18, Z16, Z24
	VSHUFF32X4 $0xdd, Z18, Z16, Z25
	VADDPS     Z25, Z24, Z16
	VSHUFF32X4 $0x88, Z22, Z20, Z24
	VSHUFF32X4 $0xdd, Z22, Z20, Z25
	VADDPS     Z25, Z24, Z20
	// Two horizontal adds: lane k holds positions k and 4+k.
	VSHUFPS $0x88, Z20, Z16, Z24
	VSHUFPS $0xdd, Z20, Z16, Z25
	VADDPS  Z25, Z24, Z16
	VSHUFPS $0x88, Z16, Z16, Z24
	VSHUFPS $0xdd, Z16, Z16, Z25
	VADDPS  Z25, Z24, Z16
	VPERMPS Z16, Z31, Z16
	VMOVUPS Y16, K1, (DX)
	ADDQ    ostride+8(FP), DX
	ADDQ    hb-8(SP), R11
	INCQ    AX
	CMPQ    AX, group+64(FP)
	JLT     dsame
	XORQ    AX, AX
	ADDQ    hb-8(SP), R15

dsame:
	DECQ BX
	JNZ  dhead
	ADDQ $32, R8
	LEAQ (SI)(R13*8), SI
	SUBQ $8, R12
	JGT  dblock
	VZEROUPPER
	RET

// func valuesF16HeadsAVX512(out *float32, n int, values *uint16, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// valuesF32HeadsAVX512 (the same arguments, the values half-precision):
// for head j < heads and column c < cols (a multiple of 16), out[j·cols+c]
// = ValuesF16Heads' sum, the lanes of 32 columns (one line of each value
// row), then of the last 16, summed in registers and reduced at once. n >
// 0.
//
// Registers: as valuesF32HeadsAVX512, DI the column block in bytes of
// halves (its output twice as far on).
TEXT ·valuesF16HeadsAVX512(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), R8
	MOVQ n+8(FP), R10
	LEAQ -24(R10), R14
	MOVQ values+16(FP), R13
	MOVQ vstride+24(FP), R12
	SHLQ $3, R12
	MOVQ p+32(FP), R11
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

uhead:
	XORQ DI, DI
	MOVQ cols+56(FP), R9
	SHLQ $1, R9

ublock2:
	LEAQ 64(DI), CX
	CMPQ CX, R9
	JGT  ublock
	LEAQ (R13)(DI*1), CX
	VLANE2(0, Z16, Z24, uf0, ut0, ud0, FMAF16, 32)
	VLANE2(1, Z17, Z25, uf1, ut1, ud1, FMAF16, 32)
	VLANE2(2, Z18, Z26, uf2, ut2, ud2, FMAF16, 32)
	VLANE2(3, Z19, Z27, uf3, ut3, ud3, FMAF16, 32)
	VLANE2(4, Z20, Z28, uf4, ut4, ud4, FMAF16, 32)
	VLANE2(5, Z21, Z29, uf5, ut5, ud5, FMAF16, 32)
	VLANE2(6, Z22, Z30, uf6, ut6, ud6, FMAF16, 32)
	VLANE2(7, Z23, Z31, uf7, ut7, ud7, FMAF16, 32)
	VTREE(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VTREE(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
	VMOVUPS Z16, (R8)(DI*2)
	VMOVUPS Z24, 64(R8)(DI*2)
	ADDQ $64, DI
	MOVQ cols+56(FP), R9
	SHLQ $1, R9
	JMP  ublock2

ublock:
	CMPQ DI, R9
	JGE  uheaddone
	LEAQ (R13)(DI*1), CX
	VLANE(0, Z16, vf0, vt0, vd0, FMAF16)
	VLANE(1, Z17, vf1, vt1, vd1, FMAF16)
	VLANE(2, Z18, vf2, vt2, vd2, FMAF16)
	VLANE(3, Z19, vf3, vt3, vd3, FMAF16)
	VLANE(4, Z20, vf4, vt4, vd4, FMAF16)
	VLANE(5, Z21, vf5, vt5, vd5, FMAF16)
	VLANE(6, Z22, vf6, vt6, vd6, FMAF16)
	VLANE(7, Z23, vf7, vt7, vd7, FMAF16)
	VTREE(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VMOVUPS Z16, (R8)(DI*2)

uheaddone:
	MOVQ cols+56(FP), R9
	SHLQ $1, R9
	ADDQ R9, R8
	ADDQ R9, R8
	ADDQ pstride+40(FP), R11
	INCQ AX
	CMPQ AX, group+64(FP)
	JLT  usame
	XORQ AX, AX
	ADDQ R9, R13

usame:
	DECQ BX
	JNZ  uhead
	VZEROUPPER
	RET

// func dotF16HeadsAVX512(out *float32, ostride, n int, keys *uint16, kstride int, q *float32, heads, chunks, group, g0, next int)
// dotF16HeadsAVX2 (the same arguments and sums: each score DotF16Rows' sum
// of heads of chunks·32 elements, no tail) in 16-lane registers, x0 and x1,
// x2 and x3 of GGML_F32x8_REDUCE side by side: position by position, head
// by head, so that the rows are read in order, each key line fetched two
// rows ahead and its counterpart next bytes on. dotF32HeadsAVX512's order
// (eight positions' dots reduced together, head by head) takes less CPU
// with the keys in L2, but the rows read out of order leave the hardware's
// prefetch behind with them in memory: with the values fetched on the way
// and summed after (BenchmarkF16Heads, both, cold) it took ~35% more at 50
// positions and ~15% more at 200.
//
// Registers: as dotF32HeadsAVX2.
TEXT ·dotF16HeadsAVX512(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ ostride+8(FP), R12
	MOVQ next+80(FP), R9
	MOVQ keys+24(FP), SI
	MOVQ kstride+32(FP), R13
	MOVQ chunks+56(FP), R10
	MOVQ R10, R14
	SHLQ $6, R14 // bytes of a key head

gpos:
	MOVQ R8, DX
	MOVQ q+40(FP), R11
	MOVQ SI, R15
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

ghead:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ R15, DI
	MOVQ R10, CX

gchunk:
	PREFETCHT0 0(DI)(R13*2)
	PREFETCHT0 0(DI)(R9*1)
	VCVTPH2PS 0(DI), Z4
	VCVTPH2PS 32(DI), Z5
	VFMADD231PS 0(R11), Z4, Z0
	VFMADD231PS 64(R11), Z5, Z1
	ADDQ $64, DI
	ADDQ $128, R11
	DECQ CX
	JNZ  gchunk
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (DX)
	ADDQ R12, DX
	INCQ AX
	CMPQ AX, group+64(FP)
	JLT  gsame
	XORQ AX, AX
	ADDQ R14, R15

gsame:
	DECQ BX
	JNZ  ghead
	ADDQ $4, R8
	ADDQ R13, SI
	DECQ n+16(FP) // the positions left
	JNZ  gpos
	VZEROUPPER
	RET
