//go:build amd64 && !purego

package kernels

//go:noescape
func lanesDotSeqAVX2(out, q, keys *float32, stride, n, d int)

//go:noescape
func addScaledAVX2(out *float32, stride int, v *float32, n int, scale, offset *float32, heads int)

//go:noescape
func addScaledNoOffsetAVX2(out *float32, stride int, v *float32, n int, scale *float32, heads int)

// lanesDotSeqAsm is LanesDotSeq in AVX2 (codedattn_amd64.s), on the avx2
// and avx512 tiers; the caller has checked the lengths.
func lanesDotSeqAsm(out, q, keys []float32, stride, n, d int) bool {
	if !hasAVX2() {
		return false
	}
	lanesDotSeqAVX2(&out[0], &q[0], &keys[0], 4*stride, n, d)
	return true
}

// addScaledHeadsAsm adds the first multiple of 8 elements of each row
// (AddScaledHeads) in AVX2 and returns how many it added; the caller adds
// the rest.
func addScaledHeadsAsm(out []float32, stride int, v, scale, offset []float32) int {
	n := len(v) &^ 7
	if n == 0 || !hasAVX2() {
		return 0
	}
	if offset == nil {
		addScaledNoOffsetAVX2(&out[0], 4*stride, &v[0], n, &scale[0], len(scale))
	} else {
		addScaledAVX2(&out[0], 4*stride, &v[0], n, &scale[0], &offset[0], len(scale))
	}
	return n
}

//go:noescape
func decodeQ4AVX2(dst *float32, codes *byte, n int)

//go:noescape
func decodeQ4AffineAVX2(dst *float32, codes *byte, n int, scale, offset *float32)

// decodeQ4Asm decodes the first multiple of 16 elements (DecodeQ4) in
// AVX2 and returns how many it decoded; the caller decodes the rest.
func decodeQ4Asm(dst []float32, codes []byte, scale, offset []float32, affine bool) int {
	n := len(dst) &^ 15
	if n == 0 || !hasAVX2() {
		return 0
	}
	if affine {
		decodeQ4AffineAVX2(&dst[0], &codes[0], n, &scale[0], &offset[0])
	} else {
		decodeQ4AVX2(&dst[0], &codes[0], n)
	}
	return n
}
