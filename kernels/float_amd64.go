//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/x448/float16"
)

//go:noescape
func dotF32AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

//go:noescape
func dotBF16AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

//go:noescape
func dotF16AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

func f32AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotF32AVX2(&out[0], len(out), &w[0], cols/32, rowBytes, &act[0])
	f32Tail(out, w, rowBytes, cols, act)
}

// f32AVX512 is the avx512 tier's F32 kernel: f32AVX2's sums, two of
// ggml's accumulators per zmm.
func f32AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[4*cols-1]
	dotF32AVX512(&out[0], len(out), &w[0], cols/32, rowBytes, &act[0])
	f32Tail(out, w, rowBytes, cols, act)
}

// f32Tail adds the products past the last whole chunk of 32 columns to
// the sums in out, as ggml_vec_dot_f32 does.
func f32Tail(out []float32, w []byte, rowBytes, cols int, act []byte) {
	if tail := cols &^ 31; tail < cols {
		// ggml_vec_dot_f32's tail: sumf += x*y in float32, not fused.
		for r := range out {
			row := w[r*rowBytes:]
			sum := out[r]
			for i := tail; i < cols; i++ {
				a := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
				b := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
				sum += float32(a * b)
			}
			out[r] = sum
		}
	}
}

func f16AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotF16AVX2(&out[0], len(out), &w[0], cols/32, rowBytes, &act[0])
	if tail := cols &^ 31; tail < cols {
		for r := range out {
			row := w[r*rowBytes:]
			sum := float64(out[r])
			for i := tail; i < cols; i++ {
				a := float16.Frombits(binary.LittleEndian.Uint16(row[2*i:])).Float32()
				b := float16.Frombits(binary.LittleEndian.Uint16(act[2*i:])).Float32()
				sum += float64(a * b)
			}
			out[r] = float32(sum)
		}
	}
}

// bf16At returns element i of a BF16 vector as float32.
func bf16At(b []byte, i int) float32 {
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
}

// prepBF16 widens a BF16 activation to float32, once per matrix.
func prepBF16(buf, act []byte, cols int) []byte {
	need := 4 * cols
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for i := 0; i < cols; i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(bf16At(act, i)))
	}
	return buf
}

func bf16AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotBF16AVX2(&out[0], len(out), &w[0], cols/32, rowBytes, &aux[0])
	if tail := cols &^ 31; tail < cols {
		for r := range out {
			row := w[r*rowBytes:]
			sum := float64(out[r])
			for i := tail; i < cols; i++ {
				sum += float64(bf16At(row, i) * bf16At(act, i))
			}
			out[r] = float32(sum)
		}
	}
}

// f32BlockScratch8 is the scratch of a block of three rows × eight
// activations in float32 (dotF32R3T8AVX512's 24 zmm of each of its two
// passes): two of f32BlockScratch.
const f32BlockScratch8 = 2 * f32BlockScratch

// f32SlabBlocks8 is f32SlabBlocks for f32Blocks8: how many blocks go
// through a slab of columns before the next slab. Their sums wait in
// scratch meanwhile (3 KiB a block, in L2), so this is as many as a row
// tile of the avx512 tier holds for the row lengths that take slabs (15
// blocks of 2048 columns in a 384 KiB tile): each pass of a group of eight
// activations over a tile then brings each slab of theirs to L1 once
// instead of once per six blocks (2048 columns × 15 blocks × 16 groups on
// Zen 5: 6.0 → 6.6 FMA/ns).
const f32SlabBlocks8 = 48

// f32Scratch8Pool is f32ScratchPool for f32Blocks8.
var f32Scratch8Pool = sync.Pool{New: func() any { return new([f32SlabBlocks8 * f32BlockScratch8]float32) }}

