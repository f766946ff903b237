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
// memory once instead of n times. For F32, F16, BF16, Q8_0, Q4_0 (of a
// multiple of 8 rows), Q4_K and Q6_K, the AVX2 tier multiplies each tile
// with four activations at a time, loading (or unpacking) the weights once
// for the four; the results still equal n calls of MatVec bit for bit.
//
// out must not overlap acts. MatMul runs on the calling goroutine; see
// Pool.MatMul. It panics on inconsistent arguments, as MatVec does.
func MatMul(t quant.Type, out []float32, w []byte, cols int, acts []byte, n int) {
	current.Load().MatMul(t, out, w, cols, acts, n)
}

// MatMul is the package function MatMul on tier tr.
func (tr *Tier) MatMul(t quant.Type, out []float32, w []byte, cols int, acts []byte, n int) {
	var j matmulJob
	j.init(tr, t, out, w, cols, acts, n)
	if j.rows == 0 {
		return
	}
	bp := auxesPool.Get().(*[][]byte)
	*bp = j.prepare(*bp)
	j.run(0, j.rows, j.rows)
	auxesPool.Put(bp)
}

// auxesPool recycles the prepared-activation buffers of MatMul.
var auxesPool = sync.Pool{New: func() any { return new([][]byte) }}

// matmulJob is one validated MatMul call.
type matmulJob struct {
	tier     *Tier
	traits   *quant.Traits
	out      []float32
	w        []byte
	acts     []byte
	auxes    [][]byte
	tile     *tileKernel // nil: every activation goes through tier.run
	rest     *tileKernel // tile.rest, when it takes some of the activations tile leaves
	packed   []byte      // the whole tiles of activations, packed for tile, then those for rest
	packSize int         // bytes of one packed tile of tile
	restSize int         // bytes of one packed tile of rest
	tileEnd  int         // activations [0, tileEnd) go through tile
	restEnd  int         // activations [tileEnd, restEnd) go through rest
	rows     int
	align    int // the row ranges' granularity (rowAlignOf)
	cols     int
	n        int
	rowBytes int
	actBytes int
	shared   bool // the preparation is an earlier job's (Pool.MatMuls)
	asIs     bool // the tiles read the activations in place (packed is acts)
}

// sharesPrep reports whether j reads the same activations as o, prepared
// the same way, so that j can use o's preparation.
func (j *matmulJob) sharesPrep(o *matmulJob) bool {
	return j.n == o.n && j.cols == o.cols && sameBytes(j.acts, o.acts) &&
		j.tile == o.tile && j.rest == o.rest && j.tileEnd == o.tileEnd && j.restEnd == o.restEnd && j.asIs == o.asIs &&
		kernelKey(j.traits) == kernelKey(o.traits) && j.tier == o.tier
}

// init validates the arguments of a MatMul on tier tr and fills in j.
func (j *matmulJob) init(tr *Tier, t quant.Type, out []float32, w []byte, cols int, acts []byte, n int) {
	if n <= 0 || len(out)%n != 0 {
		panic(fmt.Sprintf("kernels: MatMul: %d outputs are not %d whole vectors", len(out), n))
	}
	rows := len(out) / n
	tt, err := Lookup(t)
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
	*j = matmulJob{tier: tr, traits: tt, out: out, w: w, acts: acts,
		rows: rows, cols: cols, n: n, rowBytes: rowBytes, actBytes: actBytes, align: rowAlignOf(t)}
	if cols > 0 {
		// Row ranges are multiples of j.align or end at rows, so they
		// are whole steps of the kernel when rows is.
		fits := func(k *tileKernel) bool {
			return k != nil && rows%k.rowStep == 0 && j.align%k.rowStep == 0
		}
		// pick returns the first kernel of the chain k, k.rest, ...
		// that fits and takes at most n activations.
		pick := func(k *tileKernel, n int) *tileKernel {
			for ; fits(k); k = k.rest {
				if n >= k.width() {
					return k
				}
			}
			return nil
		}
		if k := pick(tileFor(j.tier, tt), n); k != nil {
			j.tile = k
			j.tileEnd = n / k.width() * k.width()
			j.restEnd = j.tileEnd
			if r := pick(k.rest, n-j.tileEnd); r != nil {
				j.rest = r
				j.restEnd += (n - j.tileEnd) / r.width() * r.width()
			}
		}
	}
	// Packings that leave the activations as they are need no copy.
	asIs := func(k *tileKernel) bool { return k == nil || k.asIs != nil && k.asIs(cols) }
	j.asIs = j.tile != nil && asIs(j.tile) && asIs(j.rest)
}

// prepare builds the prepared data of every activation in bufs (grown as
// needed) and keeps it in j.auxes; with a tile kernel, the activations of
// whole tiles go packed into the buffer after them, j.packed. It returns
// bufs for reuse.
func (j *matmulJob) prepare(bufs [][]byte) [][]byte {
	bufs = j.prepBufs(bufs)
	for u := range j.prepUnits() {
		j.prepUnit(u)
	}
	return bufs
}

