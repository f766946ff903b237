//go:build amd64 && !purego

#include "textflag.h"

// The avx512 tier's attention kernels (vecf32.go): the weighted values of
// several heads summed to their outputs in one pass (ValuesF32Heads).

// VLANE sums lane l (0..7) of the 32 of the current head's column block
// and lanes l+8, l+16, l+24 beside it (positions l+8k+32r < n, weight
// times value row, each added with one rounding from +0, in increasing
// r, as LanesF32 sums them), then sets T to their first step of
// ReduceLanes32F32, (lane l + lane l+16) + (lane l+8 + lane l+24).
// CX is the value row l at column DI, R10 n, R14 n-24, R12 8 value
// rows (bytes), R11 the weights of the head; R9, SI, DX, R15 and
// Z0..Z7 are clobbered.
#define VLANE(l, T, full, tail, done) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	MOVQ   $l, R9 \
	MOVQ   CX, SI \
	LEAQ   (4*l)(R11), DX \
	CMPQ   R9, R14 \
	JGE    tail \
full: \
	VBROADCASTSS 0(DX), Z4 \
	VFMADD231PS  (SI), Z4, Z0 \
	VBROADCASTSS 32(DX), Z5 \
	VFMADD231PS  (SI)(R12*1), Z5, Z1 \
	VBROADCASTSS 64(DX), Z6 \
	VFMADD231PS  (SI)(R12*2), Z6, Z2 \
	LEAQ         (SI)(R12*2), R15 \
	VBROADCASTSS 96(DX), Z7 \
	VFMADD231PS  (R15)(R12*1), Z7, Z3 \
	ADDQ         $32, R9 \
	LEAQ         (SI)(R12*4), SI \
	ADDQ         $128, DX \
	CMPQ         R9, R14 \
	JLT          full \
tail: \
	CMPQ         R9, R10 \
	JGE          done \
	VBROADCASTSS 0(DX), Z4 \
	VFMADD231PS  (SI), Z4, Z0 \
	LEAQ         8(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 32(DX), Z5 \
	VFMADD231PS  (SI)(R12*1), Z5, Z1 \
	LEAQ         16(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 64(DX), Z6 \
	VFMADD231PS  (SI)(R12*2), Z6, Z2 \
done: \
	VADDPS Z2, Z0, Z0 \
	VADDPS Z3, Z1, Z1 \
	VADDPS Z1, Z0, T \
	ADDQ   vstride+24(FP), CX

// VLANE2 is VLANE on 32 columns, the lanes of the first 16 in Z0..Z3
// (their first reduction step to Ta), of the next 16 in Z4..Z7 (to Tb);
// Z8..Z11 are clobbered too.
#define VLANE2(l, Ta, Tb, full, tail, done) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	MOVQ   $l, R9 \
	MOVQ   CX, SI \
	LEAQ   (4*l)(R11), DX \
	CMPQ   R9, R14 \
	JGE    tail \
full: \
	VBROADCASTSS 0(DX), Z8 \
	VFMADD231PS  (SI), Z8, Z0 \
	VFMADD231PS  64(SI), Z8, Z4 \
	VBROADCASTSS 32(DX), Z9 \
	VFMADD231PS  (SI)(R12*1), Z9, Z1 \
	VFMADD231PS  64(SI)(R12*1), Z9, Z5 \
	VBROADCASTSS 64(DX), Z10 \
	VFMADD231PS  (SI)(R12*2), Z10, Z2 \
	VFMADD231PS  64(SI)(R12*2), Z10, Z6 \
	LEAQ         (SI)(R12*2), R15 \
	VBROADCASTSS 96(DX), Z11 \
	VFMADD231PS  (R15)(R12*1), Z11, Z3 \
	VFMADD231PS  64(R15)(R12*1), Z11, Z7 \
	ADDQ         $32, R9 \
	LEAQ         (SI)(R12*4), SI \
	ADDQ         $128, DX \
	CMPQ         R9, R14 \
	JLT          full \
tail: \
	CMPQ         R9, R10 \
	JGE          done \
	VBROADCASTSS 0(DX), Z8 \
	VFMADD231PS  (SI), Z8, Z0 \
	VFMADD231PS  64(SI), Z8, Z4 \
	LEAQ         8(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 32(DX), Z9 \
	VFMADD231PS  (SI)(R12*1), Z9, Z1 \
	VFMADD231PS  64(SI)(R12*1), Z9, Z5 \
	LEAQ         16(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 64(DX), Z10 \
	VFMADD231PS  (SI)(R12*2), Z10, Z2 \
	VFMADD231PS  64(SI)(R12*2), Z10, Z6 \
done: \
	VADDPS Z2, Z0, Z0 \
	VADDPS Z3, Z1, Z1 \
	VADDPS Z1, Z0, Ta \
	VADDPS Z6, Z4, Z4 \
	VADDPS Z7, Z5, Z5 \
	VADDPS Z5, Z4, Tb \
	ADDQ   vstride+24(FP), CX

// VTREE sets T0 to ((T0+T4)+(T1+T5))+((T2+T6)+(T3+T7)), the rest of
// ReduceLanes32F32's tree.
#define VTREE(T0, T1, T2, T3, T4, T5, T6, T7) \
	VADDPS T4, T0, T0 \
	VADDPS T5, T1, T1 \
	VADDPS T1, T0, T0 \
	VADDPS T6, T2, T2 \
	VADDPS T7, T3, T3 \
	VADDPS T3, T2, T2 \
	VADDPS T2, T0, T0

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
	VLANE2(0, Z16, Z24, wf0, wt0, wd0)
	VLANE2(1, Z17, Z25, wf1, wt1, wd1)
	VLANE2(2, Z18, Z26, wf2, wt2, wd2)
	VLANE2(3, Z19, Z27, wf3, wt3, wd3)
	VLANE2(4, Z20, Z28, wf4, wt4, wd4)
	VLANE2(5, Z21, Z29, wf5, wt5, wd5)
	VLANE2(6, Z22, Z30, wf6, wt6, wd6)
	VLANE2(7, Z23, Z31, wf7, wt7, wd7)
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
	VLANE(0, Z16, vf0, vt0, vd0)
	VLANE(1, Z17, vf1, vt1, vd1)
	VLANE(2, Z18, vf2, vt2, vd2)
	VLANE(3, Z19, vf3, vt3, vd3)
	VLANE(4, Z20, vf4, vt4, vd4)
	VLANE(5, Z21, vf5, vt5, vd5)
	VLANE(6, Z22, vf6, vt6, vd6)
	VLANE(7, Z23, vf7, vt7, vd7)
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
