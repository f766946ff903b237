// Shared by the amd64 attention kernels (#include "attn_amd64.h"): the
// loops over a KV cache's rows of ValuesF32Heads (attn_avx512_amd64.s,
// vecf32_amd64.s) and DotF32Heads' avx2 kernel and of their
// half-precision twins ValuesF16Heads and DotF16Heads
// (attn_avx512_amd64.s, vecf16_amd64.s), the same code but for how a
// row's elements are read: a float32 row as a memory operand, a
// half-precision one widened (exactly) by VCVTPH2PS first. The macros take
// the reading as a parameter, FMA(mem, w, acc, T): acc += mem·w, fused, T
// a register it may clobber (or LOAD, the instruction that loads a row's
// elements into a register); and the byte offsets that follow from the
// element's width.

// FMAF32 adds the float32 elements at mem times w to acc, fused.
#define FMAF32(mem, w, acc, T) VFMADD231PS mem, w, acc

// FMAF16 adds the half-precision elements at mem (half as many bytes)
// times w to acc, fused: the elements widened into T first.
#define FMAF16(mem, w, acc, T) VCVTPH2PS mem, T; VFMADD231PS T, w, acc

// VLANE sums lane l (0..7) of the 32 of the current head's column block
// and lanes l+8, l+16, l+24 beside it (positions l+8k+32r < n, weight
// times value row, each added with one rounding from +0, in increasing
// r, as LanesF32 sums them), then sets T to their first step of
// ReduceLanes32F32, (lane l + lane l+16) + (lane l+8 + lane l+24).
// CX is the value row l at the block's column, R10 n, R14 n-24, R12 8
// value rows (bytes), R11 the weights of the head; R9, SI, DX, R15 and
// Z0..Z7, Z12 are clobbered. FMA reads the rows.
#define VLANE(l, T, full, tail, done, FMA) \
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
	FMA((SI), Z4, Z0, Z12) \
	VBROADCASTSS 32(DX), Z5 \
	FMA((SI)(R12*1), Z5, Z1, Z12) \
	VBROADCASTSS 64(DX), Z6 \
	FMA((SI)(R12*2), Z6, Z2, Z12) \
	LEAQ         (SI)(R12*2), R15 \
	VBROADCASTSS 96(DX), Z7 \
	FMA((R15)(R12*1), Z7, Z3, Z12) \
	ADDQ         $32, R9 \
	LEAQ         (SI)(R12*4), SI \
	ADDQ         $128, DX \
	CMPQ         R9, R14 \
	JLT          full \
