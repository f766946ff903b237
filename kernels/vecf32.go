package kernels

import (
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// The float32 vector operations of the attention: llama.cpp multiplies the
// query by the cached keys and the attention weights by the cached values
// with ggml_vec_dot_f32, and QSF must add in the same order to give the
// same bits. These run on the current tier like MatVec and are bit for bit
// the same on every tier.

// DotF32Rows sets out[r] to the dot product of x with row r of w, for rows
// of len(x) elements that start every stride elements of w (so a row can be
// one head inside a wider vector). The sum follows ggml_vec_dot_f32 on
// AVX2: four 8-lane FMA accumulators over each 32 elements, reduced as
// GGML_F32x8_REDUCE, then the tail added in float32 without fusing.
func DotF32Rows(out, w []float32, stride int, x []float32) {
	cols := len(x)
	if len(out) == 0 {
		return
	}
	if cols == 0 {
		clear(out)
		return
	}
	if stride < cols || (len(out)-1)*stride+cols > len(w) {
		panic("kernels: DotF32Rows: rows do not fit in w")
	}
	if current.Load() != genericTier && dotF32RowsAsm(out, w, stride, x) {
		return
	}
	act := f32Bytes(x)
	tr, _ := quant.Lookup(quant.F32)
	for r := range out {
		out[r] = tr.Dot(cols, f32Bytes(w[r*stride:r*stride+cols]), act)
	}
}

// AxpyF32 sets y[i] = x[i]·a + y[i] rounded once (a fused multiply-add, as
// VFMADD computes it), for every i in y.
func AxpyF32(y, x []float32, a float32) {
	x = x[:len(y)]
	if current.Load() != genericTier && axpyF32Asm(y, x, a) {
		return
	}
	for i := range y {
		y[i] = quant.FMA32(x[i], a, y[i])
	}
}

// f32Bytes views a float32 slice as its little-endian bytes.
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
