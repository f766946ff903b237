//go:build arm64 && !purego

package kernels

import (
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// The half-precision vector kernels of the neon tiers (vecf16_arm64.s):
// FCVTN/FCVTL conversions and ggml_vec_dot_f16's lanes, the same bits as
// the generic code.

//go:noescape
func roundF16NEON(x *float32, n int)

//go:noescape
func f16FromF32NEON(dst *uint16, src *float32, n int)

//go:noescape
func dotF16F32NEON(out *float32, rows int, w *uint16, chunks, rowBytes int, x *float32)

func roundF16Asm(x []float32) bool {
	n := len(x) &^ 7
	if n > 0 {
		roundF16NEON(&x[0], n)
	}
	for i := n; i < len(x); i++ {
		x[i] = quant.FP16ToFP32(quant.FP32ToFP16(x[i]))
	}
	return true
}

func f16FromF32Asm(dst []uint16, src []float32) bool {
	n := len(src) &^ 7
	if n > 0 {
		f16FromF32NEON(&dst[0], &src[0], n)
	}
	for i := n; i < len(src); i++ {
		dst[i] = quant.FP32ToFP16(src[i])
	}
	return true
}

// dotF16RowsAsm computes the chunks of 32 of every row and reduces them;
// the caller adds an unpadded tail. A padded partial last chunk is left
// to the generic code (it returns false). The caller has checked the
// lengths.
func dotF16RowsAsm(tr *Tier, out []float32, w []uint16, stride int, x []float32, padded bool) bool {
	cols := len(x)
	if padded && cols%32 != 0 {
		return false
	}
	if cols < 32 {
		clear(out)
		return true
	}
	dotF16F32NEON(&out[0], len(out), &w[0], cols/32, 2*stride, &x[0])
	return true
}

// dotF16HeadsAsm is DotF16Heads on the neon tiers: query heads that share
// a key head go in pairs (dotF16x2NEON, the F16 prefill tile: each key
// row is loaded and widened once for both, the lanes and sums those of
// dotF16F32NEON; the tail as DotF16Rows adds it), the others through
// DotF16Rows. Without grouped heads, or with heads narrower than 32, it
// returns false (the caller then runs DotF16Rows head by head). The
// caller has checked the lengths and that n ≥ 1.
func dotF16HeadsAsm(tr *Tier, out []float32, ostride int, keys []uint16, stride, n int, q []float32, d, group, g0, heads int, next []uint16) bool {
	if group == 1 || d < 32 {
		return false
	}
	np := d &^ 31
	for j := 0; j < heads; {
		kv := (g0 + j) / group
		w := keys[kv*d:]
		o0, x0 := out[j*ostride:j*ostride+n], q[j*d:(j+1)*d]
		if j+1 == heads || (g0+j+1)/group != kv {
			tr.DotF16Rows(o0, w, stride, x0)
			j++
			continue
		}
		o1, x1 := out[(j+1)*ostride:(j+1)*ostride+n], q[(j+1)*d:(j+2)*d]
		dotF16x2NEON(&o0[0], ostride, n, (*byte)(unsafe.Pointer(&w[0])), d/32, 2*stride, (*byte)(unsafe.Pointer(&x0[0])), 4*d)
		if np < d {
			for r := range n {
				row := w[r*stride+np : r*stride+d]
				o0[r] = dotF16Tail(float64(o0[r]), row, x0[np:])
				o1[r] = dotF16Tail(float64(o1[r]), row, x1[np:])
			}
		}
		j += 2
	}
	return true
}

//go:noescape
func valuesF16x16NEON(out *float32, values *uint16, rowBytes, n int, p *float32, cols int)

//go:noescape
func valuesF16x4NEON(out *float32, values *uint16, rowBytes, n int, p *float32, cols int)

// valuesF16HeadsAsm is ValuesF16Heads on the neon tiers, head by head: the
// columns in chunks of 16 and then of 4 in assembly (the lanes in
// registers), the last d mod 4 in Go. The caller has checked the lengths
// and that n ≥ 1.
func valuesF16HeadsAsm(tr *Tier, out, lanes []float32, values []uint16, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	c16, c4 := d&^15, d&^3
	for j := range heads {
		o := out[j*d : (j+1)*d]
		v := values[(g0+j)/group*d:]
		w := p[j*pstride : j*pstride+n]
		if c16 > 0 {
			valuesF16x16NEON(&o[0], &v[0], 2*stride, n, &w[0], c16)
		}
		if c4 > c16 {
			valuesF16x4NEON(&o[c16], &v[c16], 2*stride, n, &w[0], c4-c16)
		}
		for c := c4; c < d; c++ {
			o[c] = valuesF16Column(v[c:], stride, w)
		}
	}
	return true
}

// valuesF16Column is ValuesF16Heads' sum for one column: the weighted
// values v[t·stride] (t < len(p)) in lane t%32, then GGML_F32x8_REDUCE.
func valuesF16Column(v []uint16, stride int, p []float32) float32 {
	var acc [32]float32
	for t, a := range p {
		acc[t%32] = quant.FMA32(quant.FP16ToFP32(v[t*stride]), a, acc[t%32])
	}
	return reduce32F32(&acc)
}
