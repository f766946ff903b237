//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels for QSF's rotated table types (QSF_Q2R, QSF_Q3R, QSF_Q4R)
// against Q8_0 activations, in quant's order, four rows at a time.
//
// A block of a row goes to two registers of table values: Y1 the elements
// 0..15 (sub-block 0) and 32..47 (sub-block 2), Y2 16..31 and 48..63
// (sub-blocks 1 and 3), the codes looked up in the type's int8 table
// (VPSHUFB). They get the signs of the activation quants (VPSIGNB, or for
// QSF_Q2R the codes are mirrored beforehand, c^3, whose value is −T[c])
// and are multiplied with the quants' absolute values (VPMADDUBSW); the
// int16 pair sums are multiplied by their sub-blocks' multipliers 1+sc_k
// and added in pairs (VPMADDWD with a row of rotMul), and the two
// registers added: four int32 lanes of the first half, four of the
// second. The four rows' registers are added up together (unpacking) to
// the exact integers Iₕ of the rows, in lanes r (h = 0) and 4+r (h = 1),
// converted at once, multiplied by d·dₐₕ (the rows' d times the block's
// activation scales, each product rounded to float32) and added to the
// rows' acc₀, acc₁ (lanes r and 4+r of Y0): one float32 step per half
// block, the blocks in order, no FMA: the float order of quant's
// reference. At the end, acc₀+acc₁ of each row. Rows left over from the
// fours go one at a time, the same steps in lanes 0 and 4.
//
// Registers: SI the first row's weights (R11 the second's, the third and
// fourth at R10 more), R10 bytes per row, DX blocks per row, R12 the
// activation in prepRot's form (R14 its start), R13 rotMul, R8 out, R9
// rows left, CX blocks left, AX/BX multiplier offsets. Y0 the rows'
// acc₀, acc₁; Y3/Y4 the block's |q|; Y14 the code mask, Y13 the table,
// Y12 the lane shifts of the codes, Y7/Y6/Y8 the high bits of QSF_Q3R.

DATA rotTab4<>+0(SB)/8, $0xfaeee1d4c6b5a081
DATA rotTab4<>+8(SB)/8, $0x7f604b3a2c1f1206
DATA rotTab4<>+16(SB)/8, $0xfaeee1d4c6b5a081
DATA rotTab4<>+24(SB)/8, $0x7f604b3a2c1f1206
GLOBL rotTab4<>(SB), RODATA|NOPTR, $32

