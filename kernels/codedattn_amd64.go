//go:build amd64 && !purego

package kernels

//go:noescape
func lanesDotSeqAVX2(out, q, keys *float32, stride, n, d int)

// lanesDotSeqAsm is LanesDotSeq in AVX2 (codedattn_amd64.s), on the avx2
// and avx512 tiers; the caller has checked the lengths.
func lanesDotSeqAsm(out, q, keys []float32, stride, n, d int) bool {
	if !hasAVX2() {
		return false
	}
	lanesDotSeqAVX2(&out[0], &q[0], &keys[0], 4*stride, n, d)
	return true
}

//go:noescape
func addScaledAVX2(out *float32, stride int, v *float32, d, m int, scale, offset *float32, heads, cols int)

// addScaledHeadsAsm adds the first multiple of 32 columns of each row
// (AddScaledHeads) in AVX2 and returns how many it added; the caller adds
// the rest. The caller has checked the lengths.
func addScaledHeadsAsm(out []float32, stride int, v []float32, d, m int, scale, offset []float32, heads int) int {
	cols := d &^ 31
	if cols == 0 || !hasAVX2() {
		return 0
	}
	var off *float32 // nil: no offsets
	if offset != nil {
		off = &offset[0]
	}
	addScaledAVX2(&out[0], 4*stride, &v[0], 4*d, m, &scale[0], off, 4*heads, cols)
	return cols
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
