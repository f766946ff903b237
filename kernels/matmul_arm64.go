//go:build arm64 && !purego

package kernels

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

var (
	tileQ4_0x8SDOT = tileKernel{
		run:       q4_0x8x4SDOT,
		rowStep:   8,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8T4,
	}
	tileQ8_0x4SDOT = tileKernel{
		run:       q8_0x4x4SDOT,
		rowStep:   4,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8T4,
	}
	tileQ8_0T4SDOT = tileKernel{
		run:       q8_0T4SDOT,
		rowStep:   1,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8T4,
	}
	tileQ4_0T4SDOT = tileKernel{
		run:       q4_0T4SDOT,
		rowStep:   1,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8T4,
	}
	tileQ4_0GT4SDOT = tileKernel{
		run:       q4_0GT4SDOT,
		rowStep:   1,
		packBytes: packBytesQ4_0x8T4,
		pack:      packQ4_0x8T4,
	}
	tileF32NEON = tileKernel{
		run:       f32x4NEON,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packF32T4,
	}
	tileF16NEON = tileKernel{
		run:       f16x4NEON,
		rowStep:   1,
		packBytes: packBytesF32T4,
		pack:      packF16x4NEON,
	}
	tileQ4_KSDOT = tileKernel{
		run:       q4_Kx4SDOT,
		rowStep:   1,
		packBytes: packBytesQ8_KT4,
		pack:      packQ8_KT4,
	}
	tileQ6_KSDOT = tileKernel{
		run:       q6_Kx4SDOT,
		rowStep:   1,
		packBytes: packBytesQ8_KT4,
		pack:      packQ8_KT4,
	}
)

// The tile kernels compute out[t*ostride+r] for t in [0, tileTokens) (or
// the two activations from t0 on) and r in [0, rows), the rows in groups
// of 8 (Q4_0x8) or 4 (Q8_0x4), w holding nb blocks per row; packed is
// packQ4_0x8T4's form of the activations. ostride is in elements.

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
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8T4(cols))
	dotQ4_0x8x4SDOT(&out[0], ostride, rows/8, &w[0], cols/32, &packed[0])
}

// q8_0x4x4SDOT takes the activations two at a time: the accumulators of
// four rows and two activations fill the registers the weights leave.
func q8_0x4x4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8T4(cols))
	dotQ8_0x4x2SDOT(&out[0], ostride, rows/4, &w[0], cols/32, &packed[0])
	dotQ8_0x4x2SDOT(&out[2*ostride], ostride, rows/4, &w[0], cols/32, &packed[2*q4_0x8TokBlock])
}

// kTileScratch holds the float accumulators of a K-quant tile's four
// activations: three registers of four float32 each.
type kTileScratch [tileTokens * 12]float32

// The K-quant tile kernels: rows one at a time against packQ8_KT4's form
// (Q4_K) or packQ6_Kx4's (Q6_K) of four activations.

//go:noescape
func dotQ4_Kx4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32)

func q4_Kx4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ8_KT4(cols))
	var s kTileScratch
	dotQ4_Kx4SDOT(&out[0], ostride, rows, &w[0], cols/256, rowBytes, &packed[0], &s[0])
}

//go:noescape
func dotQ6_Kx4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte, scratch *float32)

func q6_Kx4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ8_KT4(cols))
	var s kTileScratch
	dotQ6_Kx4SDOT(&out[0], ostride, rows, &w[0], cols/256, rowBytes, &packed[0], &s[0])
}

// The float tiles: two activations at a time (the lanes of two take the
// registers the row's chunk leaves), from packF32T4's or packF16x4NEON's
// float32 activations, f32ActStride(cols) bytes apart.

//go:noescape
func dotF32x2NEON(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)

//go:noescape
func dotF16x2NEON(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)

func f32x4NEON(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	floatx4NEON(dotF32x2NEON, false, out, ostride, w, rowBytes, cols, rows, packed)
}

func f16x4NEON(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	floatx4NEON(dotF16x2NEON, true, out, ostride, w, rowBytes, cols, rows, packed)
}

// floatx4NEON runs a float tile kernel on the activations two by two and
// adds the tail past the last whole chunk as f32NEON (half false) or
// f16NEON (half true) does.
func floatx4NEON(f func(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int),
	half bool, out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	stride := f32ActStride(cols)
	tileChecks(out, ostride, w, rowBytes, rows, packed, (tileTokens-1)*stride+4*cols)
	if chunks := cols / 32; chunks > 0 {
		for t := 0; t < tileTokens; t += 2 {
			f(&out[t*ostride], ostride, rows, &w[0], chunks, rowBytes, &packed[t*stride], stride)
		}
	} else {
		for t := 0; t < tileTokens; t++ {
			clear(out[t*ostride : t*ostride+rows])
		}
	}
	tail := cols &^ 31
	if tail == cols {
		return
	}
	for t := 0; t < tileTokens; t++ {
		act := packed[t*stride : t*stride+4*cols]
		for r := 0; r < rows; r++ {
			row := w[r*rowBytes:]
			if !half {
				sum := out[t*ostride+r]
				for i := tail; i < cols; i++ {
					a := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
					b := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
					sum += float32(a * b)
				}
				out[t*ostride+r] = sum
				continue
			}
			sum := float64(out[t*ostride+r])
			for i := tail; i < cols; i++ {
				a := quant.FP16ToFP32(binary.LittleEndian.Uint16(row[2*i:]))
				b := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
				sum += float64(float32(a * b))
			}
			out[t*ostride+r] = float32(sum)
		}
	}
}

// packF16x4NEON widens tileTokens F16 activations to float32 (exactly),
// f32ActStride(cols) bytes apart, for the F16 tile.
func packF16x4NEON(dst, acts []byte, actBytes, cols int) {
	stride := f32ActStride(cols)
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : t*actBytes+2*cols]
		o := dst[t*stride : t*stride+4*cols]
		for i := 0; i < cols; i++ {
			f := quant.FP16ToFP32(binary.LittleEndian.Uint16(act[2*i:]))
			binary.LittleEndian.PutUint32(o[4*i:], math.Float32bits(f))
		}
	}
}

// The tiles of Q8_0 and Q4_0 in the file's layout (tile_q8_arm64.s): one
// row at a time against the four activations of packQ4_0x8T4's form.

//go:noescape
func dotQ8_0T4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte)

//go:noescape
func dotQ4_0T4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte)

//go:noescape
func dotQ4_0GT4SDOT(out *float32, ostride, rows int, w *byte, nb, rowBytes int, packed *byte)

func q8_0T4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8T4(cols))
	dotQ8_0T4SDOT(&out[0], ostride, rows, &w[0], cols/32, rowBytes, &packed[0])
}

func q4_0T4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8T4(cols))
	dotQ4_0T4SDOT(&out[0], ostride, rows, &w[0], cols/32, rowBytes, &packed[0])
}

func q4_0GT4SDOT(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	tileChecks(out, ostride, w, rowBytes, rows, packed, packBytesQ4_0x8T4(cols))
	dotQ4_0GT4SDOT(&out[0], ostride, rows, &w[0], cols/32, rowBytes, &packed[0])
}
