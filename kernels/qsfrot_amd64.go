//go:build amd64 && !purego

package kernels

import "github.com/qsf-llm/qsf/quant"

//go:noescape
func dotQ2RAVX2(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ3RAVX2(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ4RAVX2(out *float32, rows int, w *byte, nb int, act *byte)

func q2rAVX2(out []float32, w []byte, rowBytes, cols int, act, _ []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[cols/32*34-1]
	dotQ2RAVX2(&out[0], len(out), &w[0], cols/64, &act[0])
}

func q3rAVX2(out []float32, w []byte, rowBytes, cols int, act, _ []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[cols/32*34-1]
	dotQ3RAVX2(&out[0], len(out), &w[0], cols/64, &act[0])
}

func q4rAVX2(out []float32, w []byte, rowBytes, cols int, act, _ []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[cols/32*34-1]
	dotQ4RAVX2(&out[0], len(out), &w[0], cols/64, &act[0])
}

// initOwnAVX2 registers the AVX2 kernels of QSF's own types (the avx512
// tier copies them).
func initOwnAVX2() {
	avx2Tier.register([]kernelRow{
		{key: quant.QSF_Q2R, rows: q2rAVX2},
		{key: quant.QSF_Q3R, rows: q3rAVX2},
		{key: quant.QSF_Q4R, rows: q4rAVX2},
	})
}
