package kernels

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// Names: a type with x4 or x8 (Q8_0x4, Q4_0x8) is a repacked layout of
// groups of 4 or 8 rows; T4 and T8 name tile kernels and packings of 4
// or 8 tokens (activations), R2 and R3 blocks of 2 or 3 rows, Z the
// packings of the avx512 tiles (two activations per zmm).

// tileTokens is how many activations a tile kernel multiplies at once,
// unless it says otherwise (tileKernel.tokens).
const tileTokens = 4

// tileKernel computes a tile of k.width() activations × rows rows:
// out[t*ostride+r] = dot(row r, activation t) for t in [0, k.width()) and
// r in [0, rows), with exactly the arithmetic of the tier's one-activation
// kernel for each (row, activation). The activations come interleaved by
// the tile's pack function.
type tileKernel struct {
	// run computes the tile. rows is a multiple of rowStep.
	run func(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte)
	// runAhead, if not nil, is run that also prefetches ahead (the
	// weights of a later call: the next tile of rows, MatMul's calls on
	// a tile each taking a part) into the L2 cache on the way.
	runAhead func(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed, ahead []byte)
	// rowStep is the granularity of rows run accepts.
	rowStep int
	// tokens is how many activations run takes; 0 means tileTokens.
	tokens int
	// rowBlock, if not 0, is the number of rows run is fastest at in
	// multiples of (a multiple of rowStep): MatMul cuts its tiles of rows
	// to multiples of it, so that only the end of a range has rows left
	// over for the kernel's slower path.
	rowBlock int
	// tileBytes, if not 0, is the size of the row tiles MatMul walks
	// the weights in with this kernel, in place of the package's
	// tileBytes.
	tileBytes int
	// rest, if not nil, is the kernel for the activations left over
	// after the last whole tile of this one (fewer than tokens), in
	// tiles of its own width. MatMul takes the first kernel of the
	// chain rest, rest.rest, ... no wider than what is left, and for
	// fewer activations than tokens the first of the chain no wider
	// than them as the tile.
	rest *tileKernel
	// packBytes returns the size of the packed form of width()
	// activations of cols elements.
	packBytes func(cols int) int
	// asIs, if not nil, reports whether pack writes the activations of
	// cols elements as they lie back to back (F32 rows whose stride
	// needs no padding): MatMul then reads them in place.
	asIs func(cols int) bool
	// pack writes the packed form of the width() activations of
	// actBytes bytes each, back to back in acts, into dst.
	pack func(dst, acts []byte, actBytes, cols int)
	// expand, if not nil, writes the F32 form of rows rows of a
	// matrix (rowBytes bytes each) to dst: MatMul then decodes each
	// tile of rows once, into a buffer of 4·cols bytes a row, and runs
	// the kernel (run, runAhead, rest, and the tier's F32 rows kernel
	// for the activations left over) on that, as on an F32 matrix. The
	// tile is then tileBytes of the decoded rows.
	expand func(dst, w []byte, rowBytes, cols, rows int)
}

// width returns how many activations k multiplies at once.
func (k *tileKernel) width() int {
	if k.tokens == 0 {
		return tileTokens
	}
	return k.tokens
}

// q8T4Block is the size of one Q8_0 block of one activation in the packed
// form of packQ8_0T4: its 32 quants, then its scale as eight float32.
const q8T4Block = 64

func packBytesQ8_0T4(cols int) int { return cols / 32 * tileTokens * q8T4Block }

// packQ8_0T4 interleaves tileTokens Q8_0 activations block by block: block
// b of activation t is at (b·tileTokens+t)·q8T4Block.
func packQ8_0T4(dst, acts []byte, actBytes, cols int) {
	nb := cols / 32
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			a := act[34*b : 34*b+34]
			o := dst[(b*tileTokens+t)*q8T4Block:][:q8T4Block]
			copy(o, a[2:34])
			d := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32())
			for l := 0; l < 8; l++ {
				binary.LittleEndian.PutUint32(o[32+4*l:], d)
			}
		}
	}
}

