package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/x448/float16"

	"github.com/qsf-llm/qsf/quant"
)

// PackedMatrix is a weight matrix rearranged once, at load time, into a
// layout that a faster kernel reads more cheaply than the file's. Build one
// with Repack and multiply with MatVecPacked or Pool.MatVecPacked.
//
// The packed Q4_0 layout keeps each row's 18·nb bytes but stores the 16-byte
// quant arrays of all its blocks first and the fp16 scales after them, so
// that two blocks' quants are one 32-byte load. Its kernel sums in another
// order than MatVec's (which is ggml's), so results can differ from
// MatVec's in the last bits.
type PackedMatrix struct {
	t          quant.Type
	rows, cols int
	rowBytes   int
	data       []byte
}

// Type returns the element type of the matrix, as stored in the file.
func (m *PackedMatrix) Type() quant.Type { return m.t }

// Rows returns the number of rows.
func (m *PackedMatrix) Rows() int { return m.rows }

// Cols returns the number of elements per row.
func (m *PackedMatrix) Cols() int { return m.cols }

// Repack rearranges rows×cols weights of type t, stored as in a GGUF file,
// into a PackedMatrix. It reports false, and does nothing, when t has no
// packed layout (only Q4_0 has one so far) or w does not hold exactly
// rows×cols elements of t. w is not retained.
func Repack(t quant.Type, w []byte, rows, cols int) (*PackedMatrix, bool) {
	if t != quant.Q4_0 || rows < 0 {
		return nil, false
	}
	rowBytes, err := quant.RowBytes(t, cols)
	if err != nil || len(w) != rows*rowBytes {
		return nil, false
	}
	nb := cols / 32
	data := make([]byte, len(w))
	for r := 0; r < rows; r++ {
		src := w[r*rowBytes : (r+1)*rowBytes]
		dst := data[r*rowBytes : (r+1)*rowBytes]
		for b := 0; b < nb; b++ {
			copy(dst[16*b:16*b+16], src[18*b+2:18*b+18])
			copy(dst[16*nb+2*b:16*nb+2*b+2], src[18*b:18*b+2])
		}
	}
	return &PackedMatrix{t: t, rows: rows, cols: cols, rowBytes: rowBytes, data: data}, true
}

// checkPacked validates the arguments of a packed MatVec.
func checkPacked(out []float32, m *PackedMatrix, act []byte) {
	if len(out) != m.rows {
		panic(fmt.Sprintf("kernels: MatVecPacked: out has %d rows, matrix %d", len(out), m.rows))
	}
	if n, _ := quant.RowBytes(quant.Q8_0, m.cols); len(act) != n {
		panic(fmt.Sprintf("kernels: MatVecPacked: activation is %d bytes, want %d", len(act), n))
	}
}

// MatVecPacked is MatVec for a packed matrix; act is quantized to the
// vec-dot type of m.Type(), as for MatVec. It runs on the calling goroutine.
func MatVecPacked(out []float32, m *PackedMatrix, act []byte) {
	checkPacked(out, m, act)
	if m.rows == 0 {
		return
	}
	if m.cols == 0 {
		clear(out)
		return
	}
	tr := current.Load()
	if tr.packed == nil {
		packedQ4_0Generic(out, m.data, m.rowBytes, m.cols, act, nil)
		return
	}
	bp := auxPool.Get().(*[]byte)
	*bp = tr.packedPrep(*bp, act, m.cols)
	tr.packed(out, m.data, m.rowBytes, m.cols, act, *bp)
	auxPool.Put(bp)
}

// packedQ4_0Generic is the portable kernel for packed Q4_0, in the order of
// the scalar reference (quant's dot for Q4_0).
func packedQ4_0Generic(out []float32, w []byte, rowBytes, cols int, act, _ []byte) {
	nb := cols / 32
	for r := range out {
		row := w[r*rowBytes : (r+1)*rowBytes]
		var sum float32
		for b := 0; b < nb; b++ {
			qs, a := row[16*b:16*b+16], act[34*b:34*b+34]
			isum := 0
			for j := 0; j < 16; j++ {
				isum += (int(qs[j]&15) - 8) * int(int8(a[2+j]))
				isum += (int(qs[j]>>4) - 8) * int(int8(a[18+j]))
			}
			d := float16.Frombits(binary.LittleEndian.Uint16(row[16*nb+2*b:])).Float32()
			da := float16.Frombits(binary.LittleEndian.Uint16(a)).Float32()
			sum += d * da * float32(isum)
		}
		out[r] = sum
	}
}
