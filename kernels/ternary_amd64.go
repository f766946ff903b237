//go:build amd64 && !purego

package kernels

// The ternary kernels (ternary_amd64.s) compute one row at a time; rows
// are contiguous, so the assembly walks the blocks of all rows in one
// pass.

//go:noescape
func dotTQ1_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotTQ2_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)

// tq1_0AVX2 is the avx2 tier's TQ1_0 kernel.
func tq1_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 256
	_ = w[len(out)*nb*54-1]
	_ = act[nb*292-1]
	dotTQ1_0AVX2(&out[0], len(out), &w[0], nb, &act[0])
}

// tq2_0AVX2 is the avx2 tier's TQ2_0 kernel.
func tq2_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 256
	_ = w[len(out)*nb*66-1]
	_ = act[nb*292-1]
	dotTQ2_0AVX2(&out[0], len(out), &w[0], nb, &act[0])
}
