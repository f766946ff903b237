//go:build amd64 && !purego

package kernels

//go:noescape
func quantQ8_KAVX2(dst *byte, src *float32, nb int)

// quantQ8_KArch quantizes src to Q8_K in dst with the AVX2 quantizer
// (quantq8k_amd64.s) on the tiers that have AVX2 and reports whether it
// did; len(src) is a multiple of 256 and dst holds the blocks.
func quantQ8_KArch(tr *Tier, dst []byte, src []float32) bool {
	if tr == genericTier || !haveAVX2 {
		return false
	}
	nb := len(src) / 256
	if nb == 0 {
		return true
	}
	_ = dst[292*nb-1]
	quantQ8_KAVX2(&dst[0], &src[0], nb)
	return true
}
