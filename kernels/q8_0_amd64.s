//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Q8_0 block: fp16 d, int8 qs[32] (34 bytes). The signed×signed byte
// product uses the sign trick, |w| (unsigned) × a·sign(w) (signed) with
// VPMADDUBSW, then VPMADDWD by 1; the activation scale comes prepared as
// eight float32 per block (prepQ8_0).
//
// The floating-point work is ggml's AVX2 vec_dot order, so results match it
// bit for bit: per block acc = fma(fp32(dw)·fp32(da), float(lanes), acc) in
// one 8-lane accumulator, then hsum_float_8.
//
// Registers: SI weights, DI activation quants, DX prepared activation.

#define BLOCK(woff, aoff, poff, acc, y1, y2, x2) \
	VMOVDQU woff+2(SI), y1 \
	VMOVDQU aoff+2(DI), y2 \
	VPSIGNB y1, y2, y2 \
	VPABSB  y1, y1 \
	VPMADDUBSW y2, y1, y1 \
	VPMADDWD Y15, y1, y1 \
	VCVTDQ2PS y1, y1 \
	VPBROADCASTW woff(SI), x2 \
	VCVTPH2PS x2, y2 \
	VMULPS poff(DX), y2, y2 \
	VFMADD231PS y2, y1, acc

// func dotQ8_0AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), R10
	MOVQ act+32(FP), R11
	MOVQ aux+40(FP), R12

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

row:
	VXORPS Y0, Y0, Y0
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

pair:
	CMPQ CX, $2
	JLT  single
	PREFETCHT0 8192(SI)
	BLOCK(0, 0, 0, Y0, Y1, Y2, X2)
	BLOCK(34, 34, 64, Y0, Y9, Y10, X10)
	ADDQ $68, SI
	ADDQ $68, DI
	ADDQ $128, DX
	SUBQ $2, CX
	JMP  pair

single:
	TESTQ CX, CX
	JZ    reduce
	BLOCK(0, 0, 0, Y0, Y1, Y2, X2)
	ADDQ $34, SI

reduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  row
	VZEROUPPER
	RET

// HSUM4 (hsum_amd64.h) reduces the four rows' accumulators Y0..Y3 into X5.

// dotQ8_0Rows4AVX2 is dotQ8_0AVX2 for four rows at a time, rows r..r+3 of
// quad q starting at w + (4q+i)·rowBytes. One row's loop does a single
// dependent FMA per 34-byte block, so it waits on the FMA latency; four
// rows overlap four chains, and the activation quants and the prepared
// scale are loaded once per block for all four. Each row's arithmetic is
// exactly that of dotQ8_0AVX2, so the bits are the same.
//
// Four rows read at once are four interleaved streams, which the hardware
// prefetcher follows worse than the one stream of a row at a time (on
// 768-wide rows the quad kernel without help streamed a third slower than
// the one-row kernel). So AX walks the next quad, 4·rowBytes contiguous
// bytes, as one stream at the quad's own pace, prefetching every line of
// it a quad ahead: 272 bytes (4.25 lines) per pair of blocks.
//
// Registers: SI row 0 of the quad at the current block, R13 rowBytes,
// R14 3·rowBytes, AX the prefetch pointer, DI activation quants, DX
// prepared activation, Y0..Y3 the accumulators of rows 0..3, Y12 the
// block's activation quants, Y13 its scale (eight float32), Y15 int16
// ones.

// ROW4 accumulates one block of a row into acc, q and d the addresses of
// its quants and scale, with the activation block in Y12 and its scale in
// Y13.
#define ROW4(q, d, acc, y1, y2, x2) \
	VMOVDQU q, y1 \
	VPSIGNB y1, Y12, y2 \
	VPABSB  y1, y1 \
	VPMADDUBSW y2, y1, y1 \
	VPMADDWD Y15, y1, y1 \
	VCVTDQ2PS y1, y1 \
	VPBROADCASTW d, x2 \
	VCVTPH2PS x2, y2 \
	VMULPS Y13, y2, y2 \
	VFMADD231PS y2, y1, acc

#define BLOCK4(woff, aoff, poff) \
	VMOVDQU aoff+2(DI), Y12 \
	VMOVUPS poff(DX), Y13 \
	ROW4(woff+2(SI), woff(SI), Y0, Y4, Y5, X5) \
	ROW4(woff+2(SI)(R13*1), woff(SI)(R13*1), Y1, Y6, Y7, X7) \
	ROW4(woff+2(SI)(R13*2), woff(SI)(R13*2), Y2, Y8, Y9, X9) \
	ROW4(woff+2(SI)(R14*1), woff(SI)(R14*1), Y3, Y10, Y11, X11)

