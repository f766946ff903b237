package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/x448/float16"

	"github.com/qsf-llm/qsf/quant"
)

// Q8_0x4 is the element type of a Q8_0 matrix that RepackQ8_0x4 has
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

// repackedTraits is the traits row of a repacked type: that of its file
// type, with no functions, since its rows are not contiguous.
func repackedTraits(file, t quant.Type) *quant.Traits {
	tr, err := quant.Lookup(file)
	if err != nil {
		panic(err)
	}
	c := *tr
	c.Type = t
	c.Dot, c.Dequantize, c.Quantize, c.QuantizeRef = nil, nil, nil, nil
	return &c
}

// CanRepackQ8_0x4 reports whether a Q8_0 matrix of rows×cols can be
// repacked into Q8_0x4: rows a positive multiple of 4 and cols a positive
// multiple of 32.
func CanRepackQ8_0x4(rows, cols int) bool {
	return rows > 0 && rows%4 == 0 && cols > 0 && cols%32 == 0
}

// RepackQ8_0x4 writes the Q8_0x4 form of the rows×cols Q8_0 matrix src to
// dst, as RepackQ4_0x8 does for Q4_0: dst may be src itself.
func RepackQ8_0x4(dst, src []byte, rows, cols int) error {
	if !CanRepackQ8_0x4(rows, cols) {
		return fmt.Errorf("%w: Q8_0 %d×%d is not a multiple of 4 rows × 32 columns", ErrRepack, rows, cols)
	}
	rb, err := quant.RowBytes(quant.Q8_0, cols)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRepack, err)
	}
	if len(src) != rows*rb || len(dst) != len(src) {
		return fmt.Errorf("%w: Q8_0 %d×%d needs %d bytes, got %d and %d", ErrRepack, rows, cols, rows*rb, len(src), len(dst))
	}
	nb := cols / 32
	group := make([]byte, 4*rb)
	for g := 0; g < rows/4; g++ {
		copy(group, src[g*4*rb:(g+1)*4*rb])
		out := dst[g*4*rb : (g+1)*4*rb]
		for b := 0; b < nb; b++ {
			o := out[b*q8_0x4Block : (b+1)*q8_0x4Block]
			for r := 0; r < 4; r++ {
				blk := group[r*rb+34*b : r*rb+34*b+34]
				copy(o[2*r:2*r+2], blk[:2])
				copy(o[8+32*r:8+32*r+32], blk[2:])
			}
		}
	}
	return nil
}

// q8_0x4Generic is the portable Q8_0x4 kernel, in the arithmetic of
// quant's Q8_0 dot product (ggml_vec_dot_q8_0_q8_0 on AVX2): eight float32
// lanes per row, lane l getting fma(dw·da, float(isum_l), acc_l) per block
// with isum_l the integer dot product of elements 4l..4l+3, then
// hsum_float_8. len(out) is a multiple of 4.
func q8_0x4Generic(out []float32, w []byte, rowBytes, cols int, act []byte) {
	nb := cols / 32
	for g := 0; g < len(out)/4; g++ {
		grp := w[g*4*rowBytes : (g+1)*4*rowBytes]
		for r := 0; r < 4; r++ {
			var acc [8]float32
			for b := 0; b < nb; b++ {
				o := grp[b*q8_0x4Block : (b+1)*q8_0x4Block]
				q, a := o[8+32*r:8+32*r+32], act[34*b+2:34*b+34]
				d := f16le(o[2*r:]) * f16le(act[34*b:])
				for l := range acc {
					var isum int32
					for t := 4 * l; t < 4*l+4; t++ {
						isum += int32(int8(q[t])) * int32(int8(a[t]))
					}
					acc[l] = quant.FMA32(d, float32(isum), acc[l])
				}
			}
			out[4*g+r] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
		}
	}
}

// f16le decodes the fp16 at b.
func f16le(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }
