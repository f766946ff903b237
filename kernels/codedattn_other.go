//go:build purego || !amd64

package kernels

func lanesDotSeqAsm(out, q, keys []float32, stride, n, d int) bool { return false }

func addScaledHeadsAsm(out []float32, stride int, v []float32, d, m int, scale, offset []float32, heads int) int {
	return 0
}

func decodeQ4Asm(dst []float32, codes []byte, scale, offset []float32, affine bool) int { return 0 }
