//go:build amd64 && !purego

package kernels

//go:noescape
func dotF32HAVX512(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte) int

//go:noescape
func decodeF32HAVX512(dst *byte, rows int, w *byte, chunks, rowBytes int)

// initF32HAVX512 registers the avx512 tier's F32H kernels (AVX-512 F and
// BW).
func initF32HAVX512() {
	tileF32HAVX512 = tileF32AVX512
	tileF32HAVX512.expand = expandF32HAVX512
	tileF32HT8AVX512 = tileF32T8AVX512
	tileF32HT8AVX512.expand = expandF32HAVX512
	tileF32HT8AVX512.rest = &tileF32HAVX512
	avx512Tier.register([]kernelRow{
		{key: F32H, rows: f32hAVX512, tile: &tileF32HT8AVX512},
	})
}

// tileF32HT8AVX512 and tileF32HAVX512 are the avx512 tier's F32H tiles:
// each tile of rows decoded once (expandF32HAVX512), then the F32 tile of
// eight or four activations (tileF32T8AVX512, tileF32AVX512) on it.
var tileF32HT8AVX512, tileF32HAVX512 tileKernel

// f32hAVX512 is the avx512 tier's F32H kernel: dotF32AVX512's sums, the
// weights decoded on the way; a row with escapes is decoded whole,
// patched and multiplied as F32.
func f32hAVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[4*cols-1]
	chunks := cols / f32hCols
	for r := 0; r < len(out); {
		r += dotF32HAVX512(&out[r], len(out)-r, &w[r*rowBytes], chunks, rowBytes, &act[0])
		if r == len(out) {
			return
		}
		p, row := f32hScratch(4 * cols)
		src := w[r*rowBytes : (r+1)*rowBytes]
		decodeF32HAVX512(&row[0], 1, &src[0], chunks, rowBytes)
		patchF32HRow(row, src)
		dotF32AVX512(&out[r], 1, &row[0], cols/32, 4*cols, &act[0])
		f32hScratchPool.Put(p)
		r++
	}
}

// expandF32HAVX512 writes the F32 form of rows F32H rows of w to dst.
func expandF32HAVX512(dst, w []byte, rowBytes, cols, rows int) {
	_ = w[rows*rowBytes-1]
	_ = dst[rows*4*cols-1]
	decodeF32HAVX512(&dst[0], rows, &w[0], cols/f32hCols, rowBytes)
	for r := 0; r < rows; r++ {
		if w[r*rowBytes+16] != 0 {
			patchF32HRow(dst[r*4*cols:(r+1)*4*cols], w[r*rowBytes:(r+1)*rowBytes])
		}
	}
}
