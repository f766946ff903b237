package kernels

import (
	"encoding/binary"

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
	fp16 := fp16Floats()
	for g := 0; g < len(out)/4; g++ {
		grp := w[g*4*rowBytes:][:nb*q8_0x4Block]
		// One row at a time, so that its eight float lanes stay in
		// registers.
		for r := 0; r < 4; r++ {
			var acc [8]float32
			for b := 0; b < nb; b++ {
				o := (*[q8_0x4Block]byte)(grp[b*q8_0x4Block:])
				a := (*[34]byte)(act[34*b:])
				q := (*[32]byte)(o[8+32*r:])
				y := (*[32]byte)(a[2:])
				var s [8]int32
				for l := range s {
					s[l] = int32(int8(q[4*l]))*int32(int8(y[4*l])) + int32(int8(q[4*l+1]))*int32(int8(y[4*l+1])) +
						int32(int8(q[4*l+2]))*int32(int8(y[4*l+2])) + int32(int8(q[4*l+3]))*int32(int8(y[4*l+3]))
				}
				d := fp16[binary.LittleEndian.Uint16(o[2*r:])] * fp16[binary.LittleEndian.Uint16(a[0:])]
				for k := range acc {
					if v, ok := fma32Try(d, float32(s[k]), acc[k]); ok {
						acc[k] = v
					} else {
						acc[k] = fma32Rare(d, float32(s[k]), acc[k])
					}
				}
			}
			out[4*g+r] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
		}
	}
}

// q8_0x4GenericRows is q8_0x4Generic as the generic tier's table row.
func q8_0x4GenericRows(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	q8_0x4Generic(out, w, rowBytes, cols, act)
}