// q4gT4Block is the size of one Q8_0 block of one activation in the packed
// form of packQ4_0GemvT4: quants 0..15 twice, quants 16..31 twice, the scale
// da as eight float32, 8·Σa as eight int32.
const q4gT4Block = 128

func packBytesQ4_0GemvT4(cols int) int { return cols / 32 * tileTokens * q4gT4Block }

// packQ4_0GemvT4 interleaves tileTokens Q8_0 activations block by block for
// the Q4_0 tile kernel of the gemv order: block b of activation t is at
// (b·tileTokens+t)·q4gT4Block.
func packQ4_0GemvT4(dst, acts []byte, actBytes, cols int) {
	nb := cols / 32
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			a := act[34*b : 34*b+34]
			o := dst[(b*tileTokens+t)*q4gT4Block:][:q4gT4Block]
			copy(o[0:16], a[2:18])
			copy(o[16:32], a[2:18])
			copy(o[32:48], a[18:34])
			copy(o[48:64], a[18:34])
			d := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32())
			sum := 0
			for _, q := range a[2:34] {
				sum += int(int8(q))
			}
			for l := 0; l < 8; l++ {
				binary.LittleEndian.PutUint32(o[64+4*l:], d)
				binary.LittleEndian.PutUint32(o[96+4*l:], uint32(int32(8*sum)))
			}
		}
	}
}

// q8KBlock is the size of a Q8_K block: float32 d, 256 int8 quants, 16
// int16 sums of 16 quants.
const q8KBlock = 292

func packBytesQ8_KT4(cols int) int { return cols / 256 * tileTokens * q8KBlock }

// packQ8_KT4 interleaves tileTokens Q8_K activations block by block: block
// b of activation t is at (b·tileTokens+t)·q8KBlock, as in the activation.
func packQ8_KT4(dst, acts []byte, actBytes, cols int) {
	nb := cols / 256
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			copy(dst[(b*tileTokens+t)*q8KBlock:][:q8KBlock], act[b*q8KBlock:])
		}
	}
}

// q6T4Block is the size of one Q8_K block of one activation in the packed
// form of packQ6_KT4: the block, then its prepared form for Q6_K
// (pairAuxBlock bytes).
const q6T4Block = q8KBlock + pairAuxBlock

func packBytesQ6_KT4(cols int) int { return cols / 256 * tileTokens * q6T4Block }

// packQ6_KT4 interleaves tileTokens Q8_K activations and their prepared
// forms for Q6_K block by block: block b of activation t is at
// (b·tileTokens+t)·q6T4Block.
func packQ6_KT4(dst, acts []byte, actBytes, cols int) {
	nb := cols / 256
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			o := dst[(b*tileTokens+t)*q6T4Block:][:q6T4Block]
			blk := act[b*q8KBlock : (b+1)*q8KBlock]
			copy(o, blk)
			prepPairs(o[q8KBlock:q8KBlock:q6T4Block], blk, 256, 32)
		}
	}
}

// f32ActStride is the distance in bytes between the activations in the
// packed form of packF32T4: their 4·cols bytes, padded when that is within
// 512 bytes of a multiple of 4 KiB. The F32 tile kernel walks the four
// activations side by side; at such strides they would all fall in the
// same sets of the L1 cache and evict each other.
func f32ActStride(cols int) int {
	s := 4 * cols
	if m := s % 4096; m < 512 || m > 4096-512 {
		s += 1024 + 64
	}
	return s
}

func packBytesF32T4(cols int) int { return tileTokens * f32ActStride(cols) }

// packF32AsIs reports whether the F32 packings (packF32T4, packF32T8)
// leave activations of cols elements as they lie: no padding.
func packF32AsIs(cols int) bool { return f32ActStride(cols) == 4*cols }

// packF32T4 copies tileTokens float32 activations, f32ActStride(cols)
// bytes apart.
func packF32T4(dst, acts []byte, actBytes, cols int) {
	stride := f32ActStride(cols)
	for t := 0; t < tileTokens; t++ {
		copy(dst[t*stride:t*stride+actBytes], acts[t*actBytes:(t+1)*actBytes])
	}
}
