//go:build amd64 && !purego

#include "textflag.h"
#include "attn_amd64.h"

// func axpyF32AVX2(y, x *float32, n int, a float32)
// y[i] = x[i]*a + y[i] with one rounding (VFMADD231), 8 lanes at a time,
// then one element at a time.
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-28
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y0

loop8:
	CMPQ CX, $8
	JLT  tail
	VMOVUPS (SI), Y1
	VMOVUPS (DI), Y2
	VFMADD231PS Y1, Y0, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

tail:
	TESTQ CX, CX
	JZ   done
	VMOVSS (SI), X1
	VMOVSS (DI), X2
	VFMADD231SS X1, X0, X2
	VMOVSS X2, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	RET

// func lanesF32AVX2(lanes *float32, width, cols int, x *float32, stride int, p *float32, n int)
// For each lane l < width: lanes[l*cols+c] = Σ over t = l, l+width, ...
// < n of x[t*stride+c]·p[t], each term added with one rounding (VFMADD231)
// in increasing t, from 0. cols is a multiple of 8, stride is in bytes.
// Columns go 64 at a time (eight independent accumulators), then 8.
//
// Registers: DI the lane's row of lanes, BX the lane, DX the column offset
// in bytes, R14 the x element of position t, R15 p[t], CX t, R13 the bytes
// between positions of one lane.
TEXT ·lanesF32AVX2(SB), NOSPLIT, $0-56
	MOVQ lanes+0(FP), DI
	MOVQ width+8(FP), R8
	MOVQ cols+16(FP), R9
	SHLQ $2, R9 // cols in bytes
	MOVQ x+24(FP), SI
	MOVQ stride+32(FP), R10
	MOVQ p+40(FP), R11
	MOVQ n+48(FP), R12
	MOVQ R8, R13
	IMULQ R10, R13
	XORQ BX, BX

lane:
	CMPQ BX, R8
	JGE  lanesdone
	XORQ DX, DX

chunk64:
	MOVQ R9, AX
	SUBQ DX, AX
	CMPQ AX, $256
	JLT  chunk8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ BX, CX
	MOVQ BX, R14
	IMULQ R10, R14
	ADDQ SI, R14
	ADDQ DX, R14
	LEAQ (R11)(BX*4), R15

loop64:
	CMPQ CX, R12
	JGE  store64
	VBROADCASTSS (R15), Y15
	VFMADD231PS 0(R14), Y15, Y0
	VFMADD231PS 32(R14), Y15, Y1
	VFMADD231PS 64(R14), Y15, Y2
	VFMADD231PS 96(R14), Y15, Y3
	VFMADD231PS 128(R14), Y15, Y4
	VFMADD231PS 160(R14), Y15, Y5
	VFMADD231PS 192(R14), Y15, Y6
	VFMADD231PS 224(R14), Y15, Y7
	ADDQ R13, R14
	LEAQ (R15)(R8*4), R15
	ADDQ R8, CX
	JMP  loop64

store64:
	VMOVUPS Y0, 0(DI)(DX*1)
	VMOVUPS Y1, 32(DI)(DX*1)
	VMOVUPS Y2, 64(DI)(DX*1)
	VMOVUPS Y3, 96(DI)(DX*1)
	VMOVUPS Y4, 128(DI)(DX*1)
	VMOVUPS Y5, 160(DI)(DX*1)
	VMOVUPS Y6, 192(DI)(DX*1)
	VMOVUPS Y7, 224(DI)(DX*1)
	ADDQ $256, DX
	JMP  chunk64

chunk8:
	CMPQ AX, $32
	JLT  nextlane
	VXORPS Y0, Y0, Y0
	MOVQ BX, CX
	MOVQ BX, R14
	IMULQ R10, R14
	ADDQ SI, R14
	ADDQ DX, R14
	LEAQ (R11)(BX*4), R15

loop8:
	CMPQ CX, R12
	JGE  store8
	VBROADCASTSS (R15), Y15
	VFMADD231PS 0(R14), Y15, Y0
	ADDQ R13, R14
	LEAQ (R15)(R8*4), R15
	ADDQ R8, CX
	JMP  loop8

store8:
	VMOVUPS Y0, 0(DI)(DX*1)
	ADDQ $32, DX
	MOVQ R9, AX
	SUBQ DX, AX
	JMP  chunk8

nextlane:
	ADDQ R9, DI
	INCQ BX
	JMP  lane

