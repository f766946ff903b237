//go:build amd64 && !purego

package kernels

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/qsf-llm/qsf/quant"
)

// avx2Tier holds the AVX2+FMA+F16C kernels.
var avx2Tier = &Tier{name: "avx2"}

// initAVX2Tier fills in the AVX2 kernel table: the generic one, with
// these rows in place.
func initAVX2Tier() {
	avx2Tier.inherit(genericTier)
	avx2Tier.register([]kernelRow{
		{key: quant.Q8_0, rows: q8_0AVX2, prep: prepQ8_0, tile: &tileQ8_0},
		{key: quant.Q4_0, rows: q4_0AVX2, prep: prepQ4_0},
		{key: q4_0Gemv, rows: q4_0GemvAVX2, prep: prepQ4_0, tile: &tileQ4_0Gemv},
		{key: Q4_0x8, rows: q4_0x8AVX2, prep: prepQ4_0x8, tile: &tileQ4_0x8},
		{key: Q8_0x4, rows: q8_0x4RowsAVX2, prep: prepQ4_0x8, tile: &tileQ8_0x4},
		{key: quant.IQ4_NL, rows: iq4nlAVX2, prep: prepQ8_0},
		{key: quant.Q5_0, rows: q5_0AVX2, prep: prepQ8_0},
		{key: quant.Q4_1, rows: q4_1AVX2, prep: prepQ8_1},
		{key: quant.Q5_1, rows: q5_1AVX2, prep: prepQ8_1},
		{key: quant.Q2_K, rows: q2_KAVX2},
		{key: quant.Q3_K, rows: q3_KAVX2, prep: prepQ3_K},
		{key: quant.Q4_K, rows: q4_KAVX2, tile: &tileQ4_K},
		{key: quant.Q5_K, rows: q5_KAVX2},
		{key: quant.Q6_K, rows: q6_KAVX2, prep: prepQ6_K, tile: &tileQ6_K},
		{key: quant.TQ1_0, rows: tq1_0AVX2},
		{key: quant.TQ2_0, rows: tq2_0AVX2, tile: &tileTQ2_0AVX2},
		{key: quant.F32, rows: f32AVX2, tile: &tileF32},
		{key: quant.F16, rows: f16AVX2, tile: &tileF16},
		{key: quant.BF16, rows: bf16AVX2, prep: prepBF16, tile: &tileBF16},
	})
	avx2Tier.quantQ8_0 = quantQ8_0
	initOwnAVX2()
}

// registerArch fills in the assembly tiers and adds those this CPU supports
// to available, slowest first: avx512 comes last, so it is BestTier where
// the CPU has it (its own kernels measured faster than avx2's, the rest
// are avx2's).
func registerArch() {
	initAVX2Tier()
	initAVX512Tier()
	if hasAVX2() {
		available = append(available, avx2Tier)
	}
	if haveAVX512 {
		available = append(available, avx512Tier)
	}
}

// haveAVX2 records, once, whether the CPU has everything the avx2 tier
// and the float32 vector functions need.
var haveAVX2 = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C)

func hasAVX2() bool { return haveAVX2 }

// The assembly kernels compute out[r] for r in [0, rows): row r starts at
// w + r*rowBytes and holds nb blocks; act holds nb blocks.

// The Q8_0-activation kernels also take aux, the activation prepared by
// prepQ8_0.

//go:noescape
func dotQ4_0x8AVX2(out *float32, groups int, w *byte, nb int, aux *byte)

// q4_0x8AVX2 is the tier's Q4_0x8 kernel (q4_0x8_amd64.s); aux is the
// activation prepared by prepQ4_0x8.
func q4_0x8AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 32
	_ = w[len(out)*rowBytes-1]
	_ = aux[nb*q4_0x8TokBlock-1]
	dotQ4_0x8AVX2(&out[0], len(out)/8, &w[0], nb, &aux[0])
}

//go:noescape
func dotQ8_0x4RowsAVX2(out *float32, groups int, w *byte, nb int, aux *byte)

// q8_0x4RowsAVX2 is the tier's Q8_0x4 kernel (q8_0_amd64.s); aux is the
// activation prepared by prepQ4_0x8.
func q8_0x4RowsAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 32
	_ = w[len(out)*rowBytes-1]
	_ = aux[nb*q4_0x8TokBlock-1]
	dotQ8_0x4RowsAVX2(&out[0], len(out)/4, &w[0], nb, &aux[0])
}

//go:noescape
func dotQ8_0AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ4_0AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ8_0Rows4AVX2(out *float32, quads int, w *byte, nb, rowBytes int, act, aux *byte)

// q8_0AVX2 runs whole groups of four rows through dotQ8_0Rows4AVX2, which
// overlaps their FMA chains, and the rest through the one-row kernel; both
// compute a row alike, bit for bit.
func q8_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	quads := len(out) / 4
	if quads > 0 {
		dotQ8_0Rows4AVX2(&out[0], quads, &w[0], cols/32, rowBytes, &act[0], &aux[0])
	}
	if r := 4 * quads; r < len(out) {
		dotQ8_0AVX2(&out[r], len(out)-r, &w[r*rowBytes], cols/32, &act[0], &aux[0])
	}
}

