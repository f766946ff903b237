//go:build purego || !amd64

package kernels

// Only amd64 has assembly for Rotate64, the attention's several-heads
// kernels (elsewhere they run head by head: DotF32Rows, LanesF32) and
// MulF32/AddF32.

func rotate64Asm(tr *Tier, x []float32) bool { return false }

func dotF32HeadsAsm(tr *Tier, out []float32, ostride int, keys []float32, stride, n int, q []float32, d, group, g0, heads int, next []float32) bool {
	return false
}

func lanesF32HeadsAsm(lanes, values []float32, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	return false
}

func mulF32Asm(dst, x []float32) bool { return false }

func addF32Asm(dst, x []float32) bool { return false }

func valuesF32HeadsAsm(tr *Tier, out, values []float32, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	return false
}
