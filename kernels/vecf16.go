package kernels

import "github.com/qsf-llm/qsf/quant"

// The half-precision vector operations of an f16 KV cache. llama.cpp
// multiplies an f16 matrix by a float32 vector by first converting the
// vector to f16 (its vec_dot_type), then taking every dot product with
// ggml_vec_dot_f16. These reproduce that: RoundF16 is the conversion (the
// vector stays float32, each element holding the nearest half-precision
// value), DotF16Rows and DotF16RowsPadded are the dot products. They run
// on the current tier and give the same bits on every tier.

// RoundF16 replaces every element of x by the nearest IEEE half-precision
// value, ties to even (as F16C's VCVTPS2PH and ggml_fp32_to_fp16 round).
func RoundF16(x []float32) {
	current.Load().RoundF16(x)
}

// RoundF16 is the package function RoundF16 on tier tr.
func (tr *Tier) RoundF16(x []float32) {
	if tr != genericTier && roundF16Asm(x) {
		return
	}
	for i, v := range x {
		x[i] = quant.FP16ToFP32(quant.FP32ToFP16(v))
	}
}

// F16FromF32 sets dst[i] to the half-precision bits of src[i], rounded to
// nearest with ties to even, for every i in src. dst must be at least as
// long as src.
func F16FromF32(dst []uint16, src []float32) {
	current.Load().F16FromF32(dst, src)
}

// F16FromF32 is the package function F16FromF32 on tier tr.
func (tr *Tier) F16FromF32(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	if tr != genericTier && f16FromF32Asm(dst, src) {
		return
	}
	for i, v := range src {
		dst[i] = quant.FP32ToFP16(v)
	}
}

// DotF16Rows sets out[r] to the dot product of x with row r of the f16
// matrix w, for rows of len(x) elements that start every stride elements
// of w, as ggml_vec_dot_f16 computes it on AVX2: four 8-lane FMA
// accumulators over each 32 elements, reduced as GGML_F32x8_REDUCE, the
// result widened to float64, the tail's products (rounded to float32)
// added in float64, and the sum rounded to float32.
//
// ggml converts the vector to f16 first; x should hold such values (see
// RoundF16), but it is used as given.
func DotF16Rows(out []float32, w []uint16, stride int, x []float32) {
	current.Load().DotF16Rows(out, w, stride, x)
}

// DotF16Rows is the package function DotF16Rows on tier tr.
func (tr *Tier) DotF16Rows(out []float32, w []uint16, stride int, x []float32) {
	if len(out) == 0 {
		return
	}
	cols := len(x)
	if stride < cols || (len(out)-1)*stride+cols > len(w) {
		panic("kernels: DotF16Rows: rows do not fit in w")
	}
	if cols == 0 {
		clear(out)
		return
	}
	if tr == genericTier || !dotF16RowsAsm(tr, out, w, stride, x, false) {
		for r := range out {
			out[r] = dotF16Row(w[r*stride:r*stride+cols], x, false)
		}
		return
	}
	if np := cols &^ 31; np < cols {
		for r := range out {
			out[r] = dotF16Tail(float64(out[r]), w[r*stride+np:r*stride+cols], x[np:])
		}
	}
}

// DotF16RowsPadded is DotF16Rows for a vector x padded with zeros to a
// multiple of 32 elements, as llama.cpp pads the rows of its KV cache: the
// elements of a partial last chunk go into their lanes (position i into
// lane i%32) before the reduction, and there is no float64 tail. Lanes of
// the padding are left as they are, so w's elements there do not count,
// but every row must have len(x) rounded up to a multiple of 8 elements in
// w (the kernels read whole groups of 8).
func DotF16RowsPadded(out []float32, w []uint16, stride int, x []float32) {
	current.Load().DotF16RowsPadded(out, w, stride, x)
}

// DotF16RowsPadded is the package function DotF16RowsPadded on tier tr.
func (tr *Tier) DotF16RowsPadded(out []float32, w []uint16, stride int, x []float32) {
	if len(out) == 0 {
		return
	}
	cols := len(x)
	span := (cols + 7) &^ 7
	if stride < cols || (len(out)-1)*stride+span > len(w) {
		panic("kernels: DotF16RowsPadded: rows do not fit in w")
	}
	if cols == 0 {
		clear(out)
		return
	}
	if tr != genericTier && dotF16RowsAsm(tr, out, w, stride, x, true) {
		return
	}
	for r := range out {
		out[r] = dotF16Row(w[r*stride:r*stride+cols], x, true)
	}
}

// dotF16Row is ggml_vec_dot_f16 of one row with x, in scalar code; padded
// puts the tail into its lanes instead of adding it in float64.
func dotF16Row(w []uint16, x []float32, padded bool) float32 {
	var acc [32]float32
	n := len(x)
	np := n &^ 31
	for i := 0; i < np; i += 32 {
		for l := range acc {
			acc[l] = quant.FMA32(quant.FP16ToFP32(w[i+l]), x[i+l], acc[l])
		}
	}
	if padded {
		for i := np; i < n; i++ {
			acc[i-np] = quant.FMA32(quant.FP16ToFP32(w[i]), x[i], acc[i-np])
		}
		return reduce32F32(&acc)
	}
	return dotF16Tail(float64(reduce32F32(&acc)), w[np:n], x[np:])
}

