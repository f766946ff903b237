//go:build amd64 && !purego

package kernels

// maxAVX2 returns the largest value of x[:n] (n a multiple of 32), NaNs
// passed over; -Inf when there is none.
//
//go:noescape
func maxAVX2(x *float32, n int) float32

// findAVX2 returns the first index i < n (n a multiple of 8) with
// x[i] == v, or n when there is none.
//
//go:noescape
func findAVX2(x *float32, n int, v float32) int

// argmaxAsm computes ArgmaxF32 for x[0] not NaN, in two passes: the
// largest value (the maximum of the non-NaN values), then the first index
// that holds it (-0 and +0 compare equal, as they do in the plain loop,
// which keeps the first of them). It reports whether it could.
func argmaxAsm(x []float32) (int, bool) {
	if !haveAVX2 {
		return 0, false
	}
	m := x[0] // the maximum is one of the values
	n32 := len(x) &^ 31
	if n32 > 0 {
		m = max32(m, maxAVX2(&x[0], n32))
	}
	for _, v := range x[n32:] {
		m = max32(m, v)
	}
	n8 := len(x) &^ 7
	i := n8
	if n8 > 0 {
		i = findAVX2(&x[0], n8, m)
	}
	if i == n8 { // not in x[:n8]: in the tail
		for i < len(x) && x[i] != m {
			i++
		}
	}
	return i, true
}

// max32 returns the larger of m and v, m when v is NaN.
func max32(m, v float32) float32 {
	if v > m {
		return v
	}
	return m
}
