//go:build amd64 && !purego

package kernels

// The avx512 tier's Q4_K and Q6_K kernels (kquant_avx512_amd64.s): per
// (row, activation) the arithmetic of the AVX2 kernels, two rows or two
// activations per zmm.

//go:noescape
func dotQ4_KRows2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, act *byte)

// q4_KAVX512 runs whole pairs of rows through dotQ4_KRows2AVX512 and a
// last odd row through the AVX2 one-row kernel; both compute a row alike,
// bit for bit.
func q4_KAVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	nb := cols / 256
	_ = w[len(out)*rowBytes-1]
	_ = act[nb*q8KBlock-1]
	pairs := len(out) / 2
	if pairs > 0 {
		dotQ4_KRows2AVX512(&out[0], pairs, &w[0], nb, rowBytes, &act[0])
	}
	if r := 2 * pairs; r < len(out) {
		dotQ4_KAVX2(&out[r], len(out)-r, &w[r*rowBytes], nb, &act[0])
	}
}

//go:noescape
func dotQ6_KRows2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, act, aux *byte)

// q6_KAVX512 runs whole pairs of rows through dotQ6_KRows2AVX512 and a
// last odd row through the AVX2 one-row kernel; aux is the activation
// prepared by prepQ6_K.
func q6_KAVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	nb := cols / 256
	_ = w[len(out)*rowBytes-1]
	_ = act[nb*q8KBlock-1]
	_ = aux[nb*pairAuxBlock-1]
	pairs := len(out) / 2
	if pairs > 0 {
		dotQ6_KRows2AVX512(&out[0], pairs, &w[0], nb, rowBytes, &act[0], &aux[0])
	}
	if r := 2 * pairs; r < len(out) {
		dotQ6_KAVX2(&out[r], len(out)-r, &w[r*rowBytes], nb, &act[0], &aux[0])
	}
}