// dotF16Tail adds ggml_vec_dot_f16's leftovers to the reduced sum: each
// product in float32, the sum in float64, rounded to float32 at the end.
func dotF16Tail(sum float64, w []uint16, x []float32) float32 {
	for i, v := range x {
		sum += float64(quant.FP16ToFP32(w[i]) * v)
	}
	return float32(sum)
}

// reduce32F32 adds 32 lanes as GGML_F32x8_REDUCE: accumulators (0+2) +
// (1+3), the upper half onto the lower, then two horizontal adds.
func reduce32F32(acc *[32]float32) float32 {
	var x [8]float32
	for l := range x {
		x[l] = (acc[l] + acc[16+l]) + (acc[8+l] + acc[24+l])
	}
	t0, t1, t2, t3 := x[0]+x[4], x[1]+x[5], x[2]+x[6], x[3]+x[7]
	return (t0 + t1) + (t2 + t3)
}

// DotF16Heads is DotF32Heads for a cache of half-precision keys: the
// attention scores of several query heads over n cached positions, each
// position's heads together, so that the cache's rows are read in order,
// once. For query head j < len(q)/d and position t < n, out[j·ostride+t]
// is DotF16Rows' sum of q[j·d:(j+1)·d] with keys[t·stride+kv(j)·d:][:d],
// its key head kv(j) = (g0+j)/group (group query heads share a key head;
// the first, j = 0, is head g0 of its group).
//
// next, if not nil, is laid out as keys (the values of the same heads,
// when they are as wide): a kernel may fetch the parts of its rows that a
// later pass over them (ValuesF16Heads) reads into the cache on the way.
// It does not change the result.
func DotF16Heads(out []float32, ostride int, keys []uint16, stride, n int, q []float32, d, group, g0 int, next []uint16) {
	current.Load().DotF16Heads(out, ostride, keys, stride, n, q, d, group, g0, next)
}

// DotF16Heads is the package function DotF16Heads on tier tr.
func (tr *Tier) DotF16Heads(out []float32, ostride int, keys []uint16, stride, n int, q []float32, d, group, g0 int, next []uint16) {
	heads := checkHeads("DotF16Heads", len(q), stride, n, len(keys), d, group, g0)
	if heads == 0 || n == 0 {
		return
	}
	if ostride < n || (heads-1)*ostride+n > len(out) {
		panic("kernels: DotF16Heads: scores do not fit in out")
	}
	if len(next) < len(keys) {
		next = nil // fetched only where it is as long as keys
	}
	if tr != genericTier && dotF16HeadsAsm(tr, out, ostride, keys, stride, n, q, d, group, g0, heads, next) {
		return
	}
	for j := range heads {
		kv := (g0 + j) / group
		tr.DotF16Rows(out[j*ostride:j*ostride+n], keys[kv*d:], stride, q[j*d:(j+1)*d])
	}
}

// ValuesF16Heads is ValuesF32Heads for a cache of half-precision values,
// stored as the keys (position t's values at values[t·stride:], head after
// head): the attention outputs of several heads, their weighted values.
// For head j < len(out)/d and each of its d dimensions c, out[j·d+c] is
// the sum llama.cpp's ggml_vec_dot_f16 takes of p[j·pstride:][:n] with
// dimension c of value head kv(j) = (g0+j)/group over the n positions
// (the row of its transposed f16 cache), padded to a multiple of 32
// positions: position t goes into lane t%32 of 32 float32 lanes that start
// at +0, as the fused multiply-add of the value (widened exactly) and p[t],
// and the lanes are added as GGML_F32x8_REDUCE (ReduceLanes32F32). That is
// DotF16RowsPadded of p with the transposed values, bit for bit. llama.cpp
// rounds the weights to half precision first (see RoundF16); p is used as
// given.
//
// lanes (32·d elements a head) is scratch space: the call may overwrite
// it and leaves it undefined (a tier may sum the lanes in registers).
func ValuesF16Heads(out, lanes []float32, values []uint16, stride, n int, p []float32, pstride, d, group, g0 int) {
	current.Load().ValuesF16Heads(out, lanes, values, stride, n, p, pstride, d, group, g0)
}

// ValuesF16Heads is the package function ValuesF16Heads on tier tr.
func (tr *Tier) ValuesF16Heads(out, lanes []float32, values []uint16, stride, n int, p []float32, pstride, d, group, g0 int) {
	heads := checkHeads("ValuesF16Heads", len(out), stride, n, len(values), d, group, g0)
	if heads == 0 {
		return
	}
	if len(lanes) != 32*len(out) {
		panic("kernels: ValuesF16Heads: lanes is not 32 rows of out")
	}
	if n > 0 && (pstride < n || (heads-1)*pstride+n > len(p)) {
		panic("kernels: ValuesF16Heads: weights do not fit in p")
	}
	if tr != genericTier && n > 0 && valuesF16HeadsAsm(tr, out, lanes, values, stride, n, p, pstride, d, group, g0, heads) {
		return
	}
	clear(lanes)
	for j := range heads {
		kv := (g0 + j) / group
		hl := lanes[j*32*d : (j+1)*32*d]
		for t := range n {
			a := p[j*pstride+t]
			row := values[t*stride+kv*d:][:d]
			ln := hl[(t%32)*d:][:d]
			for c, v := range row {
				ln[c] = quant.FMA32(quant.FP16ToFP32(v), a, ln[c])
			}
		}
		tr.ReduceLanes32F32(out[j*d:(j+1)*d], hl)
	}
}
