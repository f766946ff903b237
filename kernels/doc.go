// Package kernels holds the matrix-vector kernels of QSF's forward pass: a
// row of quantized weights times an activation vector that has already been
// quantized to the weight type's vec-dot type (quant.Traits.VecDot).
//
// Kernels come in tiers. The generic tier is portable Go: quant.Traits.Dot
// for each row, except for the repacked Q4_0x8 and Q8_0x4 matrices, Q4_K
// and Q6_K, which have kernels here in quant's arithmetic, bit for bit
// (those for Q4_0x8, Q4_K and Q6_K take the integer sums of quant's lanes
// with SWAR products: several 16-bit lanes per 64-bit multiplication, the
// activation's multipliers prepared once per matrix); the avx2 tier (AVX2, FMA,
// F16C) has hand-written amd64 assembly for every type: F32, F16, BF16,
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and Q2_K to Q6_K. Each assembly call
// computes a whole range of rows, and activation data that every row would
// recompute (converted scales, bias sums) is prepared once per matrix. The
// AVX2 kernels round exactly as the AVX2 vec_dot functions of ggml do (same
// lanes, same fused multiply-adds, same horizontal sums), which the tests
// check bit for bit against Go models of ggml's order; the generic tier
// follows package quant's reference order instead. One exception to both:
// a Q4_0 matrix of a multiple of 8 rows is multiplied in the order of
// ggml_gemv_q4_0_8x8_q8_0 (quant.DotQ4_0Gemv), as llama.cpp repacks such
// matrices, by every tier (the avx2 one eight rows at a time). The avx512
// tier (AVX-512 F, BW, VL, VNNI) is the avx2 tier with 512-bit kernels in
// place of some: VNNI kernels for the repacked Q4_0x8, Q4_0x16 (its own:
// RepackType names it only for this tier) and Q8_0x4 matrices
// (the same integer sums, by VPDPBUSD, exact) and prefill tiles for F32,
// F16 and Q4_K, each in the avx2 kernel's float order with two of its
// 8-lane accumulators in each zmm register; with VBMI it also has kernels
// for QSF's rotated types and for their repacked x8 layouts (QSF_Q2Rx8,
// QSF_Q3Rx8, QSF_Q4Rx8), in quant's order.
//
// SiluF32 and ExpSubF32 compute the exponentials of the SiLU activation
// and of the attention softmax as llama.cpp's ggml_v_expf does on AVX2,
// in assembly where the tier allows and in a Go model of it otherwise,
// with the same bits either way.
//
// The tier is chosen once at init from the CPU's features
// (github.com/klauspost/cpuid/v2) and can be forced with the environment
// variable QSF_KERNEL=generic|avx2|avx512 or with SetTier. Every tier this CPU
// and build can run is listed by Tiers, and every listed tier gives the
// generic tier's results bit for bit; the tests exercise each of them.
//
// Assembly is built under the tag set `amd64 && !purego`; building with
// -tags purego, or for another architecture, leaves only the generic tier.
//
// A Pool spreads the rows of one MatVec, or any [0,n) range, over a fixed
// set of persistent worker goroutines that spin briefly and then park, so
// that a forward pass pays neither a goroutine start nor an allocation per
// matrix. MatMul multiplies one matrix by several activations (a prompt's
// tokens) reading the weights from memory once. Repack rearranges a Q4_0,
// Q8_0, rotated (QSF_Q2R, QSF_Q3R, QSF_Q4R) or Q6_K matrix at load time
// into a layout with a faster kernel (Q4_0x8, Q8_0x4, QSF_Q2Rx8,
// QSF_Q3Rx8, QSF_Q4Rx8, Q6_KS), RepackTo into the one RepackType names for
// a tier (Q4_0x16 too), with the same results bit for bit;
// PackF32H stores an F32 matrix losslessly in 28 bits a weight (F32H) for
// the avx512 tier, whose decode reads it faster than F32 for reading less.
package kernels