lanesdone:
	VZEROUPPER
	RET

// func reduceLanes32AVX2(out, lanes *float32, cols int)
// out[c] = GGML_F32x8_REDUCE of the 32 lanes lanes[l*cols+c], eight
// columns at a time: x_j = (L_j + L_16+j) + (L_8+j + L_24+j), then
// ((x0+x4) + (x1+x5)) + ((x2+x6) + (x3+x7)). cols is a multiple of 8.
TEXT ·reduceLanes32AVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ lanes+8(FP), SI
	MOVQ cols+16(FP), CX
	MOVQ CX, R9
	SHLQ $2, R9             // bytes per lane
	LEAQ (SI)(R9*8), R11    // lane 8
	LEAQ (R11)(R9*8), R12   // lane 16
	LEAQ (R12)(R9*8), R13   // lane 24

red:
	TESTQ CX, CX
	JZ    reddone
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R12, DX
	MOVQ R13, R8
	// x_j for j = 0..7 into Y0..Y7; lane j+k·8 of the block at AX, BX, DX, R8
	// advanced by one lane per j.
	VMOVUPS (AX), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y0, Y0
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y1
	VADDPS (DX), Y1, Y1
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y1, Y1
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y2
	VADDPS (DX), Y2, Y2
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y2, Y2
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y3
	VADDPS (DX), Y3, Y3
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y3, Y3
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y4
	VADDPS (DX), Y4, Y4
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y4, Y4
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y5
	VADDPS (DX), Y5, Y5
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y5, Y5
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y6
	VADDPS (DX), Y6, Y6
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y6, Y6
	ADDQ R9, AX
	ADDQ R9, BX
	ADDQ R9, DX
	ADDQ R9, R8
	VMOVUPS (AX), Y7
	VADDPS (DX), Y7, Y7
	VMOVUPS (BX), Y8
	VADDPS (R8), Y8, Y8
	VADDPS Y8, Y7, Y7
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	SUBQ $8, CX
	JMP  red

reddone:
	VZEROUPPER
	RET

// func rotateF32FMA(v, cs *float32, pairs, step, off int)
// Pair i is x0 = v[i·step], x1 = v[i·step+off] (step and off in bytes),
// turned by c = cs[2i], s = cs[2i+1]: x0·c − x1·s and x0·s + x1·c, each
// with the product by x1 rounded first and one fused operation after
// (VFMSUB231SS is fma(x0, c, −(x1·s)) exactly).
TEXT ·rotateF32FMA(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), DI
	MOVQ cs+8(FP), SI
	MOVQ pairs+16(FP), CX
	MOVQ step+24(FP), R8
	MOVQ off+32(FP), R9

rot:
	VMOVSS (SI), X2      // c
	VMOVSS 4(SI), X3     // s
	VMOVSS (DI), X0      // x0
	VMOVSS (DI)(R9*1), X1 // x1
	VMULSS X3, X1, X4    // x1·s
	VFMSUB231SS X2, X0, X4 // x0·c − x1·s
	VMULSS X2, X1, X5    // x1·c
	VFMADD231SS X3, X0, X5 // x0·s + x1·c
	VMOVSS X4, (DI)
	VMOVSS X5, (DI)(R9*1)
	ADDQ $8, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  rot
	RET

// func dotF32HeadsAVX2(out *float32, ostride, n int, keys *byte, kstride int, q *byte, heads, chunks, group, g0, next int)
// For position t < n and query head j < heads: out[j·ostride+4t] (bytes)
// = the dot product of the chunks·32 floats of query j (q, heads back to
// back) with those of its key head in row t (keys + t·kstride, the key
// head advancing every group query heads, the first after group-g0), in
// ggml_vec_dot_f32's order as dotF32AVX2. The positions go outer, the
// heads inner: the rows are read in order, each fetched two rows ahead.
// The bytes next bytes on from each key read (the values, for the pass
// after) are fetched into the cache too.
//
// Registers: SI the row of position t, R8 the score of head 0 at t, DX
// that of head j, R11 query j, R15 its key head, DI the key chunk, CX the
// chunks left, AX j's place in its group, BX the heads left, R9 next; the
// positions left are counted in n.
TEXT ·dotF32HeadsAVX2(SB), NOSPLIT, $0-88
	DOTHEADS(VMOVUPS, 32, 7, PFDOT32, hpos, hhead, hchunk, hsame)

