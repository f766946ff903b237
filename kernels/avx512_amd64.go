//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"

	"github.com/klauspost/cpuid/v2"

	"github.com/qsf-llm/qsf/quant"
)

// avx512Tier holds the AVX-512 (F, BW, VL, VNNI) kernels: the AVX2 table,
// every kernel inherited, with 512-bit kernels in place of some: VNNI
// kernels for the repacked Q4_0x8 and Q8_0x4 matrices (decode and the
// four-token tiles), which compute the AVX2 kernels' integer sums with
// VPDPBUSD (exact: no saturation is reachable), and tiles for F32, F16
// and Q4_K, and (with VBMI) QSF's rotated types, a whole block per zmm.
// Each keeps the AVX2 kernel's float order, two of its 8-lane
// accumulators (two groups of rows, two rows, two of ggml's accumulators,
// two activations or two halves of a block) per zmm, so the results are
// generic's bit for bit.
var avx512Tier = &Tier{name: "avx512"}

// haveAVX512 records, once, whether the CPU can run the avx512 tier.
var haveAVX512 = haveAVX2 && cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VNNI)

// initAVX512Tier fills in the avx512 table: the avx2 one (filled in
// first), with these rows in place.
func initAVX512Tier() {
	avx512Tier.inherit(avx2Tier)
	avx512Tier.register([]kernelRow{
		{key: Q4_0x8, rows: q4_0x8AVX512, prep: prepQ4_0x8, tile: &tileQ4_0x8AVX512[8]},
		{key: Q4_0x16, rows: q4_0x16AVX512(haveGFNI), prep: prepQ4_0x8, tile: &tileQ4_0x16AVX512[8]},
		{key: Q8_0x4, rows: q8_0x4RowsAVX512, prep: prepQ4_0x8, tile: &tileQ8_0x4AVX512},
		{key: quant.Q4_K, rows: q4_KAVX512, tile: &tileQ4_KT8AVX512},
		{key: quant.Q6_K, rows: q6_KAVX512, prep: prepQ6_K, tile: &tileQ6_KT8AVX512},
		{key: quant.F32, rows: f32AVX512, tile: &tileF32T8AVX512},
		{key: quant.F16, tile: &tileF16AVX512},
		{key: q4_0Gemv, tile: &tileQ4_0GemvAVX512},
	})
	avx512Tier.quantQ8_K = quantQ8_K512
	tileF32T8AVX512.tileBytes = f32T8TileBytes(cpuid.CPU.Cache.L2)
	initTernaryAVX512()
	initOwnAVX512()
	initF32HAVX512()
}

// f32T8TileBytes returns the size of the row tiles of the F32 tile of
// eight activations for a core with l2 bytes of L2 cache (-1 or 0 if
// unknown): 3/8 of it, from 128 KiB (MatMul's default) up to 384 KiB. The
// tile stays in L2 while the packed activations of every group of eight
// pass over it; each pass brings the group's activations (8·4·cols
// bytes, from L3 once a prompt's no longer fit in L2) back to the core,
// so a larger tile reads them fewer times per matrix. On Zen 5 (1 MiB of
// L2) 384 KiB took about 4% less CPU time than 128 KiB for a 128-token
// prefill of 12L-768 F32, and 5-10% less in MatMuls of 768 columns × 128
// tokens, 2048 × 128 and 768 × 512.
func f32T8TileBytes(l2 int) int {
	return min(max(3*l2/8, tileBytes), 3*tileBytes)
}

var (
	tileQ4_KAVX512 = tileKernel{
		run:       q4_KT4AVX512,
		rowStep:   1,
		packBytes: packBytesQ8_KT4Z,
		pack:      packQ8_KT4Z,
	}
	tileQ4_KT8AVX512 = tileKernel{
		run:       q4_KT8AVX512,
		rowStep:   1,
		tokens:    8,
		rest:      &tileQ4_KAVX512,
		packBytes: packBytesQ8_KT8Z,
		pack:      packQ8_KT8Z,
	}
	tileF32T8AVX512 = tileKernel{
		run:       f32T8AVX512,
		runAhead:  f32T8AheadAVX512,
		rowStep:   1,
		rowBlock:  3,
		tokens:    8,
		rest:      &tileF32AVX512,
		packBytes: packBytesF32T8,
		pack:      packF32T8,
		asIs:      packF32AsIs,
	}
	tileF32AVX512 = tileKernel{
		run:       f32T4AVX512,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packF32T4,
		asIs:      packF32AsIs,
	}
	tileF16AVX512 = tileKernel{
		run:       f16T4AVX512,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packF16T4,
	}
	tileQ8_0x4AVX512 = tileKernel{
		run:       q8_0x4T4AVX512,
		rowStep:   4,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8TZ,
	}
)