// func dotQ8_0Rows4AVX2(out *float32, quads int, w *byte, nb, rowBytes int, act, aux *byte)
TEXT ·dotQ8_0Rows4AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R8
	MOVQ quads+8(FP), R9
	MOVQ w+16(FP), R15
	MOVQ nb+24(FP), R10
	MOVQ rowBytes+32(FP), R13
	MOVQ act+40(FP), R11
	MOVQ aux+48(FP), R12
	LEAQ (R13)(R13*2), R14

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

quad:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R15, SI
	LEAQ (R15)(R13*4), AX
	MOVQ R11, DI
	MOVQ R12, DX
	MOVQ R10, CX

pair4:
	CMPQ CX, $2
	JLT  single4
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	BLOCK4(0, 0, 0)
	BLOCK4(34, 34, 64)
	ADDQ $68, SI
	ADDQ $272, AX
	ADDQ $68, DI
	ADDQ $128, DX
	SUBQ $2, CX
	JMP  pair4

single4:
	TESTQ CX, CX
	JZ    reduce4
	BLOCK4(0, 0, 0)

reduce4:
	HSUM4
	VMOVUPS X5, (R8)
	ADDQ $16, R8
	LEAQ (R15)(R13*4), R15
	DECQ R9
	JNZ  quad
	VZEROUPPER
	RET

// dotQ8_0x4RowsAVX2 is dotQ8_0Rows4AVX2 for a matrix repacked into Q8_0x4
// (q8_0x4.go): per group of four rows, block b is 136 bytes at 136·b, the
// four fp16 scales then each row's 32 quants. Each row's arithmetic is
// exactly that of dotQ8_0AVX2. The four scales, loaded into both halves
// of a register, convert with one VCVTPH2PS and are multiplied by da at
// once; each row broadcasts its own product with one in-lane VPERMILPS. The groups are back to
// back, so SI reads the matrix as one linear stream, prefetched about
// 8 KiB ahead. The activation comes prepared by prepQ4_0x8: per block 40
// bytes, the 32 quants then da as float32.
//
// Registers: SI the block, DI its prepared activation, Y0..Y3 the
// accumulators of rows 0..3, Y12 the activation quants, Y15 int16 ones.

// R4ROW accumulates row r of the block at woff(SI) into acc.
#define R4ROW(woff, r, acc, y1, y2) \
	VMOVDQU (woff+8+32*r)(SI), y1 \
	VPSIGNB y1, Y12, y2 \
	VPABSB  y1, y1 \
	VPMADDUBSW y2, y1, y1 \
	VPMADDWD Y15, y1, y1 \
	VCVTDQ2PS y1, y1 \
	VPERMILPS $(0x55*r), Y13, y2 \
	VFMADD231PS y2, y1, acc

#define R4BLOCK(woff, aoff) \
	VMOVDQU aoff(DI), Y12 \
	VPBROADCASTQ woff(SI), X13 \
	VCVTPH2PS X13, Y13 \
	VBROADCASTSS (aoff+32)(DI), Y14 \
	VMULPS Y14, Y13, Y13 \
	R4ROW(woff, 0, Y0, Y4, Y5) \
	R4ROW(woff, 1, Y1, Y6, Y7) \
	R4ROW(woff, 2, Y2, Y8, Y9) \
	R4ROW(woff, 3, Y3, Y10, Y11)

// func dotQ8_0x4RowsAVX2(out *float32, groups int, w *byte, nb int, aux *byte)
TEXT ·dotQ8_0x4RowsAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), R8
	MOVQ groups+8(FP), R9
	MOVQ w+16(FP), SI
	MOVQ aux+32(FP), R11

	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // int16 ones

r4group:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R11, DI
	MOVQ nb+24(FP), CX

r4pair:
	CMPQ CX, $2
	JLT  r4single
	PREFETCHT0 8192(SI)
	PREFETCHT0 8256(SI)
	PREFETCHT0 8320(SI)
	PREFETCHT0 8384(SI)
	PREFETCHT0 8448(SI)
	R4BLOCK(0, 0)
	R4BLOCK(136, 40)
	ADDQ $272, SI
	ADDQ $80, DI
	SUBQ $2, CX
	JMP  r4pair

r4single:
	TESTQ CX, CX
	JZ    r4reduce
	R4BLOCK(0, 0)
	ADDQ $136, SI

r4reduce:
	HSUM4
	VMOVUPS X5, (R8)
	ADDQ $16, R8
	DECQ R9
	JNZ  r4group
	VZEROUPPER
	RET
