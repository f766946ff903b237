//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// The AVX-512 kernels cannot run on a CPU without AVX-512, but their data
// layout can be checked everywhere: these scalar models compute, lane by
// lane, what the assembly computes from the prepared activation, and are
// compared with the reference.

func auxF32(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func modelQ8_0AVX512(out []float32, w []byte, cols int, aux []byte) {
	nb := cols / 32
	for r := range out {
		row := w[r*34*nb : (r+1)*34*nb]
		var acc [16]float32
		for p := 0; p < (nb+1)/2; p++ {
			a := aux[128*p : 128*p+128]
			var wq [64]int8
			var dw [16]float32
			for h := 0; h < 2 && 2*p+h < nb; h++ {
				blk := row[34*(2*p+h):]
				for j := 0; j < 32; j++ {
					wq[32*h+j] = int8(blk[2+j])
				}
				for l := 0; l < 8; l++ {
					dw[8*h+l] = f16At(blk)
				}
			}
			for lane := 0; lane < 16; lane++ {
				s := int32(0)
				for k := 0; k < 4; k++ {
					s += int32(wq[4*lane+k]) * int32(int8(a[4*lane+k]))
				}
				acc[lane] += float32(s) * dw[lane] * auxF32(a[64:], lane)
			}
		}
		var sum float32
		for _, v := range acc {
			sum += v
		}
		out[r] = sum
	}
}

func modelQ4_0AVX512(out []float32, w []byte, cols int, aux []byte) {
	nb := cols / 32
	for r := range out {
		row := w[r*18*nb : (r+1)*18*nb]
		var acc [16]float32
		for p := 0; p < (nb+1)/2; p++ {
			a := aux[192*p : 192*p+192]
			var nib [64]byte
			var dw [16]float32
			for h := 0; h < 2 && 2*p+h < nb; h++ {
				blk := row[18*(2*p+h):]
				for j := 0; j < 16; j++ {
					nib[16*h+j] = blk[2+j] & 15
					nib[32+16*h+j] = blk[2+j] >> 4
				}
				for l := 0; l < 4; l++ {
					dw[4*h+l] = f16At(blk)
					dw[8+4*h+l] = f16At(blk)
				}
			}
			for lane := 0; lane < 16; lane++ {
				s := int32(binary.LittleEndian.Uint32(a[64+4*lane:]))
				for k := 0; k < 4; k++ {
					s += int32(nib[4*lane+k]) * int32(int8(a[4*lane+k]))
				}
				acc[lane] += float32(s) * dw[lane] * auxF32(a[128:], lane)
			}
		}
		var sum float32
		for _, v := range acc {
			sum += v
		}
		out[r] = sum
	}
}

func TestAVX512Layouts(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, c := range []struct {
		typ   quant.Type
		prep  prepFunc
		model func(out []float32, w []byte, cols int, aux []byte)
		ref   refDot
	}{
		{quant.Q8_0, prepQ8_0AVX512, modelQ8_0AVX512, refQ8_0},
		{quant.Q4_0, prepQ4_0AVX512, modelQ4_0AVX512, refQ4_0},
	} {
		for _, sh := range shapesFor(c.typ) {
			w := randomRows(r, c.typ, sh.rows, sh.cols)
			act := randomRows(r, quant.Q8_0, 1, sh.cols)
			dirty := make([]byte, 1<<16)
			for i := range dirty {
				dirty[i] = 0xAA
			}
			aux := c.prep(dirty[:0], act, sh.cols) // must clear what it reuses
			out := make([]float32, sh.rows)
			c.model(out, w, sh.cols, aux)
			rowBytes, _ := quant.RowBytes(c.typ, sh.cols)
			for i := range out {
				want, mag := c.ref(sh.cols, w[i*rowBytes:(i+1)*rowBytes], act)
				if !within(out[i], want, mag) {
					t.Errorf("%v %dx%d row %d: model %g, reference %g", c.typ, sh.rows, sh.cols, i, out[i], want)
				}
			}
		}
	}
}
