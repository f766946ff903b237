//go:build purego || !(amd64 || arm64)

package kernels

func axpyF32Asm(y, x []float32, a float32) bool { return false }

func dotF32RowsAsm(out, w []float32, stride int, x []float32) bool { return false }

func lanesF32Asm(lanes []float32, width, cols int, x []float32, stride int, p []float32) bool {
	return false
}

func reduceLanes32Asm(out, lanes []float32) bool { return false }

func rotateF32Asm(v, cs []float32, pairs, step, off int) bool { return false }
