package kernels

import (
	"fmt"
	"sync"

	"github.com/qsf-llm/qsf/quant"
)

// tileBytes is the size of the row tiles MatMul walks the weights in: small
// enough to stay in a core's L2 cache while every activation passes over.
const tileBytes = 128 << 10

// MatMul computes n matrix-vector products with the same weights, as for
// the tokens of a prompt: out[i*rows+r] = dot(row r of w, activation i) for
// i in [0, n) and r in [0, rows), where rows = len(out)/n and activation i
// is the i-th of n back-to-back vectors in acts, each cols elements of
// quant.Lookup(t).VecDot. The weights are walked in tiles of rows that stay
// in cache while all n activations pass over them, so they are read from
// memory once instead of n times. The results equal n calls of MatVec.
//
// MatMul runs on the calling goroutine; see Pool.MatMul. It panics on
// inconsistent arguments, as MatVec does.
func MatMul(t quant.Type, out []float32, w []byte, cols int, acts []byte, n int) {
	var j matmulJob
	j.init(t, out, w, cols, acts, n)
	if j.rows == 0 {
		return
	}
	bp := auxesPool.Get().(*[][]byte)
	*bp = j.prepare(*bp)
	j.run(0, j.rows)
	auxesPool.Put(bp)
}

// auxesPool recycles the prepared-activation buffers of MatMul.
var auxesPool = sync.Pool{New: func() any { return new([][]byte) }}

// matmulJob is one validated MatMul call.
type matmulJob struct {
	tier     *tier
	traits   *quant.Traits
	out      []float32
	w        []byte
	acts     []byte
	auxes    [][]byte
	rows     int
	cols     int
	n        int
	rowBytes int
	actBytes int
}

// init validates the arguments of a MatMul and fills in j.
func (j *matmulJob) init(t quant.Type, out []float32, w []byte, cols int, acts []byte, n int) {
	if n <= 0 || len(out)%n != 0 {
		panic(fmt.Sprintf("kernels: MatMul: %d outputs are not %d whole vectors", len(out), n))
	}
	rows := len(out) / n
	tt, err := quant.Lookup(t)
	if err != nil {
		panic(fmt.Sprintf("kernels: MatMul: %v", err))
	}
	actBytes, err := quant.RowBytes(tt.VecDot, cols)
	if err != nil {
		panic(fmt.Sprintf("kernels: MatMul: %v", err))
	}
	if len(acts) != n*actBytes {
		panic(fmt.Sprintf("kernels: MatMul: activations are %d bytes, want %d × %d", len(acts), n, actBytes))
	}
	// check picks the traits MatVec would use (for Q4_0 with a multiple
	// of 8 rows, llama.cpp's repacked order), so that MatMul equals n
	// calls of MatVec.
	tt, rowBytes := check(t, out[:rows], w, cols, acts[:actBytes])
	*j = matmulJob{tier: current.Load(), traits: tt, out: out, w: w, acts: acts,
		rows: rows, cols: cols, n: n, rowBytes: rowBytes, actBytes: actBytes}
}

// prepare builds the prepared data of every activation in bufs (grown as
// needed) and keeps it in j.auxes; it returns bufs for reuse.
func (j *matmulJob) prepare(bufs [][]byte) [][]byte {
	for len(bufs) < j.n {
		bufs = append(bufs, nil)
	}
	for i := 0; i < j.n; i++ {
		bufs[i] = j.tier.prepare(j.traits.Type, bufs[i], j.act(i), j.cols)
	}
	j.auxes = bufs[:j.n]
	return bufs
}

func (j *matmulJob) act(i int) []byte { return j.acts[i*j.actBytes : (i+1)*j.actBytes] }

// run computes rows [lo, hi) of every output vector, tile by tile.
func (j *matmulJob) run(lo, hi int) {
	tile := max(rowAlign, tileBytes/max(j.rowBytes, 1)/rowAlign*rowAlign)
	for t0 := lo; t0 < hi; t0 += tile {
		t1 := min(t0+tile, hi)
		w := j.w[t0*j.rowBytes : t1*j.rowBytes]
		for i := 0; i < j.n; i++ {
			j.tier.run(j.traits, j.out[i*j.rows+t0:i*j.rows+t1], w, j.rowBytes, j.cols, j.act(i), j.auxes[i])
		}
	}
}
