//go:build purego || !(amd64 || arm64)

package kernels

func axpyF32Asm(y, x []float32, a float32) bool { return false }

func dotF32RowsAsm(out, w []float32, stride int, x []float32) bool { return false }

func lanesF32Asm(lanes []float32, width, cols int, x []float32, stride int, p []float32) bool {
	return false
}

func reduceLanes32Asm(out, lanes []float32) bool { return false }

func rotateF32Asm(v, cs []float32, pairs, step, off int) bool { return false }

func rotate64Asm(tr *Tier, x []float32) bool { return false }

func dotF32HeadsAsm(out []float32, ostride int, keys []float32, stride, n int, q []float32, d, group, g0, heads int, next []float32) bool {
	return false
}

func lanesF32HeadsAsm(lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	return false
}

func mulF32Asm(dst, x []float32) bool { return false }

func addF32Asm(dst, x []float32) bool { return false }
