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
func dotF16AVX2(out *float32, rows int, w *byte, chunks, rowBytes int, act *byte)

func f32AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotF32AVX2(&out[0], len(out), &w[0], cols/32, rowBytes, &act[0])
	if tail := cols &^ 31; tail < cols {
		for r := range out {
			row := w[r*rowBytes:]
			sum := float64(out[r])
			for i := tail; i < cols; i++ {
				a := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
				b := math.Float32frombits(binary.LittleEndian.Uint32(act[4*i:]))
				sum += float64(a * b)
			}
			out[r] = float32(sum)
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
