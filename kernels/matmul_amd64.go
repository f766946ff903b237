//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/x448/float16"
)

var (
	tileQ8_0 = tileKernel{
		run:       q8_0T4AVX2,
		rowStep:   1,
		packBytes: packBytesQ8_0T4,
		pack:      packQ8_0T4,
	}
	tileQ4_K = tileKernel{
		run:       q4_KT4AVX2,
		rowStep:   1,
		packBytes: packBytesQ8_KT4,
		pack:      packQ8_KT4,
	}
	tileQ6_K = tileKernel{
		run:       q6_KT4AVX2,
		rowStep:   1,
		packBytes: packBytesQ6_KT4,
		pack:      packQ6_KT4,
	}
	tileF32 = tileKernel{
		run:       f32T4AVX2,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packF32T4,
		asIs:      packF32AsIs,
	}
	tileF16 = tileKernel{
		run:       f16T4AVX2,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packF16T4,
	}
	tileBF16 = tileKernel{
		run:       bf16T4AVX2,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packBF16T4,
	}
	tileQ8_0x4 = tileKernel{
		run:       q8_0x4T4AVX2,
		rowStep:   4,
		packBytes: packBytesQ8_0T4,
		pack:      packQ8_0T4,
	}
	tileQ4_0x8 = tileKernel{
		run:       q4_0x8T4AVX2,
		rowStep:   8,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8T4,
	}
	tileQ4_0Gemv = tileKernel{
		run:       q4_0GemvT4AVX2,
		rowStep:   8,
		packBytes: packBytesQ4_0GemvT4,
		pack:      packQ4_0GemvT4,
	}
)

// The tile kernels compute out[t*ostride+r] for t in [0, 4) and r in
// [0, rows); row r starts at w + r*rowBytes and holds nb blocks; packed is
// the activations' packed form. ostride and rowBytes are in elements and
// bytes.

//go:noescape
func dotQ8_0T4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

func q8_0T4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ8_0T4AVX2(&out[0], ostride, rows, &w[0], cols/32, &packed[0])
}

//go:noescape
func dotQ4_0GemvT4AVX2(out *float32, ostride, groups int, w *byte, nb, rowBytes int, packed *byte)

func q4_0GemvT4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ4_0GemvT4AVX2(&out[0], ostride, rows/8, &w[0], cols/32, rowBytes, &packed[0])
}

//go:noescape
func dotQ8_0x4T4AVX2(out *float32, ostride, groups int, w *byte, nb int, packed *byte)

func q8_0x4T4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ8_0T4(cols)-1]
	dotQ8_0x4T4AVX2(&out[0], ostride, rows/4, &w[0], cols/32, &packed[0])
}

//go:noescape
func dotQ4_0x8T4AVX2(out *float32, ostride, groups int, w *byte, nb int, packed *byte)

func q4_0x8T4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ4_0x8T4(cols)-1]
	dotQ4_0x8T4AVX2(&out[0], ostride, rows/8, &w[0], cols/32, &packed[0])
}

//go:noescape
func dotQ4_KT4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

