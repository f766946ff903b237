//go:build amd64 && !purego

package kernels

//go:noescape
func siluAVX2(dst, x *float32, n int)

//go:noescape
func expSubAVX2(dst, x *float32, n int, max float32) float64

// siluAsm computes SiluF32 for len(x), a multiple of 8, in assembly and
// reports whether it could.
func siluAsm(dst, x []float32) bool {
	if !haveAVX2 {
		return false
	}
	siluAVX2(&dst[0], &x[0], len(x))
	return true
}

// expSubAsm computes ExpSubF32 for len(x) > 0 in assembly and reports
// whether it could.
func expSubAsm(dst, x []float32, max float32) (float64, bool) {
	if !haveAVX2 {
		return 0, false
	}
	return expSubAVX2(&dst[0], &x[0], len(x), max), true
}
