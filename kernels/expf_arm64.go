//go:build arm64 && !purego

package kernels

// The neon tiers' ggml_v_expf loops (expf_arm64.s): the same bits as
// expf8, four lanes at a time.

//go:noescape
func siluNEON(dst, x *float32, n int)

//go:noescape
func expSubNEON(dst, x *float32, n int, max float32) float64

// siluAsm computes SiluF32 for len(x), a multiple of 8.
func siluAsm(dst, x []float32) bool {
	siluNEON(&dst[0], &x[0], len(x))
	return true
}

// expSubAsm computes ExpSubF32 for len(x) > 0: the whole groups of 8 in
// assembly, a last partial group as the generic code does.
func expSubAsm(dst, x []float32, max float32) (float64, bool) {
	var sum float64
	n8 := len(x) &^ 7
	if n8 > 0 {
		sum = expSubNEON(&dst[0], &x[0], n8, max)
	}
	if n8 < len(x) {
		var lanes [8]float32
		for l := range x[n8:] {
			e := expf8(x[n8+l] - max)
			dst[n8+l] = e
			lanes[l] = e
		}
		sum += float64(hsumF32x8(&lanes))
	}
	return sum, true
}