func q4_KT4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ4_KT4AVX2(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotQ6_KT4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

func q6_KT4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ6_KT4AVX2(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotF32T4AVX2(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)

// The block kernels of the float tiles (matmul_amd64.s): blocks of three
// or two rows of F32, F16 or BF16 weights against four activations
// widened to float32, one pass per ggml accumulator.

//go:noescape
func dotF32R3T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotF32R2T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotF16R3T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotF16R2T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func dotBF16R2T4AVX2(out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int)

//go:noescape
func widenF16AVX2(dst, src *byte, n int)

//go:noescape
func widenBF16AVX2(dst, src *byte, n int)

// floatKind is the weight type of a float tile.
type floatKind int

const (
	kindF32 floatKind = iota
	kindF16
	kindBF16
)

// chunkBytes is the size of 32 weights.
func (k floatKind) chunkBytes() int {
	if k == kindF32 {
		return 128
	}
	return 64
}

// blockDot calls the block kernel of kind for blocks of k rows, 3 or 2
// (always 2 for BF16, which needs a register per product), the AVX-512
// one when z is set and there is one (F32, F16). Direct calls: through a
// func value, scratch would escape to the heap.
func blockDot(z bool, kind floatKind, k int, out *float32, ostride, blocks int, w *byte, chunks, rowBytes int, act *byte, actStride int, scratch *float32, sstride, flags int) {
	switch {
	case z && kind == kindF16 && k == 3:
		dotF16R3T4AVX512(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case z && kind == kindF16:
		dotF16R2T4AVX512(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case z && kind == kindF32 && k == 3:
		dotF32R3T4AVX512(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case z && kind == kindF32:
		dotF32R2T4AVX512(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case kind == kindBF16:
		dotBF16R2T4AVX2(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case kind == kindF16 && k == 3:
		dotF16R3T4AVX2(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case kind == kindF16:
		dotF16R2T4AVX2(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	case k == 3:
		dotF32R3T4AVX2(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	default:
		dotF32R2T4AVX2(out, ostride, blocks, w, chunks, rowBytes, act, actStride, scratch, sstride, flags)
	}
}

// Flags of the block kernels.
const (
	f32Resume = 1 << iota // start from the sums in scratch
	f32Finish             // reduce the sums into out
)

const (
	// f32SlabChunks bounds the chunks of 32 columns a block kernel takes
	// at once, so that the four activations' slab (12 KiB) stays in the
	// L1 cache while the blocks of rows pass over it.
	f32SlabChunks = 24
	// f32SlabBlocks is how many blocks of rows go through a slab before
	// the next slab when a row has several slabs: their sums wait in
	// scratch meanwhile (0.5 KiB per row).
	f32SlabBlocks = 6
	// f32BlockScratch is the scratch of a block of three rows in
	// float32: four passes of 4·3 accumulators of 8 lanes.
	f32BlockScratch = 4 * 12 * 8
)

// f32ScratchPool recycles the scratch of floatBlocks over slabs, which is
// too large to zero on every call.
var f32ScratchPool = sync.Pool{New: func() any { return new([f32SlabBlocks * f32BlockScratch]float32) }}

// floatBlocks runs blockDot on blocks blocks of k rows each, from the
// first row of w and out. Rows of more than f32SlabChunks chunks go
// f32SlabBlocks blocks at a time, slab by slab of columns, the sums
// waiting in scratch from one slab to the next.
func floatBlocks(z bool, kind floatKind, k, blocks int, out []float32, ostride int, w []byte, rowBytes, chunks int, packed []byte, actStride int) {
	if chunks <= f32SlabChunks {
		var scratch [f32BlockScratch]float32
		blockDot(z, kind, k, &out[0], ostride, blocks, &w[0], chunks, rowBytes, &packed[0], actStride, &scratch[0], 0, f32Finish)
		return
	}
	scratch := f32ScratchPool.Get().(*[f32SlabBlocks * f32BlockScratch]float32)
	slabs := (chunks + f32SlabChunks - 1) / f32SlabChunks
	per := (chunks + slabs - 1) / slabs
	cb := kind.chunkBytes()
	for b0 := 0; b0 < blocks; b0 += f32SlabBlocks {
		nb := min(f32SlabBlocks, blocks-b0)
		for c0 := 0; c0 < chunks; c0 += per {
			nc := min(per, chunks-c0)
			flags := 0
			if c0 > 0 {
				flags |= f32Resume
			}
			if c0+nc == chunks {
				flags |= f32Finish
			}
			blockDot(z, kind, k, &out[k*b0], ostride, nb, &w[k*b0*rowBytes+cb*c0], nc, rowBytes,
				&packed[128*c0], actStride, &scratch[0], 512*k, flags)
		}
	}
	f32ScratchPool.Put(scratch)
}

// floatRows runs all rows of a float tile through the block kernels: in
// blocks of three rows and two for the rest (3·n3 + 2·n2 = rows), BF16
// in blocks of two, and a single row left over as a block of that row
// twice, into a buffer. chunks must be at least 1.
func floatRows(z bool, kind floatKind, out []float32, ostride int, w []byte, rowBytes, chunks, rows int, packed []byte, actStride int) {
	n3, n2 := rows/3, 0
	switch {
	case kind == kindBF16:
		n3, n2 = 0, rows/2
	case rows%3 == 1 && n3 > 0:
		n3, n2 = n3-1, 2
	case rows%3 == 2:
		n2 = 1
	}
	if n3 > 0 {
		floatBlocks(z, kind, 3, n3, out, ostride, w, rowBytes, chunks, packed, actStride)
	}
	if n2 > 0 {
		floatBlocks(z, kind, 2, n2, out[3*n3:], ostride, w[3*n3*rowBytes:], rowBytes, chunks, packed, actStride)
	}
	if done := 3*n3 + 2*n2; done < rows {
		var o [2 * tileTokens]float32
		floatBlocks(z, kind, 2, 1, o[:], 2, w[done*rowBytes:], 0, chunks, packed, actStride)
		for t := 0; t < tileTokens; t++ {
			out[t*ostride+done] = o[2*t]
		}
	}
}

// f32T4AVX2 is the F32 tile kernel: the block kernels, or dotF32T4AVX2
// for a single row; all give
// the sums of dotF32AVX2 bit for bit. The tail past the last whole chunk
// is added as f32AVX2 does.
func f32T4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	f32T4(false, out, ostride, w, rowBytes, cols, rows, packed)
}

// f32T4 is f32T4AVX2, with the AVX-512 block kernels when z is set.
func f32T4(z bool, out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	actBytes := f32ActStride(cols)
	_ = packed[(tileTokens-1)*actBytes+4*cols-1]
	chunks := cols / 32
	if chunks > 0 && rows >= 2 {
		floatRows(z, kindF32, out, ostride, w, rowBytes, chunks, rows, packed, actBytes)
	} else {
		dotF32T4AVX2(&out[0], ostride, rows, &w[0], chunks, rowBytes, &packed[0], actBytes)
	}
	if tail := cols &^ 31; tail < cols {
		// ggml_vec_dot_f32's tail, as in f32AVX2.
		for t := 0; t < tileTokens; t++ {
			act := packed[t*actBytes : t*actBytes+4*cols]
			for r := 0; r < rows; r++ {
				row := w[r*rowBytes:]
				sum := out[t*ostride+r]
				for i := tail; i < cols; i++ {
					a := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
					b := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
					sum += float32(a * b)
				}
				out[t*ostride+r] = sum
			}
		}
	}
}

// f16T4AVX2 is the F16 tile kernel, the block kernels on F16 weights: the
// sums of dotF16AVX2 bit for bit, and the tail added as f16AVX2 does.
func f16T4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	halfT4AVX2(false, kindF16, out, ostride, w, rowBytes, cols, rows, packed)
}

// bf16T4AVX2 is the BF16 tile kernel, the block kernels on BF16 weights:
// the sums of dotBF16AVX2 bit for bit, and the tail added as bf16AVX2
// does.
func bf16T4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	halfT4AVX2(false, kindBF16, out, ostride, w, rowBytes, cols, rows, packed)
}

// halfT4AVX2 is the tile kernel of 16-bit weights, with the AVX-512
// block kernels where there are some when z is set; the activations come
// widened to float32 by packHalfT4.
func halfT4AVX2(z bool, kind floatKind, out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	actStride := f32ActStride(cols)
	_ = packed[(tileTokens-1)*actStride+4*cols-1]
	if chunks := cols / 32; chunks > 0 {
		floatRows(z, kind, out, ostride, w, rowBytes, chunks, rows, packed, actStride)
	} else {
		for t := 0; t < tileTokens; t++ {
			clear(out[t*ostride : t*ostride+rows])
		}
	}
	if tail := cols &^ 31; tail < cols {
		// ggml_vec_dot_f16's and _bf16's tail, as in f16AVX2 and
		// bf16AVX2: products in float32, summed in float64.
		for t := 0; t < tileTokens; t++ {
			act := packed[t*actStride : t*actStride+4*cols]
			for r := 0; r < rows; r++ {
				row := w[r*rowBytes:]
				sum := float64(out[t*ostride+r])
				for i := tail; i < cols; i++ {
					var a float32
					if kind == kindBF16 {
						a = bf16At(row, i)
					} else {
						a = float16.Frombits(binary.LittleEndian.Uint16(row[2*i:])).Float32()
					}
					b := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
					sum += float64(a * b)
				}
				out[t*ostride+r] = float32(sum)
			}
		}
	}
}

// packF16T4 widens tileTokens F16 activations to float32 for the F16
// tile kernel.
func packF16T4(dst, acts []byte, actBytes, cols int) { packHalfT4(kindF16, dst, acts, actBytes, cols) }

// packBF16T4 widens tileTokens BF16 activations to float32 for the BF16
// tile kernel.
func packBF16T4(dst, acts []byte, actBytes, cols int) {
	packHalfT4(kindBF16, dst, acts, actBytes, cols)
}

// packHalfT4 widens tileTokens 16-bit activations of cols elements to
// float32 (exactly), f32ActStride(cols) bytes apart.
func packHalfT4(kind floatKind, dst, acts []byte, actBytes, cols int) {
	stride := f32ActStride(cols)
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : t*actBytes+2*cols]
		o := dst[t*stride : t*stride+4*cols]
		i := cols &^ 7
		if i > 0 {
			if kind == kindBF16 {
				widenBF16AVX2(&o[0], &act[0], i)
			} else {
				widenF16AVX2(&o[0], &act[0], i)
			}
		}
		for ; i < cols; i++ {
			f := bf16At(act, i)
			if kind == kindF16 {
				f = float16.Frombits(binary.LittleEndian.Uint16(act[2*i:])).Float32()
			}
			binary.LittleEndian.PutUint32(o[4*i:], math.Float32bits(f))
		}
	}
}
