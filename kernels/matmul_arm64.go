//go:build arm64 && !purego

package kernels

import "github.com/qsf-llm/qsf/quant"

// tileFor returns the tile kernel of tier tr for traits tt, or nil when
// it has none. Only the neon-dotprod tier has tiles: they keep the
// weights of a block (and their unpacked nibbles) in registers while four
// activations pass over them, which leaves no room for the plain-NEON
// integer dot product's scratch registers. Each (row, activation) gets
// exactly the arithmetic of the tier's one-activation kernel.
func tileFor(tr *Tier, tt *quant.Traits) *tileKernel {
	if tr != neonDotTier {
		return nil
	}
	switch tt {
	case q4_0x8Traits:
		return &tileQ4_0x8SDOT
	case q8_0x4Traits:
		return &tileQ8_0x4SDOT
	}
	switch tt.Type {
	case quant.Q4_K:
		return &tileQ4_KSDOT
	case quant.Q6_K:
		return &tileQ6_KSDOT
	}
	return nil
}

var (
	tileQ4_0x8SDOT = tileKernel{
		run:       q4_0x8x4SDOT,
		rowStep:   8,
		packBytes: packBytesQ4_0x8x4,
		pack:      packQ4_0x8x4,
	}
	tileQ8_0x4SDOT = tileKernel{
		run:       q8_0x4x4SDOT,
		rowStep:   4,
		packBytes: packBytesQ4_0x8x4,
		pack:      packQ4_0x8x4,
	}
	tileQ4_KSDOT = tileKernel{
		run:       q4_Kx4SDOT,
		rowStep:   1,
		packBytes: packBytesQ8_Kx4,
		pack:      packQ8_Kx4,
	}
	tileQ6_KSDOT = tileKernel{
		run:       q6_Kx4SDOT,
		rowStep:   1,
		packBytes: packBytesQ8_Kx4,
		pack:      packQ8_Kx4,
	}
)

// The tile kernels compute out[t*ostride+r] for t in [0, tileTokens) (or
// the two activations from t0 on) and r in [0, rows), the rows in groups
// of 8 (Q4_0x8) or 4 (Q8_0x4), w holding nb blocks per row; packed is
// packQ4_0x8x4's form of the activations. ostride is in elements.

//go:noescape
func dotQ4_0x8x4SDOT(out *float32, ostride, groups int, w *byte, nb int, packed *byte)

//go:noescape
func dotQ8_0x4x2SDOT(out *float32, ostride, groups int, w *byte, nb int, packed *byte)

// tileChecks checks the lengths the tile kernels rely on.
func tileChecks(out []float32, ostride int, w []byte, rowBytes, rows int, packed []byte, packBytes int) {
	_ = out[(tileTokens-1)*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytes-1]
}

func q4_0x8x4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8x4(cols))
	dotQ4_0x8x4SDOT(&out[0], ostride, rows/8, &w[0], cols/32, &packed[0])
}

// q8_0x4x4SDOT takes the activations two at a time: the accumulators of
// four rows and two activations fill the registers the weights leave.
func q8_0x4x4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8x4(cols))
	dotQ8_0x4x2SDOT(&out[0], ostride, rows/4, &w[0], cols/32, &packed[0])
	dotQ8_0x4x2SDOT(&out[2*ostride], ostride, rows/4, &w[0], cols/32, &packed[2*q4_0x8TokBlock])
}

// kTileScratch holds the float accumulators of a K-quant tile's four
// activations: three registers of four float32 each.
type kTileScratch [tileTokens * 12]float32

// The K-quant tile kernels: rows one at a time against packQ8_Kx4's form
// (Q4_K) or packQ6_Kx4's (Q6_K) of four activations.

//go:noescape
func dotQ4_Kx4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32)

func q4_Kx4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ8_Kx4(cols))
	var s kTileScratch
	dotQ4_Kx4SDOT(&out[0], ostride, rows, &w[0], cols/256, rowBytes, &packed[0], &s[0])
}

//go:noescape
func dotQ6_Kx4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32)

func q6_Kx4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ8_Kx4(cols))
	var s kTileScratch
	dotQ6_Kx4SDOT(&out[0], ostride, rows, &w[0], cols/256, rowBytes, &packed[0], &s[0])
}
