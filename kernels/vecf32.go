package kernels

import (
	"math"
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
	current.Load().DotF32Rows(out, w, stride, x)
}

// DotF32Rows is the package function DotF32Rows on tier tr.
func (tr *Tier) DotF32Rows(out, w []float32, stride int, x []float32) {
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
	if tr != genericTier && dotF32RowsAsm(out, w, stride, x) {
		return
	}
	for r := range out {
		out[r] = dotF32Lanes(w[r*stride:r*stride+cols], x)
	}
}

// dotF32Lanes is quant's F32 dot product (ggml_vec_dot_f32 on AVX2) on
// float32 slices: 32 FMA lanes over each 32 elements with quant.FMA32's
// fast path inlined, the GGML_F32x8_REDUCE tree, then the tail added in
// float32 without fusing. The first 32 elements start the lanes from +0,
// where the float64 sum p+0 of the exact product is exact (and +0 for a
// product of -0), so that rounding it once is the FMA with no test.
func dotF32Lanes(w, x []float32) float32 {
	w = w[:len(x)]
	np := len(x) &^ 31
	if np == 0 {
		var sum float32
		for i := range x {
			sum += float32(w[i] * x[i])
		}
		return sum
	}
	var acc [32]float32
	a, b := (*[32]float32)(w), (*[32]float32)(x)
	for l := range acc {
		acc[l] = float32(float64(float64(float64(a[l])*float64(b[l])) + 0))
	}
	for i := 32; i < np; i += 32 {
		a, b := (*[32]float32)(w[i:]), (*[32]float32)(x[i:])
		// Four lanes a step, written out, each finished before the next
		// (a sum live across the slow path's call would be spilled).
		for l := 0; l < 32; l += 4 {
			a, b, c := (*[4]float32)(a[l:]), (*[4]float32)(b[l:]), (*[4]float32)(acc[l:])
			if s := float64(float64(float64(a[0])*float64(b[0])) + float64(c[0])); fma32Fits32(math.Float64bits(s)) {
				c[0] = float32(s)
			} else {
				c[0] = fma32Rare(a[0], b[0], c[0])
			}
			if s := float64(float64(float64(a[1])*float64(b[1])) + float64(c[1])); fma32Fits32(math.Float64bits(s)) {
				c[1] = float32(s)
			} else {
				c[1] = fma32Rare(a[1], b[1], c[1])
			}
			if s := float64(float64(float64(a[2])*float64(b[2])) + float64(c[2])); fma32Fits32(math.Float64bits(s)) {
				c[2] = float32(s)
			} else {
				c[2] = fma32Rare(a[2], b[2], c[2])
			}
			if s := float64(float64(float64(a[3])*float64(b[3])) + float64(c[3])); fma32Fits32(math.Float64bits(s)) {
				c[3] = float32(s)
			} else {
				c[3] = fma32Rare(a[3], b[3], c[3])
			}
		}
	}
	var t [8]float32
	for l := range t {
		t[l] = (acc[l] + acc[16+l]) + (acc[8+l] + acc[24+l])
	}
	sum := ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]))
	for i := np; i < len(x); i++ {
		sum += float32(w[i] * x[i])
	}
	return sum
}

// DotF32Heads computes the attention scores of several query heads over
// n cached positions, each position's heads together, so that the cache's
// rows are read in order, once: for query head j < len(q)/d and position
// t < n, out[j·ostride+t] is the dot product (DotF32Rows' sum) of
// q[j·d:(j+1)·d] with keys[t·stride+kv(j)·d:][:d], its key head kv(j) =
// (g0+j)/group (group query heads share a key head; the first, j = 0, is
// head g0 of its group). The sums are those of DotF32Rows on each head.
//
// next, if not nil, is laid out as keys (the values of the same heads,
// when they are as wide): the kernels fetch the parts of its rows that a
// later pass over them (LanesF32Heads) reads into the cache on the way.
func DotF32Heads(out []float32, ostride int, keys []float32, stride, n int, q []float32, d, group, g0 int, next []float32) {
	current.Load().DotF32Heads(out, ostride, keys, stride, n, q, d, group, g0, next)
}

// DotF32Heads is the package function DotF32Heads on tier tr.
func (tr *Tier) DotF32Heads(out []float32, ostride int, keys []float32, stride, n int, q []float32, d, group, g0 int, next []float32) {
	heads := checkHeads("DotF32Heads", len(q), stride, n, len(keys), d, group, g0)
	if heads == 0 || n == 0 {
		return
	}
	if ostride < n || (heads-1)*ostride+n > len(out) {
		panic("kernels: DotF32Heads: scores do not fit in out")
	}
	if len(next) < len(keys) {
		next = nil // fetched only where it is as long as keys
	}
	if tr != genericTier && dotF32HeadsAsm(tr, out, ostride, keys, stride, n, q, d, group, g0, heads, next) {
		return
	}
	for j := range heads {
		kv := (g0 + j) / group
		tr.DotF32Rows(out[j*ostride:j*ostride+n], keys[kv*d:], stride, q[j*d:(j+1)*d])
	}
}

