//go:build arm64 && !purego

package kernels

import (
	"unsafe"

	"github.com/qsf-llm/qsf/quant"
)

// The float32 vector kernels of the neon tiers (vecf32_arm64.s and the F32
// row kernel): the same bits as the generic code, the sums in its order.

//go:noescape
func axpyF32NEON(y, x *float32, n int, a float32)

//go:noescape
func reduceLanes32NEON(out, lanes *float32, cols int)

func axpyF32Asm(y, x []float32, a float32) bool {
	n := len(y) &^ 3
	if n > 0 {
		axpyF32NEON(&y[0], &x[0], n, a)
	}
	for i := n; i < len(y); i++ {
		y[i] = quant.FMA32(x[i], a, y[i])
	}
	return true
}

// dotF32RowsAsm runs the F32 row kernel (ggml_vec_dot_f32's lanes and
// reduction) on rows stride elements apart, and adds the tail in float32
// without fusing.
func dotF32RowsAsm(out, w []float32, stride int, x []float32) bool {
	cols := len(x)
	if cols >= 32 {
		dotF32NEON(&out[0], len(out), (*byte)(unsafe.Pointer(&w[0])), cols/32, 4*stride, (*byte)(unsafe.Pointer(&x[0])))
	} else {
		clear(out)
	}
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

func lanesF32Asm(lanes []float32, width, cols int, x []float32, stride int, p []float32) bool {
	return false // the generic loop of AxpyF32 calls, which run axpyF32NEON
}

func reduceLanes32Asm(out, lanes []float32) bool {
	if len(out)%4 != 0 {
		return false
	}
	reduceLanes32NEON(&out[0], &lanes[0], len(out))
	return true
}

//go:noescape
func rotateF32NEON(v, cs *float32, pairs, step, off int)

func rotateF32Asm(v, cs []float32, pairs, step, off int) bool {
	rotateF32NEON(&v[0], &cs[0], pairs, 4*step, 4*off)
	return true
}
