//go:build amd64 && !purego

package kernels

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/qsf-llm/qsf/quant"
)

//go:noescape
func dotQ2RAVX2(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)

//go:noescape
func dotQ3RAVX2(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)

//go:noescape
func dotQ4RAVX2(out *float32, rows int, w *byte, nb int, aux *byte, mul *[256][16]uint16)

func q2rAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	checkRot(out, w, rowBytes, cols, aux)
	dotQ2RAVX2(&out[0], len(out), &w[0], cols/64, &aux[0], &rotMul)
}

func q3rAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	checkRot(out, w, rowBytes, cols, aux)
	dotQ3RAVX2(&out[0], len(out), &w[0], cols/64, &aux[0], &rotMul)
}

func q4rAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	checkRot(out, w, rowBytes, cols, aux)
	dotQ4RAVX2(&out[0], len(out), &w[0], cols/64, &aux[0], &rotMul)
}

// initOwnAVX2 registers the AVX2 kernels of QSF's own types (the avx512
// tier copies them).
func initOwnAVX2() {
	avx2Tier.register([]kernelRow{
		{key: quant.QSF_Q2R, rows: q2rAVX2, prep: prepRot},
		{key: quant.QSF_Q3R, rows: q3rAVX2, prep: prepRot},
		{key: quant.QSF_Q4R, rows: q4rAVX2, prep: prepRot},
	})
}

//go:noescape
func dotQ2RAVX512(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ3RAVX512(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ4RAVX512(out *float32, rows int, w *byte, nb int, act, aux *byte)

// initOwnAVX512 registers the AVX-512 kernels of QSF's rotated types,
// which need VBMI (VPERMB) beyond the avx512 tier's F, BW, VL and VNNI;
// without it the tier keeps the AVX2 kernels.
func initOwnAVX512() {
	if !cpuid.CPU.Supports(cpuid.AVX512VBMI) {
		return
	}
	avx512Tier.register([]kernelRow{
		{key: quant.QSF_Q2R, rows: rotF8AVX512(dotQ2RF8AVX512, dotQ2RAVX512), prep: prepRotX8Asm},
		{key: quant.QSF_Q3R, rows: rotF8AVX512(dotQ3RF8AVX512, dotQ3RAVX512), prep: prepRotX8Asm},
		{key: quant.QSF_Q4R, rows: rotF8AVX512(dotQ4RF8AVX512, dotQ4RAVX512), prep: prepRotX8Asm},
		{key: QSF_Q2Rx8, rows: rotX8AVX512(dotQ2Rx8AVX512), prep: prepRotX8Asm},
		{key: QSF_Q3Rx8, rows: rotX8AVX512(dotQ3Rx8AVX512), prep: prepRotX8Asm},
		{key: QSF_Q4Rx8, rows: rotX8AVX512(dotQ4Rx8AVX512), prep: prepRotX8Asm},
	})
}

//go:noescape
func dotQ2Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)

//go:noescape
func dotQ3Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)

//go:noescape
func dotQ4Rx8AVX512(out *float32, groups int, w *byte, nb int, aux *byte)

// rotX8AVX512 makes the avx512 tier's kernel of an x8 layout: whole
// groups of 8 rows, aux prepared by prepRotX8.
func rotX8AVX512(f func(out *float32, groups int, w *byte, nb int, aux *byte)) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		_ = w[len(out)*rowBytes-1]
		_ = aux[cols/64*rotX8PrepBlock-1]
		_ = out[len(out)/8*8-1]
		f(&out[0], len(out)/8, &w[0], cols/64, &aux[0])
	}
}

//go:noescape
func dotQ2RF8AVX512(out *float32, groups int, w *byte, rb, nb int, aux *byte)

//go:noescape
func dotQ3RF8AVX512(out *float32, groups int, w *byte, rb, nb int, aux *byte)

//go:noescape
func dotQ4RF8AVX512(out *float32, groups int, w *byte, rb, nb int, aux *byte)

// rotF8AVX512 makes the avx512 tier's kernel of a rotated type in the
// file's layout: f8 multiplies whole groups of 8 rows, in the x8 kernels'
// register form (see rotx8_avx512_amd64.s), and f1 the rows left, one at
// a time; aux is prepared by prepRotX8.
func rotF8AVX512(f8 func(out *float32, groups int, w *byte, rb, nb int, aux *byte),
	f1 func(out *float32, rows int, w *byte, nb int, act, aux *byte)) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		nb := cols / 64
		_ = w[len(out)*rowBytes-1]
		_ = act[nb*68-1]
		_ = aux[nb*rotX8PrepBlock-1]
		g := len(out) / 8
		if g > 0 {
			f8(&out[0], g, &w[0], rowBytes, nb, &aux[0])
		}
		if r := len(out) - 8*g; r > 0 {
			f1(&out[8*g], r, &w[8*g*rowBytes], nb, &act[0], &aux[0])
		}
	}
}

//go:noescape
func prepRotX8AVX2(dst, act *byte, nb int)

// prepRotX8Asm is prepRotX8 in assembly (rotx8prep_amd64.s), for the
// avx512 tier's kernels of the rotated types: a decode step prepares
// every activation on one thread before the pool's mat-vec, and the Go
// loop took 1 µs for 2048 columns and 4.6 µs for 5632 (about 2% of a
// tinyllama token at 2 threads), the assembly about 20 times less.
func prepRotX8Asm(buf, act []byte, cols int) []byte {
	nb := cols / 64
	need := nb * rotX8PrepBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	if nb > 0 {
		_ = act[nb*68-1]
		prepRotX8AVX2(&buf[0], &act[0], nb)
	}
	return buf
}