// prepBufs sizes the buffers of prepare: bufs[j.n] for the packed tiles
// (j.packed), bufs[:j.n] for the activations prepared one at a time
// (j.auxes). It returns bufs for reuse.
func (j *matmulJob) prepBufs(bufs [][]byte) [][]byte {
	for len(bufs) < j.n+1 {
		bufs = append(bufs, nil)
	}
	if j.tile != nil {
		need := j.tileEnd / j.tile.width() * j.tile.packBytes(j.cols)
		j.packSize = j.tile.packBytes(j.cols)
		if j.rest != nil {
			j.restSize = j.rest.packBytes(j.cols)
			need += (j.restEnd - j.tileEnd) / j.rest.width() * j.restSize
		}
		if j.asIs {
			j.packed = j.acts[:need]
			j.auxes = bufs[:j.n]
			return bufs
		}
		buf := bufs[j.n]
		if cap(buf) < need {
			buf = make([]byte, need)
		} else {
			buf = buf[:need]
		}
		bufs[j.n] = buf
		j.packed = buf
	}
	j.auxes = bufs[:j.n]
	return bufs
}

// prepUnits returns the number of independent pieces of work prepUnit
// does: the tiles to pack, then the activations left over.
func (j *matmulJob) prepUnits() int {
	u := j.n - j.restEnd
	if j.asIs {
		return u
	}
	if j.tile != nil {
		u += j.tileEnd / j.tile.width()
	}
	if j.rest != nil {
		u += (j.restEnd - j.tileEnd) / j.rest.width()
	}
	return u
}

// prepUnit does piece u of the preparation (see prepUnits), after
// prepBufs; pieces write disjoint memory, so they may run concurrently.
func (j *matmulJob) prepUnit(u int) {
	if j.asIs {
		i := j.restEnd + u
		j.auxes[i] = j.tier.prepare(kernelKey(j.traits), j.auxes[i], j.act(i), j.cols)
		return
	}
	if j.tile != nil {
		wt := j.tile.width()
		groups := j.tileEnd / wt
		if u < groups {
			j.tile.pack(j.packed[u*j.packSize:(u+1)*j.packSize], j.acts[u*wt*j.actBytes:(u+1)*wt*j.actBytes], j.actBytes, j.cols)
			return
		}
		u -= groups
	}
	if j.rest != nil {
		wr := j.rest.width()
		groups := (j.restEnd - j.tileEnd) / wr
		if u < groups {
			off := j.tileEnd/j.tile.width()*j.packSize + u*j.restSize
			i := j.tileEnd + u*wr
			j.rest.pack(j.packed[off:off+j.restSize], j.acts[i*j.actBytes:(i+wr)*j.actBytes], j.actBytes, j.cols)
			return
		}
		u -= groups
	}
	i := j.restEnd + u
	j.auxes[i] = j.tier.prepare(kernelKey(j.traits), j.auxes[i], j.act(i), j.cols)
}

func (j *matmulJob) act(i int) []byte { return j.acts[i*j.actBytes : (i+1)*j.actBytes] }

// run computes rows [lo, hi) of every output vector, tile by tile. after
// is the first row the calling thread is likely to compute next (hi, or
// the start of its next piece of a pool's job): the last tile prefetches
// from there.
func (j *matmulJob) run(lo, hi, after int) {
	size := tileBytes
	if j.tile != nil && j.tile.tileBytes > 0 {
		size = j.tile.tileBytes
	}
	var expand func(dst, w []byte, rowBytes, cols, rows int)
	if j.tile != nil {
		expand = j.tile.expand
	}
	rb, traits := j.rowBytes, j.traits // of the rows the kernels read
	if expand != nil {
		rb, traits = 4*j.cols, f32Traits
	}
	tile := max(j.align, size/max(rb, 1)/j.align*j.align)
	if j.tile != nil && j.tile.rowBlock > 0 {
		b := j.tile.rowBlock
		tile = max(b, size/max(rb, 1)/b*b)
	}
	var scratch *[]byte
	if expand != nil {
		scratch, _ = f32hScratch(min(tile, hi-lo) * rb)
		defer f32hScratchPool.Put(scratch)
	}
	for t0 := lo; t0 < hi; t0 += tile {
		t1 := min(t0+tile, hi)
		w := j.w[t0*j.rowBytes : t1*j.rowBytes]
		if expand != nil {
			buf := (*scratch)[:(t1-t0)*rb]
			expand(buf, w, j.rowBytes, j.cols, t1-t0)
			w = buf
		}
		i := 0
		if j.tile != nil {
			wt := j.tile.width()
			// The next tile of rows, in parts of whole lines, one for
			// each call on this tile to prefetch.
			n0, n1 := t1, min(t1+tile, hi)
			if t1 == hi {
				n0, n1 = after, min(after+tile, j.rows)
			}
			next := j.w[n0*j.rowBytes : max(n0, n1)*j.rowBytes]
			part := (len(next)/max(j.tileEnd/wt, 1) + 63) &^ 63
			for ; i < j.tileEnd; i += wt {
				g := i / wt
				if j.tile.runAhead != nil {
					ahead := next[min(g*part, len(next)):min((g+1)*part, len(next))]
					j.tile.runAhead(j.out[i*j.rows+t0:], j.rows, w, rb, j.cols, t1-t0,
						j.packed[g*j.packSize:(g+1)*j.packSize], ahead)
					continue
				}
				j.tile.run(j.out[i*j.rows+t0:], j.rows, w, rb, j.cols, t1-t0,
					j.packed[g*j.packSize:(g+1)*j.packSize])
			}
			if j.rest != nil {
				wr, off := j.rest.width(), j.tileEnd/wt*j.packSize
				for ; i < j.restEnd; i += wr {
					j.rest.run(j.out[i*j.rows+t0:], j.rows, w, rb, j.cols, t1-t0, j.packed[off:off+j.restSize])
					off += j.restSize
				}
			}
		}
		for ; i < j.n; i++ {
			j.tier.run(traits, j.out[i*j.rows+t0:i*j.rows+t1], w, rb, j.cols, j.act(i), j.auxes[i])
		}
	}
}
