//go:build arm64 && !purego

package kernels

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/qsf-llm/qsf/quant"
)

// The arm64 tiers: neon (ARMv8 Advanced SIMD, which every arm64 CPU has)
// and neon-dotprod, the same kernels with their int8 dot products done by
// SDOT where the CPU has the dot-product extension (ARMv8.2 DotProd:
// Apple M1 on, Graviton 2 on, Cortex-A55/A76 on; not Cortex-A72, as in the
// Raspberry Pi 4). Both equal the generic tier bit for bit: the integer
// sums are exact in any order, and the float32 lanes are ggml's AVX2 lanes,
// two 4-lane registers for each 8-lane one, with FMLA (fused) exactly where
// the AVX2 code has an FMA. Types without a NEON kernel run the generic
// kernel.
var (
	neonTier    = &Tier{name: "neon"}
	neonDotTier = &Tier{name: "neon-dotprod"}
)

// haveDotProd records, once, whether the CPU has the dot-product
// extension. Advanced SIMD itself needs no test: every arm64 system Go
// runs on has it (Go's runtime uses it too).
var haveDotProd = cpuid.CPU.Supports(cpuid.ASIMDDP)

// neonKernels is one variant's set of assembly kernels.
type neonKernels struct {
	q8_0, q4_0, q4_0Gemv, q4_0x8, q8_0x4, q4_K, q6_K rowsFunc
	q5_0, q4_1, q5_1, iq4_NL, q2_K, q3_K, q5_K       rowsFunc
	tq1_0, tq2_0                                     rowsFunc
	q2R, q3R, q4R                                    rowsFunc
}

// initNEONTier fills in tr with the kernels of k and the shared ones,
// over the generic tier's table (types without a NEON kernel run the
// generic kernel).
func initNEONTier(tr *Tier, k neonKernels) {
	tr.inherit(genericTier)
	tr.register([]kernelRow{
		{key: quant.Q8_0, rows: k.q8_0, prep: prepQ4_0x8},
		{key: quant.Q4_0, rows: k.q4_0, prep: prepQ4_0x8},
		{key: q4_0Gemv, rows: k.q4_0Gemv, prep: prepQ4_0x8},
		{key: Q4_0x8, rows: k.q4_0x8, prep: prepQ4_0x8},
		{key: Q8_0x4, rows: k.q8_0x4, prep: prepQ4_0x8},
		{key: quant.Q4_K, rows: k.q4_K},
		{key: quant.Q6_K, rows: k.q6_K},
		{key: quant.Q5_K, rows: k.q5_K},
		{key: quant.Q2_K, rows: k.q2_K},
		{key: quant.Q3_K, rows: k.q3_K},
		{key: quant.TQ1_0, rows: k.tq1_0},
		{key: quant.TQ2_0, rows: k.tq2_0},
		{key: quant.QSF_Q2R, rows: k.q2R},
		{key: quant.QSF_Q3R, rows: k.q3R},
		{key: quant.QSF_Q4R, rows: k.q4R},
		{key: quant.Q5_0, rows: k.q5_0, prep: prepQ4_0x8},
		{key: quant.IQ4_NL, rows: k.iq4_NL, prep: prepQ4_0x8},
		{key: quant.Q4_1, rows: k.q4_1},
		{key: quant.Q5_1, rows: k.q5_1},
		{key: quant.F32, rows: f32NEON, tile: &tileF32NEON},
		{key: quant.F16, rows: f16NEON, tile: &tileF16NEON},
		{key: quant.BF16, rows: bf16NEON},
	})
	tr.quantQ8_0 = quantQ8_0NEONGo
	tr.quantQ8_1 = quantQ8_1NEONGo
	tr.quantQ8_K = quantQ8_KNEONGo
}

