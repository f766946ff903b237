//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func axpyF32AVX2(y, x *float32, n int, a float32)

func axpyF32Asm(y, x []float32, a float32) bool {
	if len(y) > 0 && hasAVX2() {
		axpyF32AVX2(&y[0], &x[0], len(y), a)
		return true
	}
	return false
}

func dotF32RowsAsm(out, w []float32, stride int, x []float32) bool {
	if !hasAVX2() {
		return false
	}
	cols := len(x)
	dotF32AVX2(&out[0], len(out), (*byte)(unsafe.Pointer(&w[0])), cols/32, 4*stride, (*byte)(unsafe.Pointer(&x[0])))
	if tail := cols &^ 31; tail < cols {
		for r := range out {
			row := w[r*stride:]
			sum := out[r]
			for i := tail; i < cols; i++ {
				sum += float32(row[i] * x[i])
			}
			out[r] = sum
		}
	}
	return true
}

//go:noescape
func lanesF32AVX2(lanes *float32, width, cols int, x *float32, stride int, p *float32, n int)

//go:noescape
func reduceLanes32AVX2(out, lanes *float32, cols int)

func lanesF32Asm(lanes []float32, width, cols int, x []float32, stride int, p []float32) bool {
	if cols%8 != 0 || !hasAVX2() {
		return false
	}
	if len(p) == 0 {
		clear(lanes)
		return true
	}
	lanesF32AVX2(&lanes[0], width, cols, &x[0], 4*stride, &p[0], len(p))
	return true
}

func reduceLanes32Asm(out, lanes []float32) bool {
	if len(out)%8 != 0 || !hasAVX2() {
		return false
	}
	reduceLanes32AVX2(&out[0], &lanes[0], len(out))
	return true
}

//go:noescape
func rotateF32FMA(v, cs *float32, pairs, step, off int)

func rotateF32Asm(v, cs []float32, pairs, step, off int) bool {
	if !hasAVX2() {
		return false
	}
	rotateF32FMA(&v[0], &cs[0], pairs, 4*step, 4*off)
	return true
}

//go:noescape
func rotate64AVX512(x *float32, blocks int)

//go:noescape
func rotate64AVX2(x *float32, blocks int)

// rotate64Asm is quant.Rotate64 on the 64-element blocks of x in the
// assembly of tier tr (rotate64_amd64.s), false when tr has none.
func rotate64Asm(tr *Tier, x []float32) bool {
	nb := len(x) / 64
	switch {
	case nb == 0:
		return true
	case tr == avx512Tier && haveAVX512:
		rotate64AVX512(&x[0], nb)
	case (tr == avx2Tier || tr == avx512Tier) && hasAVX2():
		rotate64AVX2(&x[0], nb)
	default:
		return false
	}
	return true
}

//go:noescape
func dotF32HeadsAVX2(out *float32, ostride, n int, keys *byte, kstride int, q *byte, heads, chunks, group, g0, next int)

func dotF32HeadsAsm(tr *Tier, out []float32, ostride int, keys []float32, stride, n int, q []float32, d, group, g0, heads int, next []float32) bool {
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
		dotF32HeadsAVX512(&out[0], 4*ostride, n, (*byte)(unsafe.Pointer(&keys[0])), 4*stride, (*byte)(unsafe.Pointer(&q[0])), heads, d/32, group, g0, off)
		return true
	}
	dotF32HeadsAVX2(&out[0], 4*ostride, n, (*byte)(unsafe.Pointer(&keys[0])), 4*stride, (*byte)(unsafe.Pointer(&q[0])), heads, d/32, group, g0, off)
	return true
}

//go:noescape
func dotF32HeadsAVX512(out *float32, ostride, n int, keys *byte, kstride int, q *byte, heads, chunks, group, g0, next int)

//go:noescape
func lanesF32HeadsAVX2(lanes *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)

func lanesF32HeadsAsm(lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	if d%8 != 0 || !hasAVX2() {
		return false
	}
	if n < 32 { // the lanes the kernel does not write
		w := 32 * d
		for j := range heads {
			clear(lanes[j*w+n*d : (j+1)*w])
		}
	}
	lanesF32HeadsAVX2(&lanes[0], n, (*byte)(unsafe.Pointer(&values[0])), 4*stride, &p[0], 4*pstride, heads, d, group, g0)
	return true
}

//go:noescape
func mulF32AVX2(dst, x *float32, n int)

//go:noescape
func addF32AVX2(dst, x *float32, n int)

func mulF32Asm(dst, x []float32) bool {
	if len(dst) == 0 || !hasAVX2() {
		return len(dst) == 0
	}
	mulF32AVX2(&dst[0], &x[0], len(dst))
	return true
}

func addF32Asm(dst, x []float32) bool {
	if len(dst) == 0 || !hasAVX2() {
		return len(dst) == 0
	}
	addF32AVX2(&dst[0], &x[0], len(dst))
	return true
}

//go:noescape
func valuesF32HeadsAVX512(out *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)

// valuesF32HeadsAsm is ValuesF32Heads in the assembly of tier tr
// (attn_avx512_amd64.s, vecf32_amd64.s), false when tr has none for heads
// of d.
func valuesF32HeadsAsm(tr *Tier, out, values []float32, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	if d%16 != 0 || n == 0 {
		return false
	}
	switch {
	case tr == avx512Tier && haveAVX512:
		valuesF32HeadsAVX512(&out[0], n, (*byte)(unsafe.Pointer(&values[0])), 4*stride, &p[0], 4*pstride, heads, d, group, g0)
	case (tr == avx2Tier || tr == avx512Tier) && hasAVX2() && n <= 64:
		// Past two lanes' rounds the 16-column passes are slower than
		// LanesF32Heads' 32 columns (BenchmarkF32Heads: 1.7x faster at
		// 50 positions, 1.4x slower at 100).
		valuesF32HeadsAVX2(&out[0], n, (*byte)(unsafe.Pointer(&values[0])), 4*stride, &p[0], 4*pstride, heads, d, group, g0)
	default:
		return false
	}
	return true
}

//go:noescape
func valuesF32HeadsAVX2(out *float32, n int, values *byte, vstride int, p *float32, pstride, heads, cols, group, g0 int)
