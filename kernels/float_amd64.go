//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"

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

//go:noescape
func dotF32AVX512(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte, ahead int)

// f32AVX512 is the avx512 tier's F32 kernel: f32AVX2's sums, two of
// ggml's accumulators per zmm, prefetching further ahead.
func f32AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[4*cols-1]
	dotF32AVX512(&out[0], len(out), &w[0], cols/32, rowBytes, &act[0], decodeAhead)
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