// func lanesF32HeadsAVX2(lanes *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// For position t < n and head j < heads: lane t%32 of head j (lanes +
// j·32·cols floats, a lane cols floats) += p[j·pstride+4t] (bytes) times
// the cols floats of j's value head in row t (values + t·vstride, the
// value head advancing every group heads, the first after group-g0), each
// element with one rounding (VFMADD231), from zero: a lane's first term (t
// < 32) is added to zero in a register. Lanes n.. (n < 32) are not
// written. cols is a multiple of 8. Each lane is summed in registers,
// positions l, l+32, ... in order, and stored once: the lanes are not
// read, so a lane costs its stores and its value rows only (which the key
// pass, DotF32Heads with the values as next, has brought into the cache).
//
// Registers: R8 lane l of head j, R13 j's value head, R12 vstride, R15
// 32·vstride, R11 the weights of head j, R14 the bytes of a lane, CX l,
// DI the column (bytes) of the lane's part being summed, R10 the bytes
// left of the lane, R9 t, SI row t at column DI, DX the weight of t, AX
// j's place in its group, BX the heads left; the head's first lane is
// kept in lanes (the argument).
TEXT ·lanesF32HeadsAVX2(SB), NOSPLIT, $0-80
	MOVQ values+16(FP), R13
	MOVQ vstride+24(FP), R12
	MOVQ R12, R15
	SHLQ $5, R15
	MOVQ p+32(FP), R11
	MOVQ cols+56(FP), R14
	SHLQ $2, R14
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

lhead:
	MOVQ lanes+0(FP), R8
	XORQ CX, CX

llane:
	CMPQ CX, $32
	JGE  lheaddone
	CMPQ CX, n+8(FP)
	JGE  lheaddone
	XORQ DI, DI
	MOVQ R14, R10

lcol32:
	CMPQ R10, $128
	JLT  lcol8
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

lt32:
	VBROADCASTSS (DX), Y15
	VFMADD231PS 0(SI), Y15, Y0
	VFMADD231PS 32(SI), Y15, Y1
	VFMADD231PS 64(SI), Y15, Y2
	VFMADD231PS 96(SI), Y15, Y3
	ADDQ $32, R9
	ADDQ R15, SI
	ADDQ $128, DX
	CMPQ R9, n+8(FP)
	JLT  lt32
	VMOVUPS Y0, 0(R8)(DI*1)
	VMOVUPS Y1, 32(R8)(DI*1)
	VMOVUPS Y2, 64(R8)(DI*1)
	VMOVUPS Y3, 96(R8)(DI*1)
	ADDQ $128, DI
	SUBQ $128, R10
	JMP  lcol32

lcol8:
	TESTQ R10, R10
	JZ    llanedone
	VXORPS Y0, Y0, Y0
	MOVQ CX, R9
	MOVQ CX, SI
	IMULQ R12, SI
	ADDQ R13, SI
	ADDQ DI, SI
	LEAQ (R11)(CX*4), DX

lt8:
	VBROADCASTSS (DX), Y15
	VFMADD231PS (SI), Y15, Y0
	ADDQ $32, R9
	ADDQ R15, SI
	ADDQ $128, DX
	CMPQ R9, n+8(FP)
	JLT  lt8
	VMOVUPS Y0, (R8)(DI*1)
	ADDQ $32, DI
	SUBQ $32, R10
	JMP  lcol8

llanedone:
	ADDQ R14, R8
	INCQ CX
	JMP  llane

lheaddone:
	MOVQ R14, R10
	SHLQ $5, R10
	ADDQ R10, lanes+0(FP)
	ADDQ pstride+40(FP), R11
	INCQ AX
	CMPQ AX, group+64(FP)
	JLT  lsame
	XORQ AX, AX
	ADDQ R14, R13

lsame:
	DECQ BX
	JNZ  lhead
	VZEROUPPER
	RET

// func mulF32AVX2(dst, x *float32, n int)
// dst[i] = dst[i] * x[i] for i < n, 32 then 8 then 1 at a time.
TEXT ·mulF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

mulF32AVX232:
	CMPQ CX, $32
	JLT  mulF32AVX28
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMULPS 0(SI), Y0, Y0
	VMULPS 32(SI), Y1, Y1
	VMULPS 64(SI), Y2, Y2
	VMULPS 96(SI), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  mulF32AVX232