// q4_0x8AVX512 is the tier's Q4_0x8 decode kernel (generated:
// q40x8_avx512_amd64.s), a group of 8 rows at a time, two blocks per zmm;
// aux is the activation prepared by prepQ4_0x8. The tiles take the groups
// two at a time (lanes 0..7 of a zmm the first group, 8..15 the second).
func q4_0x8AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 32
	_ = w[len(out)*rowBytes-1]
	_ = aux[nb*q4_0x8TokBlock-1]
	dotQ4_0x8AVX512(&out[0], len(out)/8, &w[0], nb, &aux[0], decodeAhead)
}

// packQ4_0x8TZ packs the Q8_0 activations in acts (n of them, n =
// len(acts)/actBytes) for the avx512 tiles of Q8_0x4 and the Q4_0 gemv
// order (and, the biases negated, of Q4_0x8): activation t's prepQ4_0x8
// form (made in assembly) at t·nb·40, nb the blocks of a row.
// packQ4_0x8T4 interleaves the same blocks, in Go.
func packQ4_0x8TZ(dst, acts []byte, actBytes, cols int) {
	nb := cols / 32
	for t := 0; t < len(acts)/actBytes; t++ {
		prepQ4_0x8Rows(dst[t*nb*q4_0x8TokBlock:(t+1)*nb*q4_0x8TokBlock], acts[t*actBytes:(t+1)*actBytes], nb)
	}
}

// packQ4_0x8TN packs the Q8_0 activations in acts (n of them, n =
// len(acts)/actBytes) for the avx512 Q4_0x8 tiles: packQ4_0x8TZ's form
// with each block's bias negated (−8·Σa at byte 36), which the kernels
// start their integer sums at.
func packQ4_0x8TN(dst, acts []byte, actBytes, cols int) {
	n := len(acts) / actBytes
	packQ4_0x8TZ(dst, acts, actBytes, cols)
	for o := 36; o < n*cols/32*q4_0x8TokBlock; o += q4_0x8TokBlock {
		binary.LittleEndian.PutUint32(dst[o:], -binary.LittleEndian.Uint32(dst[o:]))
	}
}

// tileQ4_0x8AVX512[n] (n = 2..8) is the avx512 tier's Q4_0x8 tile of n
// activations (dotQ4_0x8T<n>AVX512, generated: q40x8_avx512_amd64.s),
// whose rest is the tile of n−1: MatMul takes 8 at a time, then one
// narrower tile for the activations left over, so that no count from 2
// to 8 and few beyond go one activation at a time. Each unpacks a
// block's nibbles once for its n activations; the kernels take the
// groups of 8 rows two at a time, a last odd one alone. With GFNI they
// unpack the high nibbles by GF2P8AFFINEQB (the *GFNI kernels, 2-3% less
// CPU at n=4 and 8 on Zen 5).
var tileQ4_0x8AVX512 = q4_0x8TilesAVX512(haveGFNI)

// q4_0x8TilesAVX512 returns the avx512 Q4_0x8 tiles of widths 2..8, the
// GFNI kernels if gfni.
func q4_0x8TilesAVX512(gfni bool) [9]tileKernel {
	dots := [9]func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int){
		2: dotQ4_0x8T2AVX512, 3: dotQ4_0x8T3AVX512, 4: dotQ4_0x8T4AVX512, 5: dotQ4_0x8T5AVX512,
		6: dotQ4_0x8T6AVX512, 7: dotQ4_0x8T7AVX512, 8: dotQ4_0x8T8AVX512,
	}
	if gfni {
		dots = [9]func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int){
			2: dotQ4_0x8T2AVX512GFNI, 3: dotQ4_0x8T3AVX512GFNI, 4: dotQ4_0x8T4AVX512GFNI, 5: dotQ4_0x8T5AVX512GFNI,
			6: dotQ4_0x8T6AVX512GFNI, 7: dotQ4_0x8T7AVX512GFNI, 8: dotQ4_0x8T8AVX512GFNI,
		}
	}
	return q4_0TilesAVX512(dots, 8)
}

// q4_0x16AVX512 returns the avx512 tier's Q4_0x16 decode kernel
// (dotQ4_0x16AVX512, generated: q40x8_avx512_amd64.s), a group of 16 rows
// per zmm, one block a step, the GFNI one if gfni; aux is the activation
// prepared by prepQ4_0x8.
func q4_0x16AVX512(gfni bool) rowsFunc {
	dot := dotQ4_0x16AVX512
	if gfni {
		dot = dotQ4_0x16AVX512GFNI
	}
	return func(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
		if len(out) < 16 {
			return
		}
		nb := cols / 32
		_ = w[len(out)*rowBytes-1]
		_ = aux[nb*q4_0x8TokBlock-1]
		dot(&out[0], len(out)/16, &w[0], nb, &aux[0], decodeAhead)
	}
}