// f32Blocks8 is floatBlocks for blocks of three rows × eight activations
// (dotF32R3T8AVX512), prefetching into L2 one line of ahead for every
// chunk of a block (or, past its end, lines that are in cache anyway).
func f32Blocks8(blocks int, out []float32, ostride int, w []byte, rowBytes, chunks int, packed []byte, actStride int, ahead []byte) {
	off := 0
	// far returns the address of the next lines of ahead, for lines
	// lines; once they run out, the activations'.
	far := func(lines int) uintptr {
		p := &packed[0]
		if off < len(ahead) {
			p = &ahead[off]
		}
		off += 64 * lines
		return uintptr(unsafe.Pointer(p))
	}
	// The scratch comes from a pool even for a single slab: a local
	// array would be zeroed on every call, tens of thousands a prompt.
	scratch := f32Scratch8Pool.Get().(*[f32SlabBlocks8 * f32BlockScratch8]float32)
	if chunks <= f32SlabChunks {
		dotF32R3T8AVX512(&out[0], ostride, blocks, &w[0], chunks, rowBytes, &packed[0], actStride, &scratch[0], 0, f32Finish, far(blocks*chunks))
		f32Scratch8Pool.Put(scratch)
		return
	}
	slabs := (chunks + f32SlabChunks - 1) / f32SlabChunks
	per := (chunks + slabs - 1) / slabs
	for b0 := 0; b0 < blocks; b0 += f32SlabBlocks8 {
		nb := min(f32SlabBlocks8, blocks-b0)
		for c0 := 0; c0 < chunks; c0 += per {
			nc := min(per, chunks-c0)
			flags := 0
			if c0 > 0 {
				flags |= f32Resume
			}
			if c0+nc == chunks {
				flags |= f32Finish
			}
			dotF32R3T8AVX512(&out[3*b0], ostride, nb, &w[3*b0*rowBytes+128*c0], nc, rowBytes,
				&packed[128*c0], actStride, &scratch[0], 4*f32BlockScratch8, flags, far(nb*nc))
		}
	}
	f32Scratch8Pool.Put(scratch)
}

// f32T8AVX512 is the avx512 tier's F32 tile of eight activations: blocks
// of three rows through dotF32R3T8AVX512, the one or two rows left (and
// rows narrower than a chunk) through the four-activation tile, twice;
// the sums of dotF32AVX2 bit for bit, and the tail past the last whole
// chunk added as f32AVX2 does.
func f32T8AVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	f32T8AheadAVX512(out, ostride, w, rowBytes, cols, rows, packed, nil)
}

// f32T8AheadAVX512 is f32T8AVX512 prefetching ahead into L2 on the way
// (tileKernel.runAhead).
func f32T8AheadAVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed, ahead []byte) {
	_ = out[7*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	actStride := f32ActStride(cols)
	_ = packed[7*actStride+4*cols-1]
	chunks := cols / 32
	n3 := 0
	if chunks > 0 {
		n3 = rows / 3
	}
	if n3 > 0 {
		f32Blocks8(n3, out, ostride, w, rowBytes, chunks, packed, actStride, ahead)
		if tail := cols &^ 31; tail < cols {
			// ggml_vec_dot_f32's tail, as in f32AVX2.
			for t := 0; t < 8; t++ {
				act := packed[t*actStride : t*actStride+4*cols]
				for r := 0; r < 3*n3; r++ {
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
	if r := 3 * n3; r < rows {
		for h := 0; h < 2; h++ {
			f32T4(true, out[4*h*ostride+r:], ostride, w[r*rowBytes:], rowBytes, cols, rows-r, packed[4*h*actStride:])
		}
	}
}

func packBytesF32T8(cols int) int { return 8 * f32ActStride(cols) }

// packF32T8 copies eight float32 activations, f32ActStride(cols) bytes
// apart.
func packF32T8(dst, acts []byte, actBytes, cols int) {
	stride := f32ActStride(cols)
	for t := 0; t < 8; t++ {
		copy(dst[t*stride:t*stride+actBytes], acts[t*actBytes:(t+1)*actBytes])
	}
}