mulF32AVX28:
	CMPQ CX, $8
	JLT  mulF32AVX21
	VMOVUPS (DI), Y0
	VMULPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  mulF32AVX28

mulF32AVX21:
	TESTQ CX, CX
	JZ    mulF32AVX2done
	VMOVSS (DI), X0
	VMULSS (SI), X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	JMP  mulF32AVX21

mulF32AVX2done:
	VZEROUPPER
	RET

// func addF32AVX2(dst, x *float32, n int)
// dst[i] = dst[i] + x[i] for i < n, 32 then 8 then 1 at a time.
TEXT ·addF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

addF32AVX232:
	CMPQ CX, $32
	JLT  addF32AVX28
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS 0(SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  addF32AVX232

addF32AVX28:
	CMPQ CX, $8
	JLT  addF32AVX21
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  addF32AVX28

addF32AVX21:
	TESTQ CX, CX
	JZ    addF32AVX2done
	VMOVSS (DI), X0
	VADDSS (SI), X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	JMP  addF32AVX21

addF32AVX2done:
	VZEROUPPER
	RET

// func valuesF32HeadsAVX2(out *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)
// valuesF32HeadsAVX512 in 8-lane registers, 16 columns at a time (cols is
// a multiple of 16): each lane quadruple's first reduction step T(l) is
// folded into the rest of the tree as soon as its partner is done, in the
// tree's order (T0+T4, T1+T5, their sum; T2+T6, T3+T7, their sum; the
// two), so that no more than six sums are live beside the lanes.
//
// Registers: as valuesF32HeadsAVX512, CX the value row 0 of the head at
// column DI.
TEXT ·valuesF32HeadsAVX2(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), R8
	MOVQ n+8(FP), R10
	LEAQ -24(R10), R14
	MOVQ values+16(FP), R13
	MOVQ vstride+24(FP), R12
	SHLQ $3, R12
	MOVQ p+32(FP), R11
	MOVQ g0+72(FP), AX
	MOVQ heads+48(FP), BX

yhead:
	XORQ DI, DI

yblock:
	LEAQ (R13)(DI*1), CX
	YLANE(0, yf0, yt0, yd0, FMAF32, 32, Y15)
	VMOVAPS Y0, Y9
	VMOVAPS Y4, Y10
	YLANE(4, yf4, yt4, yd4, FMAF32, 32, Y15)
	VADDPS  Y0, Y9, Y9
	VADDPS  Y4, Y10, Y10
	YLANE(1, yf1, yt1, yd1, FMAF32, 32, Y15)
	VMOVAPS Y0, Y11
	VMOVAPS Y4, Y12
	YLANE(5, yf5, yt5, yd5, FMAF32, 32, Y15)
	VADDPS  Y0, Y11, Y11
	VADDPS  Y4, Y12, Y12
	VADDPS  Y11, Y9, Y9
	VADDPS  Y12, Y10, Y10
	YLANE(2, yf2, yt2, yd2, FMAF32, 32, Y15)
	VMOVAPS Y0, Y11
	VMOVAPS Y4, Y12
	YLANE(6, yf6, yt6, yd6, FMAF32, 32, Y15)
	VADDPS  Y0, Y11, Y11
	VADDPS  Y4, Y12, Y12
	YLANE(3, yf3, yt3, yd3, FMAF32, 32, Y15)
	VMOVAPS Y0, Y13
	VMOVAPS Y4, Y14
	YLANE(7, yf7, yt7, yd7, FMAF32, 32, Y15)
	VADDPS  Y0, Y13, Y13
	VADDPS  Y4, Y14, Y14
	VADDPS  Y13, Y11, Y11
	VADDPS  Y14, Y12, Y12
	VADDPS  Y11, Y9, Y9
	VADDPS  Y12, Y10, Y10
	VMOVUPS Y9, (R8)(DI*1)
	VMOVUPS Y10, 32(R8)(DI*1)
	ADDQ    $64, DI
	MOVQ    cols+56(FP), R9
	SHLQ    $2, R9
	CMPQ    DI, R9
	JLT     yblock
	ADDQ    R9, R8
	ADDQ    pstride+40(FP), R11
	INCQ    AX
	CMPQ    AX, group+64(FP)
	JLT     ysame
	XORQ    AX, AX
	ADDQ    R9, R13

ysame:
	DECQ BX
	JNZ  yhead
	VZEROUPPER
	RET
