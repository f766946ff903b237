//go:build purego || !amd64

package kernels

func lanesDotSeqAsm(out, q, keys []float32, stride, n, d int) bool { return false }

func addScaledHeadsAsm(out []float32, stride int, v, scale, offset []float32) int { return 0 }
