//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

//go:noescape
func roundF16AVX2(x *float32, n int)

//go:noescape
func f16FromF32AVX2(dst *uint16, src *float32, n int)

//go:noescape
func dotF16F32AVX2(out *float32, rows int, w *uint16, chunks, rowBytes int, x *float32, rem int, tail *float32, pf int)

func roundF16Asm(x []float32) bool {
	if !hasAVX2() {
		return false
	}
	n := len(x) &^ 7
	if n > 0 {
		roundF16AVX2(&x[0], n)
	}
	for i := n; i < len(x); i++ {
		x[i] = quant.FP16ToFP32(quant.FP32ToFP16(x[i]))
	}
	return true
}

func f16FromF32Asm(dst []uint16, src []float32) bool {
	if !hasAVX2() {
		return false
	}
	n := len(src) &^ 7
	if n > 0 {
		f16FromF32AVX2(&dst[0], &src[0], n)
	}
	for i := n; i < len(src); i++ {
		dst[i] = quant.FP32ToFP16(src[i])
	}
	return true
}

// prefetch returns how far ahead of the element a chunk reads the kernel
// prefetches, for rows of rowBytes bytes apart, each of n bytes: where
// rows are (nearly) contiguous the hardware sees one stream and a
// distance of some lines is enough; far-apart rows are separate streams,
// too short for the hardware to pick up, so each chunk fetches its
// counterpart four rows ahead.
func prefetch(rowBytes, n int) int {
	if rowBytes-n < 64 {
		return 1024
	}
	return 4 * rowBytes
}

// dotF16RowsAsm computes the chunks of 32 (and, when padded, the partial
// last chunk) of every row and reduces them; the caller adds an unpadded
// tail. On the avx512 tier, eight rows at a time go through
// dotF16F32AVX512, the rest through the AVX2 kernel (the same sums). The
// caller has checked the lengths.
func dotF16RowsAsm(tr *Tier, out []float32, w []uint16, stride int, x []float32, padded bool) bool {
	if !hasAVX2() {
		return false
	}
	cols := len(x)
	np := cols &^ 31
	var tail [32]float32
	rem := 0
	if padded {
		rem = copy(tail[:], x[np:])
	}
	pf := prefetch(2*stride, 2*cols)
	done := 0
	if tr == avx512Tier && len(out) >= 8 {
		blocks := len(out) / 8
		dotF16F32AVX512(&out[0], blocks, &w[0], np/32, 2*stride, &x[0], rem, &tail[0], pf)
		done = 8 * blocks
	}
	if done < len(out) {
		dotF16F32AVX2(&out[done], len(out)-done, &w[done*stride], np/32, 2*stride, &x[0], rem, &tail[0], pf)
	}
	return true
}

//go:noescape
func dotF16HeadsAVX512(out *float32, ostride, n int, keys *uint16, kstride int, q *float32, heads, chunks, group, g0, next int)

//go:noescape
func dotF16HeadsAVX2(out *float32, ostride, n int, keys *uint16, kstride int, q *float32, heads, chunks, group, g0, next int)

// dotF16HeadsAsm is DotF16Heads in the assembly of tier tr
// (attn_avx512_amd64.s, vecf16_amd64.s); false where the tier has none,
// for heads of d%32 != 0 too (the caller then runs DotF16Rows head by
// head, which adds the tails).
func dotF16HeadsAsm(tr *Tier, out []float32, ostride int, keys []uint16, stride, n int, q []float32, d, group, g0, heads int, next []uint16) bool {
	if d%32 != 0 || !hasAVX2() {
		return false
	}
	// next as the distance in bytes from keys (0: keys again, already
	// fetched), for the kernel to fetch at each key it reads.
	off := 0
	if next != nil {
		off = int(uintptr(unsafe.Pointer(&next[0])) - uintptr(unsafe.Pointer(&keys[0])))
	}
	if tr == avx512Tier && haveAVX512 {
		dotF16HeadsAVX512(&out[0], 4*ostride, n, &keys[0], 2*stride, &q[0], heads, d/32, group, g0, off)
		return true
	}
	dotF16HeadsAVX2(&out[0], 4*ostride, n, &keys[0], 2*stride, &q[0], heads, d/32, group, g0, off)
	return true
}

//go:noescape
func valuesF16HeadsAVX512(out *float32, n int, values *uint16, vstride int, p *float32, pstride, heads, cols, group, g0 int)

//go:noescape
func valuesF16HeadsAVX2(out *float32, n int, values *uint16, vstride int, p *float32, pstride, heads, cols, group, g0 int)

// valuesF16HeadsAsm is ValuesF16Heads in the assembly of tier tr
// (attn_avx512_amd64.s, vecf16_amd64.s), with lanes its scratch; false
// where the tier has none, for heads of d%8 != 0 too (the caller then
// runs the generic code).
func valuesF16HeadsAsm(tr *Tier, out, lanes []float32, values []uint16, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	if d%8 != 0 || n == 0 || !hasAVX2() {
		return false
	}
	switch {
	case d%16 != 0: // the lanes, whichever tier
		valuesF16Lanes(out, lanes, values, stride, n, p, pstride, d, group, g0, heads)
	case tr == avx512Tier && haveAVX512:
		valuesF16HeadsAVX512(&out[0], n, &values[0], 2*stride, &p[0], 4*pstride, heads, d, group, g0)
	case n > 64:
		// Past two lanes' rounds the 16-column passes are slower than
		// lanes of 32 columns and their reduction, as for f32
		// (BenchmarkF16Heads at 200 positions: half the CPU in L2, a
		// quarter less from memory after the key pass).
		valuesF16Lanes(out, lanes, values, stride, n, p, pstride, d, group, g0, heads)
	default:
		valuesF16HeadsAVX2(&out[0], n, &values[0], 2*stride, &p[0], 4*pstride, heads, d, group, g0)
	}
	return true
}

// valuesF16Lanes is ValuesF16Heads as LanesF32Heads and ReduceLanes32F32
// compute ValuesF32Heads: lanesF16HeadsAVX2 sums each head's 32 lanes
// into lanes (those of positions past n < 32 cleared to +0 first, as
// lanesF32HeadsAsm does) and reduceLanes32AVX2 adds them up. n > 0 and
// d%8 == 0.
func valuesF16Lanes(out, lanes []float32, values []uint16, stride, n int, p []float32, pstride, d, group, g0, heads int) {
	w := 32 * d
	if n < 32 { // the lanes the kernel does not write
		for j := range heads {
			clear(lanes[j*w+n*d : (j+1)*w])
		}
	}
	lanesF16HeadsAVX2(&lanes[0], n, &values[0], 2*stride, &p[0], 4*pstride, heads, d, group, g0)
	for j := range heads {
		reduceLanes32AVX2(&out[j*d], &lanes[j*w], d)
	}
}

//go:noescape
func lanesF16HeadsAVX2(lanes *float32, n int, values *uint16, vstride int, p *float32, pstride, heads, cols, group, g0 int)
