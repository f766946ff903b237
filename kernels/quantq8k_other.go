//go:build !amd64 || purego

package kernels

// quantQ8_KArch reports that this build has no Q8_K quantizer of its
// own: package quant's is used.
func quantQ8_KArch(tr *Tier, dst []byte, src []float32) bool { return false }
