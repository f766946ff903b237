package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/x448/float16"

	"github.com/qsf-llm/qsf/quant"
)

// Q4_0x8 is the element type of a Q4_0 matrix that RepackQ4_0x8 has
// rearranged at load time for the Q4_0 kernels. It is never stored in a
// file: its value lies outside ggml's type ids. MatVec, Pool.MatVec,
// Pool.MatVecs, MatMul and Pool.MatMul accept it like any other type, with
// Q8_0 activations, for matrices of a multiple of 8 rows, and give the
// same results, bit for bit, as for the Q4_0 matrix it was packed from
// (llama.cpp's repacked gemv order, quant.DotQ4_0Gemv).
//
// The layout keeps the matrix's size (18 bytes per 32 weights) and its
// groups of 8 rows in order, so rows [8i, 8j) are bytes
// [8i·rowBytes, 8j·rowBytes) as before. Within a group, block b (columns
// 32b..32b+31 of the eight rows) is 144 bytes at 144·b: the eight rows'
// fp16 scales, then four 32-byte chunks, chunk c holding bytes 4c..4c+3 of
// each row's 16 bytes of nibbles in row order. One load then holds a
// quarter of the block for all eight rows, lane r of a dot product's int32
// sums is row r, and the scales convert with one instruction: the file's
// layout, with each row's scales between its nibbles, needs eight scalar
// loads and two horizontal adds per block.
const Q4_0x8 = quant.Type(1<<16 | uint32(quant.Q4_0))

// q4_0x8Block is the size of one block of a group of 8 rows.
const q4_0x8Block = 8 * 18

// q4_0x8Traits is the traits row check returns for Q4_0x8. Its Dot is
// nil: a row of the layout is not contiguous, so tier.run sends these
// matrices to q4_0x8Generic or the tier's kernel.
var q4_0x8Traits = repackedTraits(quant.Q4_0, Q4_0x8)

// Lookup returns the traits of t as the kernels see them: quant.Lookup's
// for file types, and for a repacked type (Q4_0x8, Q8_0x4) the row of its
// file type with Type set to it and no functions (its rows are
// interleaved in groups, so no row can be decoded or multiplied alone).
func Lookup(t quant.Type) (*quant.Traits, error) {
	if g := repackGroup(t); g > 0 {
		return repacked[t].traits, nil
	}
	return quant.Lookup(t)
}

// repacked lists the repacked types: their traits row and the rows per
// group (the row counts their matrices must be a multiple of).
var repacked = map[quant.Type]struct {
	traits *quant.Traits
	group  int
}{
	Q4_0x8: {q4_0x8Traits, 8},
	Q8_0x4: {q8_0x4Traits, 4},
}

// repackGroup returns the rows per group of repacked type t, or 0 when t
// is not one.
func repackGroup(t quant.Type) int {
	if t < 1<<16 {
		return 0
	}
	return repacked[t].group
}

// rowBytes is quant.RowBytes extended to the repacked types (which keep
// their file type's size).
func rowBytes(t quant.Type, cols int) (int, error) {
	if repackGroup(t) > 0 {
		t &^= 1 << 16 // the file type
	}
	return quant.RowBytes(t, cols)
}

// ErrRepack is returned by RepackQ4_0x8 for a matrix it cannot repack.
var ErrRepack = errors.New("kernels: cannot repack matrix")

// RepackType returns the type Repack turns a rows×cols matrix of type t
// into, and false when the kernels have no faster layout for it: Q4_0x8
// for Q4_0 and Q8_0x4 for Q8_0 (see CanRepackQ4_0x8, CanRepackQ8_0x4).
func RepackType(t quant.Type, rows, cols int) (quant.Type, bool) {
	switch {
	case t == quant.Q4_0 && CanRepackQ4_0x8(rows, cols):
		return Q4_0x8, true
	case t == quant.Q8_0 && CanRepackQ8_0x4(rows, cols):
		return Q8_0x4, true
	}
	return t, false
}

// Repack writes the RepackType form of the rows×cols matrix src of type t
// (as stored in a GGUF file) to dst, which must be as long as src and may
// be src itself, and returns the new type. It returns an error wrapping
// ErrRepack when t has no repacked layout for that shape or the lengths
// are wrong.
func Repack(t quant.Type, dst, src []byte, rows, cols int) (quant.Type, error) {
	switch t {
	case quant.Q4_0:
		return Q4_0x8, RepackQ4_0x8(dst, src, rows, cols)
	case quant.Q8_0:
		return Q8_0x4, RepackQ8_0x4(dst, src, rows, cols)
	}
	return t, fmt.Errorf("%w: no repacked layout for %v", ErrRepack, t)
}

// CanRepackQ4_0x8 reports whether a Q4_0 matrix of rows×cols can be
// repacked into Q4_0x8: rows a positive multiple of 8 and cols a positive
// multiple of 32.
func CanRepackQ4_0x8(rows, cols int) bool {
	return rows > 0 && rows%8 == 0 && cols > 0 && cols%32 == 0
}

