//go:build purego || !(amd64 || arm64)

package kernels

func roundF16Asm(x []float32) bool { return false }

func f16FromF32Asm(dst []uint16, src []float32) bool { return false }

func dotF16RowsAsm(tr *Tier, out []float32, w []uint16, stride int, x []float32, padded bool) bool {
	return false
}
