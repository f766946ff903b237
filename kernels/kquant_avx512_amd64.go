//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"

	"github.com/qsf-llm/qsf/quant"
)

// The avx512 tier's Q4_K and Q6_K kernels (kquant_avx512_amd64.s): per
// (row, activation) the arithmetic of the AVX2 kernels, two rows or two
// activations per zmm.

//go:noescape
func dotQ4_KRows2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, act *byte, ahead int)

// q4_KAVX512 runs whole pairs of rows through dotQ4_KRows2AVX512 and a
// last odd row through the AVX2 one-row kernel; both compute a row alike,
// bit for bit.
func q4_KAVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	nb := cols / 256
	_ = w[len(out)*rowBytes-1]
	_ = act[nb*q8KBlock-1]
	pairs := len(out) / 2
	if pairs > 0 {
		dotQ4_KRows2AVX512(&out[0], pairs, &w[0], nb, rowBytes, &act[0], prefetchAhead(2*rowBytes))
	}
	if r := 2 * pairs; r < len(out) {
		dotQ4_KAVX2(&out[r], len(out)-r, &w[r*rowBytes], nb, &act[0])
	}
}

//go:noescape
func dotQ6_KRows2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, act, aux *byte, ahead int)

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
		dotQ6_KRows2AVX512(&out[0], pairs, &w[0], nb, rowBytes, &act[0], &aux[0], prefetchAhead(2*rowBytes))
	}
	if r := 2 * pairs; r < len(out) {
		dotQ6_KAVX2(&out[r], len(out)-r, &w[r*rowBytes], nb, &act[0], &aux[0])
	}
}

// q6zPair is the size of one block of a pair of Q8_K activations packed
// by packQ6_KZ: eight chunks of 128 bytes and the pair's da.
const q6zPair = 8*128 + 64

func packBytesQ6_KT8Z(cols int) int { return cols / 256 * 4 * q6zPair }

// packQ6_KT8Z packs eight Q8_K activations for dotQ6_KT8AVX512 (see
// packQ6_KZ).
func packQ6_KT8Z(dst, acts []byte, actBytes, cols int) { packQ6_KZ(dst, acts, actBytes, cols, 4) }

// packQ6_KZ packs 2·pairs Q8_K activations for the Q6_K tile in pairs p
// (activations 2p, 2p+1), P = pairs: per block (P·1088 bytes), chunk c
// (quants 32c..32c+31) of pair p at 1024p+128c: the 32 quants of both
// activations, then 32·(a[2i]+a[2i+1]) for their 16 pairs as int16
// (prepQ6_K's offsets) of both; the pair's da as [da0 ×8, da1 ×8] at
// 1024P+64p.
func packQ6_KZ(dst, acts []byte, actBytes, cols, pairs int) {
	nb := cols / 256
	size := pairs * q6zPair
	var off [pairAuxBlock]byte
	for t := 0; t < 2*pairs; t++ {
		p, h := t/2, t%2
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			blk := act[b*q8KBlock : (b+1)*q8KBlock]
			prepPairs(off[:0], blk, 256, 32)
			o := dst[b*size : (b+1)*size]
			for c := 0; c < 8; c++ {
				copy(o[1024*p+128*c+32*h:][:32], blk[4+32*c:])
				copy(o[1024*p+128*c+64+32*h:][:32], off[32*c:])
			}
			da := binary.LittleEndian.Uint32(blk)
			for l := 0; l < 8; l++ {
				binary.LittleEndian.PutUint32(o[1024*pairs+64*p+32*h+4*l:], da)
			}
		}
	}
}

//go:noescape
func dotQ6_KT8AVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

// q6_KT8AVX512 is the avx512 tier's Q6_K tile kernel of eight
// activations; a group of four left over goes through the AVX2 tile.
func q6_KT8AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[7*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ6_KT8Z(cols)-1]
	dotQ6_KT8AVX512(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

var tileQ6_KT8AVX512 = tileKernel{
	run:       q6_KT8AVX512,
	rowStep:   1,
	tokens:    8,
	rest:      &tileQ6_K,
	packBytes: packBytesQ6_KT8Z,
	pack:      packQ6_KT8Z,
}

// decodeAhead is how far ahead of the rows they multiply the avx512
// decode kernels prefetch the weights they walk. A decode step streams
// every matrix from memory once; with the 1 KiB of the AVX2 kernels (or
// the next pair of rows, under 1 KiB for 768 columns) the faster 512-bit
// kernels waited on memory: decode of the 12L-768 files at 1 thread used
// 15-25% less CPU time at 8 KiB than at 1 KiB (16 KiB about the same).
const decodeAhead = 8 << 10

// prefetchAhead returns the prefetch distance of a decode kernel that
// walks groups of step bytes: decodeAhead rounded up to whole groups.
func prefetchAhead(step int) int {
	return (decodeAhead + step - 1) / step * step
}

//go:noescape
func quantQ8_KAVX512(dst *byte, src *float32, nb int) int

// quantQ8_K512 is the avx512 tier's Q8_K activation quantizer
// (quantize_avx512_amd64.s): package quant's, bit for bit; the blocks the
// assembly leaves (infinities, NaNs, subnormal maxima) go through package
// quant's.
func quantQ8_K512(dst []byte, src []float32) {
	nb := len(src) / 256
	if nb == 0 {
		return
	}
	_ = dst[nb*q8KBlock-1]
	for b := 0; b < nb; {
		b += quantQ8_KAVX512(&dst[b*q8KBlock], &src[256*b], nb-b)
		if b < nb {
			q8KTraits.Quantize(dst[b*q8KBlock:(b+1)*q8KBlock], src[256*b:256*(b+1)])
			b++
		}
	}
}

// q8KTraits is package quant's Q8_K row.
var q8KTraits = func() *quant.Traits {
	tr, err := quant.Lookup(quant.Q8_K)
	if err != nil {
		panic(err)
	}
	return tr
}()
