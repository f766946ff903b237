//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// tileFor returns the tile kernel of tier tr for traits tt, or nil when
// it has none. The tile kernels do per (row, activation) exactly what the
// AVX2 one-activation kernels do, which the avx512 tier shares for these
// types' results bit for bit, so both tiers use them.
func tileFor(tr *tier, tt *quant.Traits) *tileKernel {
	if tr != avx2Tier && tr != avx512Tier {
		return nil
	}
	if tt == q4_0Repacked {
		return &tileQ4_0Gemv
	}
	switch tt.Type {
	case quant.Q8_0:
		return &tileQ8_0
	case quant.Q4_K:
		return &tileQ4_K
	case quant.Q6_K:
		return &tileQ6_K
	case quant.F32:
		return &tileF32
	}
	return nil
}

var (
	tileQ8_0 = tileKernel{
		run:       q8_0x4AVX2,
		rowStep:   1,
		packBytes: packBytesQ8_0x4,
		pack:      packQ8_0x4,
	}
	tileQ4_K = tileKernel{
		run:       q4_Kx4AVX2,
		rowStep:   1,
		packBytes: packBytesQ8_Kx4,
		pack:      packQ8_Kx4,
	}
	tileQ6_K = tileKernel{
		run:       q6_Kx4AVX2,
		rowStep:   1,
		packBytes: packBytesQ6_Kx4,
		pack:      packQ6_Kx4,
	}
	tileF32 = tileKernel{
		run:       f32x4AVX2,
		rowStep:   1,
		packBytes: packBytesF32x4,
		pack:      packF32x4,
	}
	tileQ4_0Gemv = tileKernel{
		run:       q4_0Gemvx4AVX2,
		rowStep:   8,
		packBytes: packBytesQ4_0Gx4,
		pack:      packQ4_0Gx4,
	}
)

// The tile kernels compute out[t*ostride+r] for t in [0, 4) and r in
// [0, rows); row r starts at w + r*rowBytes and holds nb blocks; packed is
// the activations' packed form. ostride and rowBytes are in elements and
// bytes.

//go:noescape
func dotQ8_0x4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

func q8_0x4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ8_0x4AVX2(&out[0], ostride, rows, &w[0], cols/32, &packed[0])
}

//go:noescape
func dotQ4_0Gemvx4AVX2(out *float32, ostride, groups int, w *byte, nb, rowBytes int, packed *byte)

func q4_0Gemvx4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ4_0Gemvx4AVX2(&out[0], ostride, rows/8, &w[0], cols/32, rowBytes, &packed[0])
}

//go:noescape
func dotQ4_Kx4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

func q4_Kx4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ4_Kx4AVX2(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotQ6_Kx4AVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

func q6_Kx4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	dotQ6_Kx4AVX2(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotF32x4AVX2(out *float32, ostride, rows int, w *byte, chunks, rowBytes int, act *byte, actStride int)

func f32x4AVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	actBytes := 4 * cols
	_ = packed[tileTokens*actBytes-1]
	dotF32x4AVX2(&out[0], ostride, rows, &w[0], cols/32, rowBytes, &packed[0], actBytes)
	if tail := cols &^ 31; tail < cols {
		// ggml_vec_dot_f32's tail, as in f32AVX2.
		for t := 0; t < tileTokens; t++ {
			act := packed[t*actBytes : (t+1)*actBytes]
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