// registerArch fills in the neon tiers and adds those this CPU supports to
// available, slowest first.
func registerArch() {
	initNEONTier(neonTier, neonKernels{
		q8_0:     q8_0Rows(dotQ8_0NEON),
		q4_0:     q4_0Rows(dotQ4_0NEON),
		q4_0Gemv: q4_0GemvRows(dotQ4_0GemvNEON),
		q4_0x8:   q4_0x8Rows(dotQ4_0x8NEON),
		q8_0x4:   q8_0x4Rows(dotQ8_0x4NEON),
		q4_K:     kRows(dotQ4_KNEON),
		q6_K:     kRows(dotQ6_KNEON),
		q5_0:     q8_0Rows(dotQ5_0NEON),
		q4_1:     q8_1Rows(dotQ4_1NEON),
		q5_1:     q8_1Rows(dotQ5_1NEON),
		iq4_NL:   q8_0Rows(dotIQ4_NLNEON),
		q5_K:     kRows(dotQ5_KNEON),
		q2_K:     kRows(dotQ2_KNEON),
		q3_K:     kRows(dotQ3_KNEON),
		tq1_0:    kRows(dotTQ1_0NEON),
		tq2_0:    kRows(dotTQ2_0NEON),
		q2R:      rotRows(dotQ2RNEON),
		q3R:      rotRows(dotQ3RNEON),
		q4R:      rotRows(dotQ4RNEON),
	})
	initNEONTier(neonDotTier, neonKernels{
		q8_0:     q8_0Rows(dotQ8_0SDOT),
		q4_0:     q4_0Rows(dotQ4_0SDOT),
		q4_0Gemv: q4_0GemvRows(dotQ4_0GemvSDOT),
		q4_0x8:   q4_0x8Rows(dotQ4_0x8SDOT),
		q8_0x4:   q8_0x4Rows(dotQ8_0x4SDOT),
		q4_K:     kRows(dotQ4_KSDOT),
		q6_K:     kRows(dotQ6_KSDOT),
		q5_0:     q8_0Rows(dotQ5_0SDOT),
		q4_1:     q8_1Rows(dotQ4_1SDOT),
		q5_1:     q8_1Rows(dotQ5_1SDOT),
		iq4_NL:   q8_0Rows(dotIQ4_NLSDOT),
		q5_K:     kRows(dotQ5_KSDOT),
		q2_K:     kRows(dotQ2_KSDOT),
		q3_K:     kRows(dotQ3_KSDOT),
		tq1_0:    kRows(dotTQ1_0SDOT),
		tq2_0:    kRows(dotTQ2_0SDOT),
		q2R:      rotRows(dotQ2RSDOT),
		q3R:      rotRows(dotQ3RSDOT),
		q4R:      rotRows(dotQ4RSDOT),
	})
	// The quantized tiles are the neon-dotprod tier's: they keep the
	// weights of a block (and their unpacked nibbles) in registers while
	// the activations pass over them, which leaves no room for the
	// plain-NEON integer dot product's scratch registers. Each (row,
	// activation) gets exactly the arithmetic of the tier's
	// one-activation kernel.
	neonDotTier.register([]kernelRow{
		{key: Q4_0x8, tile: &tileQ4_0x8SDOT},
		{key: Q8_0x4, tile: &tileQ8_0x4SDOT},
		{key: q4_0Gemv, tile: &tileQ4_0GT4SDOT},
		{key: quant.Q8_0, tile: &tileQ8_0T4SDOT},
		{key: quant.Q4_0, tile: &tileQ4_0T4SDOT},
		{key: quant.Q4_K, tile: &tileQ4_KSDOT},
		{key: quant.Q6_K, tile: &tileQ6_KSDOT},
	})
	available = append(available, neonTier)
	if haveDotProd {
		available = append(available, neonDotTier)
	}
}

// prepQ4_0x8Rows is prepQ4_0x8Generic.
func prepQ4_0x8Rows(buf, act []byte, nb int) { prepQ4_0x8Generic(buf, act, nb) }

// The assembly kernels come in two variants, NEON (plain Advanced SIMD)
// and SDOT (with the dot-product extension), with the same arguments:
// out[r] for r in [0, rows) (or groups of 8 or 4 rows), row r at
// w + r*rowBytes holding nb blocks, aux the activation prepared by
// prepQ4_0x8 (per block its 32 quants, da as float32, 8·Σa as int32).
type rowsAsm func(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ8_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ8_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ4_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ4_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ4_0GemvNEON(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ4_0GemvSDOT(out *float32, rows int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ4_0x8NEON(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ4_0x8SDOT(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ8_0x4NEON(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)

//go:noescape
func dotQ8_0x4SDOT(out *float32, groups int, w *byte, nb, rowBytes int, aux *byte)

// checkRows checks the lengths the assembly relies on: len(out) rows of
// rowBytes in w, nb blocks of prepared activation in aux.
func checkRows(out []float32, w []byte, rowBytes, nb int, aux []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = aux[nb*q4_0x8TokBlock-1]
}

// q8_0Rows makes the tier's Q8_0 kernel (ggml_vec_dot_q8_0_q8_0's order)
// of an assembly variant.
func q8_0Rows(f rowsAsm) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		checkRows(out, w, rowBytes, cols/32, aux)
		f(&out[0], len(out), &w[0], cols/32, rowBytes, &aux[0])
	}
}

// q8_1Rows makes the tier's kernel of a type with Q8_1 activations (Q4_1,
// Q5_1), which the assembly reads as they are (36 bytes a block).
func q8_1Rows(f rowsAsm) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		nb := cols / 32
		_ = w[len(out)*rowBytes-1]
		_ = act[nb*36-1]
		f(&out[0], len(out), &w[0], nb, rowBytes, &act[0])
	}
}

// q4_0Rows makes the tier's Q4_0 kernel (ggml_vec_dot_q4_0_q8_0's order).
func q4_0Rows(f rowsAsm) rowsFunc { return q8_0Rows(f) }

// q4_0GemvRows makes the tier's kernel for Q4_0 matrices in the order of
// ggml_gemv_q4_0_8x8_q8_0 (quant.DotQ4_0Gemv), one row at a time.
func q4_0GemvRows(f rowsAsm) rowsFunc { return q8_0Rows(f) }

// q4_0x8Rows makes the tier's Q4_0x8 kernel: whole groups of 8 rows.
func q4_0x8Rows(f rowsAsm) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		checkRows(out, w, rowBytes, cols/32, aux)
		f(&out[0], len(out)/8, &w[0], cols/32, rowBytes, &aux[0])
	}
}

