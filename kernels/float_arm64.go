//go:build arm64 && !purego

package kernels

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/quant"
)

// The float kernels of the neon tiers (float_arm64.s): the assembly sums
// the whole chunks of 32 elements, and the tail is added here as quant's
// dots add it (F32 in float32, F16 and BF16 in float64, the products
// rounded to float32 first).

//go:noescape
func dotF32NEON(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

//go:noescape
func dotF16NEON(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

//go:noescape
func dotBF16NEON(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

// floatRowsNEON runs an assembly float kernel on out's rows, or clears
// out when there is no whole chunk (the lanes' sum is then +0).
func floatRowsNEON(f rowsAsm, size int, out []float32, w []byte, rowBytes, cols int, act []byte) {
	_ = w[len(out)*rowBytes-1]
	_ = act[size*cols-1]
	if chunks := cols / 32; chunks > 0 {
		f(&out[0], len(out), &w[0], chunks, rowBytes, &act[0])
	} else {
		clear(out)
	}
}

func f32NEON(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	floatRowsNEON(dotF32NEON, 4, out, w, rowBytes, cols, act)
	if tail := cols &^ 31; tail < cols {
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

// half16NEON is the F16 or BF16 kernel: f the assembly, conv the
// element conversion for the tail.
func half16NEON(f rowsAsm, conv func(uint16) float32, out []float32, w []byte, rowBytes, cols int, act []byte) {
	if len(out) == 0 {
		return
	}
	floatRowsNEON(f, 2, out, w, rowBytes, cols, act)
	if tail := cols &^ 31; tail < cols {
		for r := range out {
			row := w[r*rowBytes:]
			sum := float64(out[r])
			for i := tail; i < cols; i++ {
				a := conv(binary.LittleEndian.Uint16(row[2*i:]))
				b := conv(binary.LittleEndian.Uint16(act[2*i:]))
				sum += float64(float32(a * b))
			}
			out[r] = float32(sum)
		}
	}
}

func f16NEON(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	half16NEON(dotF16NEON, quant.FP16ToFP32, out, w, rowBytes, cols, act)
}

func bf16NEON(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	half16NEON(dotBF16NEON, quant.BF16ToFP32, out, w, rowBytes, cols, act)
}