// tileQ4_0x16AVX512[n] (n = 2..8) is the avx512 tier's Q4_0x16 tile of n
// activations (dotQ4_0x16T<n>AVX512), whose rest is the tile of n−1, as
// tileQ4_0x8AVX512's: a group of 16 rows per zmm, one stream of weights.
var tileQ4_0x16AVX512 = q4_0x16TilesAVX512(haveGFNI)

// q4_0x16TilesAVX512 returns the avx512 Q4_0x16 tiles of widths 2..8, the
// GFNI kernels if gfni.
func q4_0x16TilesAVX512(gfni bool) [9]tileKernel {
	dots := [9]func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int){
		2: dotQ4_0x16T2AVX512, 3: dotQ4_0x16T3AVX512, 4: dotQ4_0x16T4AVX512, 5: dotQ4_0x16T5AVX512,
		6: dotQ4_0x16T6AVX512, 7: dotQ4_0x16T7AVX512, 8: dotQ4_0x16T8AVX512,
	}
	if gfni {
		dots = [9]func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int){
			2: dotQ4_0x16T2AVX512GFNI, 3: dotQ4_0x16T3AVX512GFNI, 4: dotQ4_0x16T4AVX512GFNI, 5: dotQ4_0x16T5AVX512GFNI,
			6: dotQ4_0x16T6AVX512GFNI, 7: dotQ4_0x16T7AVX512GFNI, 8: dotQ4_0x16T8AVX512GFNI,
		}
	}
	return q4_0TilesAVX512(dots, 16)
}

// q4_0TilesAVX512 builds the chain of tiles of widths 2..8 from their
// kernels dots[n], which take groups of rows rows (8 for Q4_0x8, 16 for
// Q4_0x16) and the activations packed by packQ4_0x8TN. Row tiles are cut
// to multiples of 16 rows either way (Q4_0x8's kernels take its groups
// two at a time).
func q4_0TilesAVX512(dots [9]func(out *float32, ostride, groups int, w *byte, nb int, packed *byte, ahead int), rows int) (k [9]tileKernel) {
	group := rows
	for n := 2; n <= 8; n++ {
		dot := dots[n]
		k[n] = tileKernel{
			run: func(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
				_ = out[(n-1)*ostride+rows-1]
				_ = w[rows*rowBytes-1]
				nb := cols / 32
				_ = packed[n*nb*q4_0x8TokBlock-1]
				if groups := rows / group; groups > 0 {
					dot(&out[0], ostride, groups, &w[0], nb, &packed[0], tileAhead)
				}
			},
			rowStep:   group,
			rowBlock:  16,
			tokens:    n,
			packBytes: func(cols int) int { return cols / 32 * n * q4_0x8TokBlock },
			pack:      packQ4_0x8TN,
		}
		if n > 2 {
			k[n].rest = &k[n-1]
		}
	}
	return k
}

//go:noescape
func dotQ8_0x4RowsAVX512(out *float32, groups int, w *byte, nb int, aux *byte, ahead int)

// q8_0x4RowsAVX512 is the tier's Q8_0x4 kernel; aux is the activation
// prepared by prepQ4_0x8.
func q8_0x4RowsAVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 32
	_ = w[len(out)*rowBytes-1]
	_ = aux[nb*q4_0x8TokBlock-1]
	dotQ8_0x4RowsAVX512(&out[0], len(out)/4, &w[0], nb, &aux[0], prefetchAhead(64))
}

//go:noescape
func dotQ8_0x4T4AVX512(out *float32, ostride, groups int, w *byte, nb int, packed *byte)

func q8_0x4T4AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ4_0x8T4(cols)-1]
	dotQ8_0x4T4AVX512(&out[0], ostride, rows/4, &w[0], cols/32, &packed[0])
}

// The float block kernels (avx512_amd64.s): those of the avx2 tile
// kernels (matmul_amd64.go) in two zmm passes instead of four ymm ones,
// with the same sums and the same scratch layout.

//go:noescape
func dotF32R3T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotF32R2T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotF16R3T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotF16R2T4AVX512(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

// f32T4AVX512 is the avx512 tier's F32 tile kernel: f32T4AVX2 on the
// AVX-512 block kernels.
func f32T4AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	f32T4(true, out, ostride, w, rowBytes, cols, rows, packed)
}

// f16T4AVX512 is the avx512 tier's F16 tile kernel: f16T4AVX2 on the
// AVX-512 block kernels.
func f16T4AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	halfT4AVX2(true, kindF16, out, ostride, w, rowBytes, cols, rows, packed)
}

// q8KzPair is the size of one block of a pair of Q8_K activations packed
// by packQ8_KZ.
const q8KzPair = 672

func packBytesQ8_KT4Z(cols int) int { return cols / 256 * 2 * q8KzPair }