// RepackQ4_0x8 writes the Q4_0x8 form of the rows×cols Q4_0 matrix src
// (as stored in a GGUF file) to dst, which must be as long as src. dst may
// be src itself, to repack in place without a second copy of the matrix;
// otherwise the two must not overlap. It returns an error wrapping
// ErrRepack when CanRepackQ4_0x8(rows, cols) is false or the lengths are
// wrong.
func RepackQ4_0x8(dst, src []byte, rows, cols int) error {
	if !CanRepackQ4_0x8(rows, cols) {
		return fmt.Errorf("%w: Q4_0 %d×%d is not a multiple of 8 rows × 32 columns", ErrRepack, rows, cols)
	}
	rb, err := quant.RowBytes(quant.Q4_0, cols)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRepack, err)
	}
	if len(src) != rows*rb || len(dst) != len(src) {
		return fmt.Errorf("%w: Q4_0 %d×%d needs %d bytes, got %d and %d", ErrRepack, rows, cols, rows*rb, len(src), len(dst))
	}
	nb := cols / 32
	group := make([]byte, 8*rb) // one group of src, so dst may be src
	for g := 0; g < rows/8; g++ {
		copy(group, src[g*8*rb:(g+1)*8*rb])
		out := dst[g*8*rb : (g+1)*8*rb]
		for b := 0; b < nb; b++ {
			o := out[b*q4_0x8Block : (b+1)*q4_0x8Block]
			for r := 0; r < 8; r++ {
				blk := group[r*rb+18*b : r*rb+18*b+18]
				copy(o[2*r:2*r+2], blk[:2])
				for c := 0; c < 4; c++ {
					copy(o[16+32*c+4*r:16+32*c+4*r+4], blk[2+4*c:6+4*c])
				}
			}
		}
	}
	return nil
}

// q4_0x8Generic is the portable Q4_0x8 kernel, in quant.DotQ4_0Gemv's
// arithmetic: per row and block the exact integer dot product of the
// nibbles minus 8 with the activation's quants, then
// acc = fma(float(isum), dw·da, acc). len(out) is a multiple of 8.
func q4_0x8Generic(out []float32, w []byte, rowBytes, cols int, act []byte) {
	nb := cols / 32
	for g := 0; g < len(out)/8; g++ {
		grp := w[g*8*rowBytes : (g+1)*8*rowBytes]
		var acc [8]float32
		for b := 0; b < nb; b++ {
			o := grp[b*q4_0x8Block : (b+1)*q4_0x8Block]
			a := act[34*b : 34*b+34]
			da := float16.Frombits(binary.LittleEndian.Uint16(a)).Float32()
			for r := 0; r < 8; r++ {
				var isum int32
				for c := 0; c < 4; c++ {
					q := o[16+32*c+4*r : 16+32*c+4*r+4]
					for j, v := range q {
						isum += (int32(v&15) - 8) * int32(int8(a[2+4*c+j]))
						isum += (int32(v>>4) - 8) * int32(int8(a[18+4*c+j]))
					}
				}
				dw := float16.Frombits(binary.LittleEndian.Uint16(o[2*r:])).Float32()
				acc[r] = quant.FMA32(float32(isum), dw*da, acc[r])
			}
		}
		copy(out[8*g:8*g+8], acc[:])
	}
}

// q4_0x8TokBlock is the size of one Q8_0 block of one activation in the
// packed form of packQ4_0x8x4: the 32 quants, da as float32, 8·Σa as
// int32.
const q4_0x8TokBlock = 40

func packBytesQ4_0x8x4(cols int) int { return cols / 32 * tileTokens * q4_0x8TokBlock }

// packQ4_0x8x4 interleaves tileTokens Q8_0 activations block by block for
// the Q4_0x8 tile kernel: block b of activation t is at
// (b·tileTokens+t)·q4_0x8TokBlock.
func packQ4_0x8x4(dst, acts []byte, actBytes, cols int) {
	nb := cols / 32
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			putQ4_0x8Tok(dst[(b*tileTokens+t)*q4_0x8TokBlock:][:q4_0x8TokBlock], act[34*b:34*b+34])
		}
	}
}

// prepQ4_0x8 builds the prepared activation of the Q4_0x8 and Q8_0x4
// kernels: per block the q4_0x8TokBlock form of packQ4_0x8x4 (the 32
// quants, da as float32, 8·Σa as int32, which Q8_0x4 does not need), so
// that the kernel reads one compact stream beside the weights.
func prepQ4_0x8(buf, act []byte, cols int) []byte {
	need := cols / 32 * q4_0x8TokBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	prepQ4_0x8Rows(buf, act, cols/32)
	return buf
}

// prepQ4_0x8Generic writes the prepQ4_0x8 form of nb blocks of act to
// buf; the avx2 build replaces it with assembly (prepQ4_0x8Rows).
func prepQ4_0x8Generic(buf, act []byte, nb int) {
	for b := 0; b < nb; b++ {
		putQ4_0x8Tok(buf[b*q4_0x8TokBlock:(b+1)*q4_0x8TokBlock], act[34*b:34*b+34])
	}
}

// putQ4_0x8Tok writes the q4_0x8TokBlock form of the Q8_0 block a to o.
func putQ4_0x8Tok(o, a []byte) {
	copy(o[:32], a[2:34])
	sum := 0
	for _, q := range a[2:34] {
		sum += int(int8(q))
	}
	binary.LittleEndian.PutUint32(o[32:], math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32()))
	binary.LittleEndian.PutUint32(o[36:], uint32(int32(8*sum)))
}
