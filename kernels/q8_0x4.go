package kernels

import (
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// Q8_0x4 is the element type of a Q8_0 matrix that Repack has
// rearranged at load time, as Q4_0x8 is for Q4_0: never stored in a file,
// accepted by the MatVec and MatMul functions with Q8_0 activations for
// matrices of a multiple of 4 rows, with the results of the Q8_0 matrix it
// was packed from bit for bit (ggml_vec_dot_q8_0_q8_0's order).
//
// Groups of 4 rows stay in order and keep their size (34 bytes per 32
// weights). Within a group, block b (columns 32b..32b+31) is 136 bytes at
// 136·b: the four rows' fp16 scales, then each row's 32 quants in turn.
// The kernel reads the group as one linear stream, converts the four
// scales with one instruction and loads each row's quants 8 bytes further
// on; in the file's layout four rows are four streams and each row's
// 2-byte scale takes its own load and conversion per block.
const Q8_0x4 = quant.Type(1<<16 | uint32(quant.Q8_0))

// q8_0x4Block is the size of one block of a group of 4 rows.
const q8_0x4Block = 4 * 34

// q8_0x4Traits is the traits row check returns for Q8_0x4 (see
// q4_0x8Traits).
var q8_0x4Traits = repackedTraits(quant.Q8_0, Q8_0x4)

// packQ8_0x4Block writes block b of four Q8_0 rows in the Q8_0x4 layout.
func packQ8_0x4Block(o, grp []byte, rb, b int) {
	for r := 0; r < 4; r++ {
		blk := grp[r*rb+34*b : r*rb+34*b+34]
		copy(o[2*r:2*r+2], blk[:2])
		copy(o[8+32*r:8+32*r+32], blk[2:])
	}
}

// q8_0x4Generic is the portable Q8_0x4 kernel, in the arithmetic of
// quant's Q8_0 dot product (ggml_vec_dot_q8_0_q8_0 on AVX2): eight float32
// lanes per row, lane l getting fma(dw·da, float(isum_l), acc_l) per block
// with isum_l the integer dot product of elements 4l..4l+3, then
// hsum_float_8. len(out) is a multiple of 4.
func q8_0x4Generic(out []float32, w []byte, rowBytes, cols int, act []byte) {
	nb := cols / 32
	act = act[:34*nb]
	for g := 0; g < len(out)/4; g++ {
		grp := w[g*4*rowBytes : (g+1)*4*rowBytes]
		var acc [4][8]float32
		for b := 0; b < nb; b++ {
			o := (*[q8_0x4Block]byte)(grp[b*q8_0x4Block:])
			a := (*[34]byte)(act[34*b:])
			da := fp16(uint16(a[0]) | uint16(a[1])<<8)
			q0, q1 := (*[32]byte)(o[8:]), (*[32]byte)(o[40:])
			q2, q3 := (*[32]byte)(o[72:]), (*[32]byte)(o[104:])
			y := (*[32]byte)(a[2:])
			// The four rows share each activation quant, loaded once.
			var s [4][8]int32
			for l := 0; l < 8; l++ {
				y0, y1, y2, y3 := int32(int8(y[4*l])), int32(int8(y[4*l+1])), int32(int8(y[4*l+2])), int32(int8(y[4*l+3]))
				s[0][l] = int32(int8(q0[4*l]))*y0 + int32(int8(q0[4*l+1]))*y1 + int32(int8(q0[4*l+2]))*y2 + int32(int8(q0[4*l+3]))*y3
				s[1][l] = int32(int8(q1[4*l]))*y0 + int32(int8(q1[4*l+1]))*y1 + int32(int8(q1[4*l+2]))*y2 + int32(int8(q1[4*l+3]))*y3
				s[2][l] = int32(int8(q2[4*l]))*y0 + int32(int8(q2[4*l+1]))*y1 + int32(int8(q2[4*l+2]))*y2 + int32(int8(q2[4*l+3]))*y3
				s[3][l] = int32(int8(q3[4*l]))*y0 + int32(int8(q3[4*l+1]))*y1 + int32(int8(q3[4*l+2]))*y2 + int32(int8(q3[4*l+3]))*y3
			}
			for r := range acc {
				fmaLanes(&acc[r], fp16(uint16(o[2*r])|uint16(o[2*r+1])<<8)*da, &s[r])
			}
		}
		for r, a := range acc {
			out[4*g+r] = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
		}
	}
}

// fp16 is quant.FP16ToFP32 with the conversion of normal numbers inline.
func fp16(h uint16) float32 {
	if e := h >> 10 & 0x1f; e-1 < 30 {
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + 112<<23))
	}
	return quant.FP16ToFP32(h)
}

// q8_0x4GenericRows is q8_0x4Generic as the generic tier's table row.
func q8_0x4GenericRows(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	q8_0x4Generic(out, w, rowBytes, cols, act)
}