DATA rotTab3<>+0(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotTab3<>+8(SB)/8, $0x0000000000000000
DATA rotTab3<>+16(SB)/8, $0x7f4f2d0ef2d3b181
DATA rotTab3<>+24(SB)/8, $0x0000000000000000
GLOBL rotTab3<>(SB), RODATA|NOPTR, $32

DATA rotTab2<>+0(SB)/8, $0x000000007f26da81
DATA rotTab2<>+8(SB)/8, $0x0000000000000000
DATA rotTab2<>+16(SB)/8, $0x000000007f26da81
DATA rotTab2<>+24(SB)/8, $0x0000000000000000
GLOBL rotTab2<>(SB), RODATA|NOPTR, $32

// rotShift4 shifts the high 128-bit lane's qwords by 4: with 16 bytes of
// codes broadcast to both lanes, bits 4.. of each byte come down in the
// high lane.
DATA rotShift4<>+0(SB)/8, $0
DATA rotShift4<>+8(SB)/8, $0
DATA rotShift4<>+16(SB)/8, $4
DATA rotShift4<>+24(SB)/8, $4
GLOBL rotShift4<>(SB), RODATA|NOPTR, $32

// rotSpread1 spreads qh bytes 0, 1 (low lane) and 4, 5 (high lane) of a
// broadcast qword over eight bytes each: the high bits of elements 0..15
// and 32..47. rotSpread2 does the same with bytes 2, 3 and 6, 7.
DATA rotSpread1<>+0(SB)/8, $0x0000000000000000
DATA rotSpread1<>+8(SB)/8, $0x0101010101010101
DATA rotSpread1<>+16(SB)/8, $0x0404040404040404
DATA rotSpread1<>+24(SB)/8, $0x0505050505050505
GLOBL rotSpread1<>(SB), RODATA|NOPTR, $32

DATA rotSpread2<>+0(SB)/8, $0x0202020202020202
DATA rotSpread2<>+8(SB)/8, $0x0303030303030303
DATA rotSpread2<>+16(SB)/8, $0x0606060606060606
DATA rotSpread2<>+24(SB)/8, $0x0707070707070707
GLOBL rotSpread2<>(SB), RODATA|NOPTR, $32

// rotBit has bit i set in byte i of each 8.
DATA rotBit<>+0(SB)/8, $0x8040201008040201
DATA rotBit<>+8(SB)/8, $0x8040201008040201
DATA rotBit<>+16(SB)/8, $0x8040201008040201
DATA rotBit<>+24(SB)/8, $0x8040201008040201
GLOBL rotBit<>(SB), RODATA|NOPTR, $32

// rotFour is 4 in every byte: bit 2 of a QSF_Q3R code.
DATA rotFour<>+0(SB)/8, $0x0404040404040404
DATA rotFour<>+8(SB)/8, $0x0404040404040404
DATA rotFour<>+16(SB)/8, $0x0404040404040404
DATA rotFour<>+24(SB)/8, $0x0404040404040404
GLOBL rotFour<>(SB), RODATA|NOPTR, $32

// rotDupD picks the low words of four dwords, twice: the fp16 d of four
// rows' blocks loaded as dwords (d, sc) becomes the four d, twice.
DATA rotDupD<>+0(SB)/8, $0x0d0c090805040100
DATA rotDupD<>+8(SB)/8, $0x0d0c090805040100
GLOBL rotDupD<>(SB), RODATA|NOPTR, $16

#define ROT_SETUP(tab, mask, bb) \
	MOVQ out+0(FP), R8 \
	MOVQ rows+8(FP), R9 \
	MOVQ w+16(FP), SI \
	MOVQ nb+24(FP), DX \
	MOVQ aux+32(FP), R14 \
	MOVQ mul+40(FP), R13 \
	IMUL3Q $bb, DX, R10 \
	MOVL mask, AX \
	VMOVD AX, X14 \
	VPBROADCASTD X14, Y14 \
	VMOVDQU tab, Y13 \
	VMOVDQU rotShift4<>(SB), Y12 \
	VMOVDQU rotSpread1<>(SB), Y7 \
	VMOVDQU rotBit<>(SB), Y6 \
	VMOVDQU rotFour<>(SB), Y8

// ROT_LOAD4 puts the signed table values of the QSF_Q4R block at base in
// Y1 (elements 0..15, 32..47: the low, then the high nibbles of code bytes
// 0..15) and Y2 (16..31, 48..63: those of bytes 16..31).
#define ROT_LOAD4(base) \
	VBROADCASTI128 4 base, Y1 \
	VBROADCASTI128 20 base, Y2 \
	VPSRLVQ Y12, Y1, Y1 \
	VPSRLVQ Y12, Y2, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPSHUFB Y1, Y13, Y1 \
	VPSHUFB Y2, Y13, Y2 \
	VPSIGNB 64(R12), Y1, Y1 \
	VPSIGNB 96(R12), Y2, Y2

// ROT_LOAD2 puts the signed table values of the QSF_Q2R block at base in
// Y1 (elements 0..15, 32..47: bits 0-1, then 4-5 of the code bytes) and
// Y2 (16..31, 48..63: bits 2-3, 6-7). The codes of negative quants are
// mirrored first (XOR 3, prepRot's pattern at 160).
#define ROT_LOAD2(base) \
	VBROADCASTI128 4 base, Y1 \
	VPXOR 160(R12), Y1, Y1 \
	VPSRLVQ Y12, Y1, Y1 \
	VPSRLW $2, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	VPSHUFB Y1, Y13, Y1 \
	VPSHUFB Y2, Y13, Y2

// ROT_HIGH3 ORs bit 2 of the QSF_Q3R codes in r: the qh bits (Y5 the
// eight qh bytes in each lane) spread by the shuffle spread, bit j%8 of
// the byte for element j.
#define ROT_HIGH3(spread, r) \
	VPSHUFB spread, Y5, Y9 \
	VPAND Y6, Y9, Y9 \
	VPCMPEQB Y6, Y9, Y9 \
	VPAND Y8, Y9, Y9 \
	VPOR Y9, r, r

// ROT_LOAD3 puts the signed table values of the QSF_Q3R block at base in
// Y1, Y2: the low bits as QSF_Q2R's, the high bits from qh at 20.
#define ROT_LOAD3(base) \
	VBROADCASTI128 4 base, Y1 \
	VPBROADCASTQ 20 base, Y5 \
	VPSRLVQ Y12, Y1, Y1 \
	VPSRLW $2, Y1, Y2 \
	VPAND Y14, Y1, Y1 \
	VPAND Y14, Y2, Y2 \
	ROT_HIGH3(Y7, Y1) \
	ROT_HIGH3(rotSpread2<>(SB), Y2) \
	VPSHUFB Y1, Y13, Y1 \
	VPSHUFB Y2, Y13, Y2 \
	VPSIGNB 64(R12), Y1, Y1 \
	VPSIGNB 96(R12), Y2, Y2

// ROT_INT takes the block at base (values loaded by load) to int32 lanes
// in out: four partial sums of the first half (each of elements of
// sub-blocks 0 and 1, with their multipliers), then four of the second.
// The activation is at R12, its |q| in Y3, Y4. The multipliers of Y1 are
// rotMul's row sc&15 | (sc>>8&15)<<4, of Y2 (sc>>4&15) | (sc>>12)<<4,
// their offsets (t·0x22)&0x1fe0 with t = sc&0x0f0f and (sc>>4)&0x0f0f.
#define ROT_INT(load, base, out) \
	load(base) \
	VPMADDUBSW Y1, Y3, Y1 \
	VPMADDUBSW Y2, Y4, Y2 \
	MOVWLZX 2 base, AX \
	MOVL AX, BX \
	SHRL $4, BX \
	ANDL $0x0f0f, AX \
	ANDL $0x0f0f, BX \
	IMUL3L $0x22, AX, AX \
	IMUL3L $0x22, BX, BX \
	ANDL $0x1fe0, AX \
	ANDL $0x1fe0, BX \
	VPMADDWD (R13)(AX*1), Y1, Y1 \
	VPMADDWD (R13)(BX*1), Y2, Y2 \
	VPADDD Y2, Y1, out

// ROT_PAIR adds two rows' ROT_INT lanes pairwise into a: in each 128-bit
// lane, a's lanes 0+2 and b's, then a's 1+3 and b's.
#define ROT_PAIR(a, b) \
	VPUNPCKLDQ b, a, Y5 \
	VPUNPCKHDQ b, a, a \
	VPADDD Y5, a, a

// ROT_FOUR adds a block of four rows (bb bytes each) to their acc₀, acc₁
// (lanes r and 4+r of Y0) and moves SI, R11 and R12 past it.
#define ROT_FOUR(load, bb) \
	VMOVDQU 0(R12), Y3 \
	VMOVDQU 32(R12), Y4 \
	ROT_INT(load, (SI), Y10) \
	ROT_INT(load, (R11), Y11) \
	ROT_PAIR(Y10, Y11) \
	VMOVDQA Y10, Y15 \
	ROT_INT(load, (SI)(R10*2), Y10) \
	ROT_INT(load, (R11)(R10*2), Y11) \
	ROT_PAIR(Y10, Y11) \
	VPUNPCKLQDQ Y10, Y15, Y1 \
	VPUNPCKHQDQ Y10, Y15, Y2 \
	VPADDD Y2, Y1, Y1 \
	VCVTDQ2PS Y1, Y1 \
	VMOVD (SI), X2 \
	VPINSRD $1, (R11), X2, X2 \
	VPINSRD $2, (SI)(R10*2), X2, X2 \
	VPINSRD $3, (R11)(R10*2), X2, X2 \
	VPSHUFB rotDupD<>(SB), X2, X2 \
	VCVTPH2PS X2, Y2 \
	VMULPS 128(R12), Y2, Y2 \
	VMULPS Y2, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ $bb, SI \
	ADDQ $bb, R11 \
	ADDQ $rotPrep, R12

// ROT_ONE adds a block of one row to its acc₀, acc₁ (lanes 0 and 4 of
// Y0) and moves SI and R12 past it.
#define ROT_ONE(load, bb) \
	VMOVDQU 0(R12), Y3 \
	VMOVDQU 32(R12), Y4 \
	ROT_INT(load, (SI), Y1) \
	VPHADDD Y1, Y1, Y1 \
	VPHADDD Y1, Y1, Y1 \
	VCVTDQ2PS Y1, Y1 \
	VPBROADCASTW (SI), X2 \
	VCVTPH2PS X2, Y2 \
	VMULPS 128(R12), Y2, Y2 \
	VMULPS Y2, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ $bb, SI \
	ADDQ $rotPrep, R12

// ROT_ROWS runs the rows: four at a time, then the rest one by one, each
// row's acc₀+acc₁ to out.
#define ROT_ROWS(load, bb) \
fours: \
	CMPQ R9, $4 \
	JLT  ones \
	VXORPS Y0, Y0, Y0 \
	MOVQ R14, R12 \
	LEAQ (SI)(R10*1), R11 \
	MOVQ DX, CX \
four: \
	ROT_FOUR(load, bb) \
	DECQ CX \
	JNZ  four \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVUPS X0, (R8) \
	ADDQ $16, R8 \
	LEAQ (SI)(R10*2), SI \
	ADDQ R10, SI \
	SUBQ $4, R9 \
	JMP  fours \
ones: \
	TESTQ R9, R9 \
	JZ   done \
	VXORPS Y0, Y0, Y0 \
	MOVQ R14, R12 \
	MOVQ DX, CX \
one: \
	ROT_ONE(load, bb) \
	DECQ CX \
	JNZ  one \
	VEXTRACTF128 $1, Y0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, (R8) \
	ADDQ $4, R8 \
	DECQ R9 \
	JMP  ones \
done: \
	VZEROUPPER \
	RET

// rotPrep is rotPrepBlock (qsfrot.go).
#define rotPrep 192

// func dotQ4RAVX2(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ4RAVX2(SB), NOSPLIT, $0-48
	ROT_SETUP(rotTab4<>(SB), $0x0f0f0f0f, 36)
	ROT_ROWS(ROT_LOAD4, 36)

// func dotQ2RAVX2(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ2RAVX2(SB), NOSPLIT, $0-48
	ROT_SETUP(rotTab2<>(SB), $0x03030303, 20)
	ROT_ROWS(ROT_LOAD2, 20)

// func dotQ3RAVX2(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)
TEXT ·dotQ3RAVX2(SB), NOSPLIT, $0-48
	ROT_SETUP(rotTab3<>(SB), $0x03030303, 28)
	ROT_ROWS(ROT_LOAD3, 28)