// checkHeads checks the shapes of DotF32Heads and LanesF32Heads (width
// elements of queries or lanes per head) and returns the number of heads.
func checkHeads(name string, width, stride, n, size, d, group, g0 int) int {
	if d <= 0 || width%d != 0 || group <= 0 || g0 < 0 || g0 >= group {
		panic("kernels: " + name + ": bad head shape")
	}
	heads := width / d
	if name == "LanesF32Heads" {
		if width%(32*d) != 0 {
			panic("kernels: LanesF32Heads: lanes is not 32 rows per head")
		}
		heads = width / (32 * d)
	}
	if heads > 0 && n > 0 {
		kvs := (g0+heads-1)/group + 1
		if stride < kvs*d || (n-1)*stride+kvs*d > size {
			panic("kernels: " + name + ": rows do not fit")
		}
	}
	return heads
}

// LanesF32Heads is LanesF32 of width 32 for several heads, each
// position's heads together, so that the cache's rows are read in order,
// once: head j's 32 lanes, lanes[j·32·d:(j+1)·32·d], are those of
// LanesF32(lanes[j·32·d:(j+1)·32·d], 32, values[kv(j)·d:], stride,
// p[j·pstride:j·pstride+n]), kv(j) = (g0+j)/group its value head as in
// DotF32Heads. The sums are those of LanesF32 on each head.
func LanesF32Heads(lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0 int) {
	current.Load().LanesF32Heads(lanes, values, stride, n, p, pstride, d, group, g0)
}

// LanesF32Heads is the package function LanesF32Heads on tier tr.
func (tr *Tier) LanesF32Heads(lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0 int) {
	heads := checkHeads("LanesF32Heads", len(lanes), stride, n, len(values), d, group, g0)
	if heads == 0 {
		return
	}
	if n > 0 && (pstride < n || (heads-1)*pstride+n > len(p)) {
		panic("kernels: LanesF32Heads: weights do not fit in p")
	}
	if tr != genericTier && n > 0 && lanesF32HeadsAsm(lanes, values, stride, n, p, pstride, d, group, g0, heads) {
		return
	}
	for j := range heads {
		kv := (g0 + j) / group
		var pj []float32
		if n > 0 {
			pj = p[j*pstride : j*pstride+n]
		}
		tr.LanesF32(lanes[j*32*d:(j+1)*32*d], 32, values[kv*d:], stride, pj)
	}
}

// ValuesF32Heads sets the attention outputs of several heads, their
// weighted values: out[j·d:(j+1)·d], for each head j < len(out)/d, is
// ReduceLanes32F32 of head j's 32 lanes as LanesF32Heads(lanes, values,
// stride, n, p, pstride, d, group, g0) sets them, bit for bit. lanes
// (32·d elements a head) is scratch space: the call may overwrite it and
// leaves it undefined (a tier may sum the lanes in registers instead).
func ValuesF32Heads(out, lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0 int) {
	current.Load().ValuesF32Heads(out, lanes, values, stride, n, p, pstride, d, group, g0)
}

// ValuesF32Heads is the package function ValuesF32Heads on tier tr.
func (tr *Tier) ValuesF32Heads(out, lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0 int) {
	heads := checkHeads("ValuesF32Heads", len(out), stride, n, len(values), d, group, g0)
	if heads == 0 {
		return
	}
	if len(lanes) != 32*len(out) {
		panic("kernels: ValuesF32Heads: lanes is not 32 rows of out")
	}
	if n > 0 && (pstride < n || (heads-1)*pstride+n > len(p)) {
		panic("kernels: ValuesF32Heads: weights do not fit in p")
	}
	if tr != genericTier && valuesF32HeadsAsm(tr, out, values, stride, n, p, pstride, d, group, g0, heads) {
		return
	}
	tr.LanesF32Heads(lanes, values, stride, n, p, pstride, d, group, g0)
	for j := range heads {
		tr.ReduceLanes32F32(out[j*d:(j+1)*d], lanes[j*32*d:(j+1)*32*d])
	}
}

// MulF32 sets dst[i] = dst[i]·x[i] (float32 products, one rounding each)
// for every i in dst.
func MulF32(dst, x []float32) { current.Load().MulF32(dst, x) }

