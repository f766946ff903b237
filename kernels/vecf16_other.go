//go:build purego || !(amd64 || arm64)

package kernels

func roundF16Asm(x []float32) bool { return false }

func f16FromF32Asm(dst []uint16, src []float32) bool { return false }

func dotF16RowsAsm(tr *Tier, out []float32, w []uint16, stride int, x []float32, padded bool) bool {
	return false
}

func dotF16HeadsAsm(tr *Tier, out []float32, ostride int, keys []uint16, stride, n int, q []float32, d, group, g0, heads int, next []uint16) bool {
	return false
}

func valuesF16HeadsAsm(tr *Tier, out, lanes []float32, values []uint16, stride, n int, p []float32, pstride, d, group, g0, heads int) bool {
	return false
}