func q4_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ4_0AVX2(&out[0], len(out), &w[0], cols/32, &act[0], &aux[0])
}

//go:noescape
func dotQ4_0GemvAVX2(out *float32, groups int, w *byte, nb, rowBytes int, act, aux *byte)

// q4_0GemvAVX2 is the tier's kernel for Q4_0 matrices of a multiple of 8
// rows, in ggml_gemv_q4_0_8x8_q8_0's order (see q4_0_gemv_amd64.s). The
// assembly takes whole groups of 8 rows; rows past the last whole group,
// which Pool and MatMul never hand out for such matrices, go through the
// scalar reference of the same order.
func q4_0GemvAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	groups := len(out) / 8
	if groups > 0 {
		dotQ4_0GemvAVX2(&out[0], groups, &w[0], cols/32, rowBytes, &act[0], &aux[0])
	}
	for r := 8 * groups; r < len(out); r++ {
		out[r] = quant.DotQ4_0Gemv(cols, w[r*rowBytes:(r+1)*rowBytes], act)
	}
}

//go:noescape
func dotQ4_KAVX2(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ4_KRows2AVX2(out *float32, pairs int, w *byte, nb, rowBytes int, act *byte)

// q4_KAVX2 runs whole pairs of rows through dotQ4_KRows2AVX2, which
// overlaps their blocks, and a last odd row through the one-row kernel;
// both compute a row alike, bit for bit.
func q4_KAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	pairs := len(out) / 2
	if pairs > 0 {
		dotQ4_KRows2AVX2(&out[0], pairs, &w[0], cols/256, rowBytes, &act[0])
	}
	if r := 2 * pairs; r < len(out) {
		dotQ4_KAVX2(&out[r], len(out)-r, &w[r*rowBytes], cols/256, &act[0])
	}
}

//go:noescape
func dotQ6_KAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ6_KRows2AVX2(out *float32, pairs int, w *byte, nb, rowBytes int, act, aux *byte)

// q6_KAVX2 runs whole pairs of rows through dotQ6_KRows2AVX2, which
// overlaps their blocks, and a last odd row through the one-row kernel;
// both compute a row alike, bit for bit.
func q6_KAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	pairs := len(out) / 2
	if pairs > 0 {
		dotQ6_KRows2AVX2(&out[0], pairs, &w[0], cols/256, rowBytes, &act[0], &aux[0])
	}
	if r := 2 * pairs; r < len(out) {
		dotQ6_KAVX2(&out[r], len(out)-r, &w[r*rowBytes], cols/256, &act[0], &aux[0])
	}
}

//go:noescape
func dotQ5_KAVX2(out *float32, rows int, w *byte, nb int, act *byte)

func q5_KAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ5_KAVX2(&out[0], len(out), &w[0], cols/256, &act[0])
}

//go:noescape
func dotIQ4NLAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ50AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ41AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

//go:noescape
func dotQ51AVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

func iq4nlAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotIQ4NLAVX2(&out[0], len(out), &w[0], cols/32, &act[0], &aux[0])
}

func q5_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ50AVX2(&out[0], len(out), &w[0], cols/32, &act[0], &aux[0])
}

func q4_1AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ41AVX2(&out[0], len(out), &w[0], cols/32, &act[0], &aux[0])
}

func q5_1AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ51AVX2(&out[0], len(out), &w[0], cols/32, &act[0], &aux[0])
}

//go:noescape
func dotQ2_KAVX2(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ3_KAVX2(out *float32, rows int, w *byte, nb int, act, aux *byte)

func q2_KAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ2_KAVX2(&out[0], len(out), &w[0], cols/256, &act[0])
}

func q3_KAVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ3_KAVX2(&out[0], len(out), &w[0], cols/256, &act[0], &aux[0])
}

//go:noescape
func quantQ8_0AVX2(dst *byte, src *float32, nb int)

// quantQ8_0 is the avx2 tier's Q8_0 activation quantizer
// (quantize_amd64.s); len(src) is a multiple of 32.
func quantQ8_0(dst []byte, src []float32) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[34*nb-1]
	quantQ8_0AVX2(&dst[0], &src[0], nb)
}

//go:noescape
func prepQ4_0x8AVX2(dst, act *byte, nb int)

// prepQ4_0x8Rows is prepQ4_0x8Generic in assembly when the CPU has AVX2.
func prepQ4_0x8Rows(buf, act []byte, nb int) {
	if nb == 0 {
		return
	}
	if !haveAVX2 {
		prepQ4_0x8Generic(buf, act, nb)
		return
	}
	_ = buf[nb*q4_0x8TokBlock-1]
	_ = act[34*nb-1]
	prepQ4_0x8AVX2(&buf[0], &act[0], nb)
}