// MulF32 is the package function MulF32 on tier tr.
func (tr *Tier) MulF32(dst, x []float32) {
	x = x[:len(dst)]
	if tr != genericTier && mulF32Asm(dst, x) {
		return
	}
	for i := range dst {
		dst[i] *= x[i]
	}
}

// AddF32 sets dst[i] = dst[i]+x[i] (float32 sums) for every i in dst.
func AddF32(dst, x []float32) { current.Load().AddF32(dst, x) }

// AddF32 is the package function AddF32 on tier tr.
func (tr *Tier) AddF32(dst, x []float32) {
	x = x[:len(dst)]
	if tr != genericTier && addF32Asm(dst, x) {
		return
	}
	for i := range dst {
		dst[i] += x[i]
	}
}

// AxpyF32 sets y[i] = x[i]·a + y[i] rounded once (a fused multiply-add, as
// VFMADD computes it), for every i in y.
func AxpyF32(y, x []float32, a float32) {
	current.Load().AxpyF32(y, x, a)
}

// AxpyF32 is the package function AxpyF32 on tier tr.
func (tr *Tier) AxpyF32(y, x []float32, a float32) {
	x = x[:len(y)]
	if tr != genericTier && axpyF32Asm(y, x, a) {
		return
	}
	a64 := float64(a)
	// fma32Try written out, four elements a step, each finished before
	// the next (a sum live across the slow path's call would be spilled).
	n4 := len(y) &^ 3
	for i := 0; i < n4; i += 4 {
		y, x := (*[4]float32)(y[i:]), (*[4]float32)(x[i:])
		if s := float64(float64(float64(x[0])*a64) + float64(y[0])); fma32Fits32(math.Float64bits(s)) {
			y[0] = float32(s)
		} else {
			y[0] = fma32Rare(x[0], a, y[0])
		}
		if s := float64(float64(float64(x[1])*a64) + float64(y[1])); fma32Fits32(math.Float64bits(s)) {
			y[1] = float32(s)
		} else {
			y[1] = fma32Rare(x[1], a, y[1])
		}
		if s := float64(float64(float64(x[2])*a64) + float64(y[2])); fma32Fits32(math.Float64bits(s)) {
			y[2] = float32(s)
		} else {
			y[2] = fma32Rare(x[2], a, y[2])
		}
		if s := float64(float64(float64(x[3])*a64) + float64(y[3])); fma32Fits32(math.Float64bits(s)) {
			y[3] = float32(s)
		} else {
			y[3] = fma32Rare(x[3], a, y[3])
		}
	}
	for i := n4; i < len(y); i++ {
		if s := float64(float64(float64(x[i])*a64) + float64(y[i])); fma32Fits32(math.Float64bits(s)) {
			y[i] = float32(s)
		} else {
			y[i] = fma32Rare(x[i], a, y[i])
		}
	}
}

// fma32Fits32 is fma32Fits in 32-bit operations, whose constants are
// immediates: the low word holds the 29 bits below a float32's
// mantissa, the high word the sign, exponent and mantissa's top bits.
// The high word is zero only for a zero s: a sum of an exact product of
// float32s and a float32 that is not zero is a multiple of 2⁻²⁹⁸, a
// float64 of exponent at least -298.
func fma32Fits32(b uint64) bool {
	return uint32(b)<<3 != 1<<31 && uint32(b>>32)<<1-1 >= (1023-126)<<21-1
}

// f32Bytes views a float32 slice as its little-endian bytes.
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// LanesF32 computes the per-lane partial sums of the weighted sum of rows
// Σ_t p[t]·x[t], as ggml_vec_dot_f32 (width 32) or tinyBLAS (width 8) forms
// them when they multiply a transposed matrix by p: for each lane l <
// width, row l of lanes (its cols = len(lanes)/width elements) is set to
// the sum over t = l, l+width, ... < len(p) of x[t·stride+c]·p[t], each
// term added with one rounding (a fused multiply-add) in increasing t,
// starting from 0. Row t of x is its cols elements starting at t·stride.
// ReduceLanes32F32 finishes a width-32 sum.
//
// It is the loop of AxpyF32 calls it replaces, computed in registers.
func LanesF32(lanes []float32, width int, x []float32, stride int, p []float32) {
	current.Load().LanesF32(lanes, width, x, stride, p)
}

