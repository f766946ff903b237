// Package kernels holds the matrix-vector kernels of QSF's forward pass: a
// row of quantized weights times an activation vector that has already been
// quantized to the weight type's vec-dot type (quant.Traits.VecDot).
//
// Kernels come in tiers. The generic tier is portable Go and calls the
// scalar reference quant.Traits.Dot for each row; the avx2 tier uses
// hand-written amd64 assembly for the types that matter most and falls back
// to the generic tier for the others. The tier is chosen once at init from
// the CPU's features (github.com/klauspost/cpuid/v2) and can be forced with
// the environment variable QSF_KERNEL=generic|avx2|avx512 or with SetTier.
//
// The avx512 tier (AVX-512 VNNI kernels for Q8_0 and Q4_0, AVX2 for the
// rest) is experimental: it was written on a CPU without AVX-512 and has not
// been run, so it is only used when asked for by name. The tests exercise
// every tier the CPU supports, so `go test ./kernels/` on an AVX-512 machine
// checks it.
//
// Assembly is built under the tag set `amd64 && !purego`; building with
// -tags purego, or for another architecture, leaves only the generic tier.
//
// A Pool spreads the rows of one MatVec, or any [0,n) range, over a fixed
// set of persistent worker goroutines that spin briefly and then park, so
// that a forward pass pays neither a goroutine start nor an allocation per
// matrix.
package kernels