// q8_0x4Rows makes the tier's Q8_0x4 kernel: whole groups of 4 rows.
func q8_0x4Rows(f rowsAsm) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		checkRows(out, w, rowBytes, cols/32, aux)
		f(&out[0], len(out)/4, &w[0], cols/32, rowBytes, &aux[0])
	}
}

// The legacy_arm64.s kernels: Q5_0 and IQ4_NL take the prepQ4_0x8 form of
// their Q8_0 activation, Q4_1 and Q5_1 their Q8_1 activation itself.

//go:noescape
func dotQ5_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ5_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ4_1NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ4_1SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ5_1NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ5_1SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotIQ4_NLNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotIQ4_NLSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ4_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ4_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ2_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ2_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ3_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ3_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotTQ1_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotTQ1_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotTQ2_0NEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotTQ2_0SDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ5_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ5_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ6_KNEON(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

//go:noescape
func dotQ6_KSDOT(out *float32, rows int, w *byte, nb, rowBytes int, act *byte)

// kRows makes the tier's kernel of a K-quant type from an assembly variant
// that takes the Q8_K activation itself (nb blocks of 256).
func kRows(f rowsAsm) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		nb := cols / 256
		_ = w[len(out)*rowBytes-1]
		_ = act[nb*292-1]
		f(&out[0], len(out), &w[0], nb, rowBytes, &act[0])
	}
}

//go:noescape
func quantQ8_0NEON(dst *byte, src *float32, nb int)

//go:noescape
func quantQ8_1NEON(dst *byte, src *float32, nb int)

// quantQ8_0NEONGo is the neon tiers' Q8_0 activation quantizer;
// len(src) is a multiple of 32.
func quantQ8_0NEONGo(dst []byte, src []float32) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[34*nb-1]
	quantQ8_0NEON(&dst[0], &src[0], nb)
}

// quantQ8_1NEONGo is the neon tiers' Q8_1 activation quantizer.
func quantQ8_1NEONGo(dst []byte, src []float32) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[36*nb-1]
	quantQ8_1NEON(&dst[0], &src[0], nb)
}

//go:noescape
func quantQ8_KNEON(dst *byte, src *float32, nb int) (done int)

// quantQ8_KNEONGo is the neon tiers' Q8_K activation quantizer;
// len(src) is a multiple of 256. The blocks the assembly leaves (all
// zero, or with an infinity, a NaN or a magnitude so small that −127/mx
// overflows) go to package quant's quantizer one at a time.
func quantQ8_KNEONGo(dst []byte, src []float32) {
	nb := len(src) / 256
	if nb == 0 {
		return
	}
	_ = dst[292*nb-1]
	for b := 0; b < nb; {
		b += quantQ8_KNEON(&dst[292*b], &src[256*b], nb-b)
		if b < nb {
			tt, err := quant.Lookup(quant.Q8_K)
			if err != nil {
				panic(err) // unreachable: Q8_K is always in quant's table
			}
			tt.Quantize(dst[292*b:292*b+292], src[256*b:256*b+256])
			b++
		}
	}
}

// The qsfrot_arm64.s kernels of QSF's rotated types take their Q8_0
// activation as it is (nb blocks of 64 elements, two Q8_0 blocks each).

//go:noescape
func dotQ2RNEON(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ2RSDOT(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ3RNEON(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ3RSDOT(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ4RNEON(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotQ4RSDOT(out *float32, rows int, w *byte, nb int, act *byte)

// rotRows makes the tier's kernel of a rotated type from an assembly
// variant, which walks the rows' blocks one after the other.
func rotRows(f func(out *float32, rows int, w *byte, nb int, act *byte)) rowsFunc {
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) == 0 {
			return
		}
		_ = w[len(out)*rowBytes-1]
		_ = act[cols/64*68-1]
		f(&out[0], len(out), &w[0], cols/64, &act[0])
	}
}