// packQ8_KT4Z packs tileTokens Q8_K activations for dotQ4_KT4AVX512 (see
// packQ8_KZ).
func packQ8_KT4Z(dst, acts []byte, actBytes, cols int) { packQ8_KZ(dst, acts, actBytes, cols, 2) }

// packQ8_KZ packs 2·pairs Q8_K activations in pairs p (activations 2p,
// 2p+1), P = pairs: per block (P·672 bytes), sub-block s (32 quants) of
// both at 512p+64s, the pair's da as [da0 ×8, da1 ×8] at 512P+64p and
// [da0 ×4, da1 ×4] at 576P+32p, bsums 0..7 of both at 608P+64p and
// bsums 8..15 of both 32 bytes on.
func packQ8_KZ(dst, acts []byte, actBytes, cols, pairs int) {
	nb := cols / 256
	size := pairs * q8KzPair
	for t := 0; t < 2*pairs; t++ {
		p, h := t/2, t%2
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			blk := act[b*q8KBlock : (b+1)*q8KBlock]
			o := dst[b*size : (b+1)*size]
			for s := 0; s < 8; s++ {
				copy(o[512*p+64*s+32*h:][:32], blk[4+32*s:])
			}
			da := binary.LittleEndian.Uint32(blk)
			for l := 0; l < 8; l++ {
				binary.LittleEndian.PutUint32(o[512*pairs+64*p+32*h+4*l:], da)
			}
			for l := 0; l < 4; l++ {
				binary.LittleEndian.PutUint32(o[576*pairs+32*p+16*h+4*l:], da)
			}
			copy(o[608*pairs+64*p+16*h:][:16], blk[260:276])
			copy(o[608*pairs+64*p+32+16*h:][:16], blk[276:292])
		}
	}
}

//go:noescape
func dotQ4_KT4AVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

// q4_KT4AVX512 is the avx512 tier's Q4_K tile kernel.
func q4_KT4AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ8_KT4Z(cols)-1]
	dotQ4_KT4AVX512(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

// q4_KT8AVX512 is the avx512 tier's Q4_K tile kernel of eight
// activations (kquant_avx512_amd64.s).
func q4_KT8AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[7*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ8_KT8Z(cols)-1]
	dotQ4_KT8AVX512(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotQ4_0GemvT4AVX512(out *float32, ostride, pairs int, w *byte, nb, rowBytes int, packed *byte, index *int32)

var tileQ4_0GemvAVX512 = tileKernel{
	run:       q4_0GemvT4AVX512,
	rowStep:   8,
	rowBlock:  16, // groups of 8 rows go two at a time; an odd one through the AVX2 tile
	packBytes: packBytesQ4_0GemvT4Z,
	pack:      packQ4_0GemvT4Z,
}

// packBytesQ4_0GemvT4Z is the size of packQ4_0GemvT4Z's form: that of
// packQ4_0x8TZ, then that of packQ4_0GemvT4.
func packBytesQ4_0GemvT4Z(cols int) int { return packBytesQ4_0x8T4(cols) + packBytesQ4_0GemvT4(cols) }

// packQ4_0GemvT4Z packs tileTokens Q8_0 activations for q4_0GemvT4AVX512:
// in packQ4_0x8TZ's form for the pairs of groups of 8 rows, then in
// packQ4_0GemvT4's for a last odd group (the AVX2 tile's).
func packQ4_0GemvT4Z(dst, acts []byte, actBytes, cols int) {
	n := packBytesQ4_0x8T4(cols)
	packQ4_0x8TZ(dst[:n], acts, actBytes, cols)
	packQ4_0GemvT4(dst[n:], acts, actBytes, cols)
}

// q4_0GemvT4AVX512 is the avx512 tier's tile for Q4_0 matrices in the
// file's layout computed in the gemv order (q4_0Gemv; see
// q4_0g_avx512_amd64.s), on activations packed by packQ4_0GemvT4Z. A last
// odd group of 8 rows goes through the AVX2 tile, whose arithmetic is
// the same.
func q4_0GemvT4AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	n := packBytesQ4_0x8T4(cols)
	_ = packed[packBytesQ4_0GemvT4Z(cols)-1]
	r := 0
	if pairs := rows / 16; pairs > 0 && cols >= 32 && 16*rowBytes <= math.MaxInt32 {
		var index [16]int32
		for i := range index {
			index[i] = int32(i * rowBytes)
		}
		dotQ4_0GemvT4AVX512(&out[0], ostride, pairs, &w[0], cols/32, rowBytes, &packed[0], &index[0])
		r = 16 * pairs
	}
	if r < rows {
		q4_0GemvT4AVX2(out[r:], ostride, w[r*rowBytes:], rowBytes, cols, rows-r, packed[n:])
	}
}