tail: \
	CMPQ         R9, R10 \
	JGE          done \
	VBROADCASTSS 0(DX), Z4 \
	FMA((SI), Z4, Z0, Z12) \
	LEAQ         8(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 32(DX), Z5 \
	FMA((SI)(R12*1), Z5, Z1, Z12) \
	LEAQ         16(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 64(DX), Z6 \
	FMA((SI)(R12*2), Z6, Z2, Z12) \
done: \
	VADDPS Z2, Z0, Z0 \
	VADDPS Z3, Z1, Z1 \
	VADDPS Z1, Z0, T \
	ADDQ   vstride+24(FP), CX

// VLANE2 is VLANE on 32 columns, the lanes of the first 16 in Z0..Z3
// (their first reduction step to Ta), of the next 16 (off bytes on in a
// row) in Z4..Z7 (to Tb); Z8..Z11 and Z13 are clobbered too.
#define VLANE2(l, Ta, Tb, full, tail, done, FMA, off) \
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
	FMA((SI), Z8, Z0, Z12) \
	FMA(off(SI), Z8, Z4, Z13) \
	VBROADCASTSS 32(DX), Z9 \
	FMA((SI)(R12*1), Z9, Z1, Z12) \
	FMA(off(SI)(R12*1), Z9, Z5, Z13) \
	VBROADCASTSS 64(DX), Z10 \
	FMA((SI)(R12*2), Z10, Z2, Z12) \
	FMA(off(SI)(R12*2), Z10, Z6, Z13) \
	LEAQ         (SI)(R12*2), R15 \
	VBROADCASTSS 96(DX), Z11 \
	FMA((R15)(R12*1), Z11, Z3, Z12) \
	FMA(off(R15)(R12*1), Z11, Z7, Z13) \
	ADDQ         $32, R9 \
	LEAQ         (SI)(R12*4), SI \
	ADDQ         $128, DX \
	CMPQ         R9, R14 \
	JLT          full \
tail: \
	CMPQ         R9, R10 \
	JGE          done \
	VBROADCASTSS 0(DX), Z8 \
	FMA((SI), Z8, Z0, Z12) \
	FMA(off(SI), Z8, Z4, Z13) \
	LEAQ         8(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 32(DX), Z9 \
	FMA((SI)(R12*1), Z9, Z1, Z12) \
	FMA(off(SI)(R12*1), Z9, Z5, Z13) \
	LEAQ         16(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 64(DX), Z10 \
	FMA((SI)(R12*2), Z10, Z2, Z12) \
	FMA(off(SI)(R12*2), Z10, Z6, Z13) \
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

// YLANE is VLANE in 8-lane registers on 16 columns: lanes l, l+8, l+16,
// l+24 of the first 8 columns in Y0..Y3, of the next 8 (off bytes on in a
// row) in Y4..Y7, their first reduction step left in Y0 and Y4. CX is the
// head's value row 0 at the block's column; Y8 and W hold the weights (W
// may be Y8: FMAF16 needs Y15 for the elements); R9, SI, DX, R15 and Y15
// are clobbered.
#define YLANE(l, full, tail, done, FMA, off, W) \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	MOVQ   $l, R9 \
	MOVQ   R9, SI \
	IMULQ  vstride+24(FP), SI \
	ADDQ   CX, SI \
	LEAQ   (4*l)(R11), DX \
	CMPQ   R9, R14 \
	JGE    tail \
full: \
	VBROADCASTSS 0(DX), Y8 \
	FMA((SI), Y8, Y0, Y15) \
	FMA(off(SI), Y8, Y4, Y15) \
	VBROADCASTSS 32(DX), W \
	FMA((SI)(R12*1), W, Y1, Y15) \
	FMA(off(SI)(R12*1), W, Y5, Y15) \
	VBROADCASTSS 64(DX), Y8 \
	FMA((SI)(R12*2), Y8, Y2, Y15) \
	FMA(off(SI)(R12*2), Y8, Y6, Y15) \
	LEAQ         (SI)(R12*2), R15 \
	VBROADCASTSS 96(DX), W \
	FMA((R15)(R12*1), W, Y3, Y15) \
	FMA(off(R15)(R12*1), W, Y7, Y15) \
	ADDQ         $32, R9 \
	LEAQ         (SI)(R12*4), SI \
	ADDQ         $128, DX \
	CMPQ         R9, R14 \
	JLT          full \
tail: \
	CMPQ         R9, R10 \
	JGE          done \
	VBROADCASTSS 0(DX), Y8 \
	FMA((SI), Y8, Y0, Y15) \
	FMA(off(SI), Y8, Y4, Y15) \
	LEAQ         8(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 32(DX), W \
	FMA((SI)(R12*1), W, Y1, Y15) \
	FMA(off(SI)(R12*1), W, Y5, Y15) \
	LEAQ         16(R9), R15 \
	CMPQ         R15, R10 \
	JGE          done \
	VBROADCASTSS 64(DX), Y8 \
	FMA((SI)(R12*2), Y8, Y2, Y15) \
	FMA(off(SI)(R12*2), Y8, Y6, Y15) \
done: \
	VADDPS Y2, Y0, Y0 \
	VADDPS Y3, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y6, Y4, Y4 \
	VADDPS Y7, Y5, Y5 \
	VADDPS Y5, Y4, Y4

// DOTHEADS is the body of dotF32HeadsAVX2 and dotF16HeadsAVX2 (their
// arguments and registers): position by position, head by head, four
// 8-lane FMA accumulators over the chunks of 32 elements of a key, reduced
// as GGML_F32x8_REDUCE. A chunk is 4·w bytes of the key (w bytes of 8
// elements), its parts read by LOAD and its lines fetched by PF(DI); a key
// head is chunks<<sh bytes.
#define DOTHEADS(LOAD, w, sh, PF, pos, head, chunk, same) \
	MOVQ out+0(FP), R8 \
	MOVQ ostride+8(FP), R12 \
	MOVQ next+80(FP), R9 \
	MOVQ keys+24(FP), SI \
	MOVQ kstride+32(FP), R13 \
	MOVQ chunks+56(FP), R10 \
	MOVQ R10, R14 \
	SHLQ $sh, R14 \
pos: \
	MOVQ R8, DX \
	MOVQ q+40(FP), R11 \
	MOVQ SI, R15 \
	MOVQ g0+72(FP), AX \
	MOVQ heads+48(FP), BX \
head: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	MOVQ R15, DI \
	MOVQ R10, CX \
chunk: \
	PF(DI) \
	LOAD (0*w)(DI), Y4 \
	LOAD (1*w)(DI), Y5 \
	LOAD (2*w)(DI), Y6 \
	LOAD (3*w)(DI), Y7 \
	VFMADD231PS 0(R11), Y4, Y0 \
	VFMADD231PS 32(R11), Y5, Y1 \
	VFMADD231PS 64(R11), Y6, Y2 \
	VFMADD231PS 96(R11), Y7, Y3 \
	ADDQ $(4*w), DI \
	ADDQ $128, R11 \
	DECQ CX \
	JNZ  chunk \
	VADDPS Y2, Y0, Y0 \
	VADDPS Y3, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0 \
	VMOVSS X0, (DX) \
	ADDQ R12, DX \
	INCQ AX \
	CMPQ AX, group+64(FP) \
	JLT  same \
	XORQ AX, AX \
	ADDQ R14, R15 \
same: \
	DECQ BX \
	JNZ  head \
	ADDQ $4, R8 \
	ADDQ R13, SI \
	DECQ n+16(FP) \
	JNZ  pos \
	VZEROUPPER \
	RET

// PFDOT32 fetches the two lines of a key chunk of 32 floats two rows on
// and next bytes on; PFDOT16 the line of a chunk of 32 halves.
#define PFDOT32(R) PREFETCHT0 0(R)(R13*2); PREFETCHT0 64(R)(R13*2); PREFETCHT0 0(R)(R9*1); PREFETCHT0 64(R)(R9*1)
#define PFDOT16(R) PREFETCHT0 0(R)(R13*2); PREFETCHT0 0(R)(R9*1)