// LanesF32 is the package function LanesF32 on tier tr.
func (tr *Tier) LanesF32(lanes []float32, width int, x []float32, stride int, p []float32) {
	if width <= 0 || len(lanes)%width != 0 {
		panic("kernels: LanesF32: lanes is not width rows")
	}
	cols := len(lanes) / width
	if cols == 0 {
		return
	}
	if len(p) > 0 && (stride < cols || (len(p)-1)*stride+cols > len(x)) {
		panic("kernels: LanesF32: rows do not fit in x")
	}
	if tr != genericTier && lanesF32Asm(lanes, width, cols, x, stride, p) {
		return
	}
	// The first width rows start their lanes from +0, where the float64
	// sum p+0 of the exact product is exact (+0 for a product of -0), so
	// that rounding it once is the fused multiply-add.
	first := min(len(p), width)
	for t, a := range p[:first] {
		a64 := float64(a)
		xr := x[t*stride : t*stride+cols]
		row := lanes[t*cols:][:len(xr)]
		for c, v := range xr {
			row[c] = float32(float64(float64(float64(v)*a64) + 0))
		}
	}
	clear(lanes[first*cols:])
	for t := width; t < len(p); t++ {
		l := t % width
		tr.AxpyF32(lanes[l*cols:(l+1)*cols], x[t*stride:t*stride+cols], p[t])
	}
}

// ReduceLanes32F32 sets out[c] to the sum of the 32 lanes lanes[l·len(out)
// + c] in the order of GGML_F32x8_REDUCE: the four 8-lane registers added
// as (x0+x2) + (x1+x3), then the upper half onto the lower, then pairs.
func ReduceLanes32F32(out, lanes []float32) {
	current.Load().ReduceLanes32F32(out, lanes)
}

// ReduceLanes32F32 is the package function ReduceLanes32F32 on tier tr.
func (tr *Tier) ReduceLanes32F32(out, lanes []float32) {
	cols := len(out)
	if len(lanes) != 32*cols {
		panic("kernels: ReduceLanes32F32: lanes is not 32 rows of len(out)")
	}
	if cols == 0 {
		return
	}
	if tr != genericTier && reduceLanes32Asm(out, lanes) {
		return
	}
	// Chunks of up to 64 columns: the eight sums of four rows of each
	// into t, a row at a time, then the tree over t.
	var t [8][64]float32
	for c0 := 0; c0 < cols; c0 += 64 {
		o := out[c0:min(c0+64, cols)]
		m := len(o)
		for l := range 8 {
			a, b := lanes[l*cols+c0:][:m], lanes[(16+l)*cols+c0:][:m]
			c, d := lanes[(8+l)*cols+c0:][:m], lanes[(24+l)*cols+c0:][:m]
			tl := t[l][:m]
			for i := range tl {
				tl[i] = (a[i] + b[i]) + (c[i] + d[i])
			}
		}
		t0, t1, t2, t3 := t[0][:m], t[1][:m], t[2][:m], t[3][:m]
		t4, t5, t6, t7 := t[4][:m], t[5][:m], t[6][:m], t[7][:m]
		for i := range o {
			o[i] = ((t0[i] + t4[i]) + (t1[i] + t5[i])) + ((t2[i] + t6[i]) + (t3[i] + t7[i]))
		}
	}
}

// RotateF32 rotates len(cs)/2 pairs of elements of v: pair i is v[i·step]
// and v[i·step+off], turned by the angle whose cosine and sine are cs[2i]
// and cs[2i+1], as GCC compiles ggml's RoPE (one FMA per output):
//
//	v[a] = fma(x0, cos, -(x1·sin))
//	v[b] = fma(x0, sin, x1·cos)
func RotateF32(v, cs []float32, step, off int) {
	current.Load().RotateF32(v, cs, step, off)
}

// RotateF32 is the package function RotateF32 on tier tr.
func (tr *Tier) RotateF32(v, cs []float32, step, off int) {
	pairs := len(cs) / 2
	if pairs == 0 {
		return
	}
	if step <= 0 || off <= 0 || (pairs-1)*step+off >= len(v) {
		panic("kernels: RotateF32: pairs do not fit in v")
	}
	if tr != genericTier && rotateF32Asm(v, cs, pairs, step, off) {
		return
	}
	for i := range pairs {
		a, b := i*step, i*step+off
		c, s := cs[2*i], cs[2*i+1]
		x0, x1 := v[a], v[b]
		v[a] = quant.FMA32(x0, c, -(x1 * s))
		v[b] = quant.FMA32(x0, s, x1*c)
	}
}

// Rotate64 is quant.Rotate64 (the transform of QSF's rotated types'
// activations, block of 64 by block of 64) on the default tier: the same
// bits, in assembly where the tier has it.
func Rotate64(x []float32) { current.Load().Rotate64(x) }

// Rotate64 is the package function Rotate64 on tier tr.
func (tr *Tier) Rotate64(x []float32) {
	if tr != genericTier && rotate64Asm(tr, x) {
		return
	}
	quant.Rotate64(x)
}
