package kernels

import (
	"fmt"
	"sync"

	"github.com/qsf-llm/qsf/quant"
)

// MatVec computes out[r] = dot(row r of w, act) for r in [0, len(out)).
//
// w holds len(out) rows of cols elements of type t, each
// quant.RowBytes(t, cols) bytes long, back to back. act holds cols
// elements of type quant.Lookup(t).VecDot. MatVec runs on the calling
// goroutine; see Pool.MatVec for the multi-threaded form.
//
// MatVec panics if t is not supported by package quant or if the lengths of
// w and act do not match len(out), t and cols: like an out-of-range slice
// index, that is a bug in the caller, not a condition to handle.
func MatVec(t quant.Type, out []float32, w []byte, cols int, act []byte) {
	current.Load().MatVec(t, out, w, cols, act)
}

// MatVec is the package function MatVec on tier tr.
func (tr *Tier) MatVec(t quant.Type, out []float32, w []byte, cols int, act []byte) {
	tt, rowBytes := check(t, out, w, cols, act)
	if len(out) == 0 {
		return
	}
	if key := kernelKey(tt); tr.prepFor(key) != nil {
		bp := auxPool.Get().(*[]byte)
		*bp = tr.prepare(key, *bp, act, cols)
		tr.run(tt, out, w, rowBytes, cols, act, *bp)
		auxPool.Put(bp)
		return
	}
	tr.run(tt, out, w, rowBytes, cols, act, nil)
}

// auxPool recycles the prepared-activation buffers of MatVec.
var auxPool = sync.Pool{New: func() any { return new([]byte) }}

// check validates the arguments of a MatVec and returns the traits whose
// Dot the generic kernel multiplies the rows with, and the bytes per row.
func check(t quant.Type, out []float32, w []byte, cols int, act []byte) (*quant.Traits, int) {
	tr, err := Lookup(t)
	if err != nil {
		panic(fmt.Sprintf("kernels: MatVec: %v", err))
	}
	if t == quant.Q4_0 && len(out)%8 == 0 {
		tr = q4_0Repacked
	}
	if k := repackOf(t); k != nil && len(out)%k.group != 0 {
		panic(fmt.Sprintf("kernels: MatVec: %v matrix of %d rows, not a multiple of %d", k.file, len(out), k.group))
	}
	rowBytes, err := rowBytes(t, cols)
	if err != nil {
		panic(fmt.Sprintf("kernels: MatVec: %v", err))
	}
	actBytes, err := quant.RowBytes(tr.VecDot, cols)
	if err != nil {
		panic(fmt.Sprintf("kernels: MatVec: %v", err))
	}
	if len(w) != len(out)*rowBytes {
		panic(fmt.Sprintf("kernels: MatVec: %v weights are %d bytes, want %d rows × %d bytes", t, len(w), len(out), rowBytes))
	}
	if len(act) != actBytes {
		panic(fmt.Sprintf("kernels: MatVec: %v activation is %d bytes, want %d", tr.VecDot, len(act), actBytes))
	}
	return tr, rowBytes
}

// q4_0Repacked is the Q4_0 traits row with the dot product llama.cpp b4748
// uses for a Q4_0 matrix whose row count is a multiple of 8: it repacks
// those at load time and multiplies them with ggml_gemv_q4_0_8x8_q8_0, whose
// float32 accumulation order differs from ggml_vec_dot_q4_0_q8_0's (see
// quant.DotQ4_0Gemv). The generic kernel uses it so that its results equal
// llama.cpp's bit for bit; Type stays Q4_0, so tiers index their kernels as
// before.
var q4_0Repacked = func() *quant.Traits {
	tr, err := quant.Lookup(quant.Q4_0)
	if err != nil {
		panic(err)
	}
	c := *tr
	c.Dot = quant.DotQ4_0Gemv
	return &c
}()

// genericRows is the portable kernel: the scalar reference dot product of
// package quant, row by row.
func genericRows(dot func(n int, w, act []byte) float32, out []float32, w []byte, rowBytes, cols int, act []byte) {
	for r := range out {
		out[r] = dot(cols, w[r*rowBytes:(r+1)*rowBytes], act)
	}
}
