package kernels

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// sanitize makes arbitrary bytes a block vector that llama.cpp could
// produce: int8 quants of the Q8 types never hold -128 (the quantizers clamp
// to ±127, and the sign trick of the SIMD kernels relies on it), and Q8_K's
// bsums are the sums of its quants.
func sanitize(t quant.Type, b []byte) {
	clamp := func(q []byte) {
		for i := range q {
			if q[i] == 0x80 {
				q[i] = 0x81
			}
		}
	}
	switch t {
	case quant.Q8_0:
		for o := 0; o+34 <= len(b); o += 34 {
			clamp(b[o+2 : o+34])
		}
	case quant.Q8_1:
		for o := 0; o+36 <= len(b); o += 36 {
			clamp(b[o+4 : o+36])
		}
	case quant.Q8_K:
		for o := 0; o+292 <= len(b); o += 292 {
			clamp(b[o+4 : o+260])
			for g := 0; g < 16; g++ {
				s := 0
				for _, q := range b[o+4+16*g : o+20+16*g] {
					s += int(int8(q))
				}
				binary.LittleEndian.PutUint16(b[o+260+2*g:], uint16(int16(s)))
			}
		}
	}
}

// FuzzMatVec runs every tier on arbitrary weights and activations (made
// valid by sanitize) and checks each against the tests' reference wherever
// the exact result is a finite, representable number.
func FuzzMatVec(f *testing.F) {
	f.Add([]byte{1, 2, 3, 250, 128, 7}, uint8(0), uint8(2), uint8(1))
	f.Add([]byte{0x7c, 0x00, 0xff}, uint8(5), uint8(8), uint8(15))
	var types []quant.Type
	for t := range refDots {
		if _, err := quant.Lookup(t); err == nil {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	f.Fuzz(func(t *testing.T, data []byte, ti, nrows, nblocks uint8) {
		if len(data) == 0 || len(types) == 0 {
			return
		}
		typ := types[int(ti)%len(types)]
		rows := 1 + int(nrows)%9
		cols := (1 + int(nblocks)%16) * typ.BlockSize()
		if typ.BlockSize() == 1 {
			cols = 1 + int(nblocks)
		}
		rowBytes, _ := quant.RowBytes(typ, cols)
		vd := vecDotType[typ]
		actBytes, _ := quant.RowBytes(vd, cols)
		w := make([]byte, rows*rowBytes)
		act := make([]byte, actBytes)
		for i := range w {
			w[i] = data[i%len(data)] ^ byte(i*7)
		}
		for i := range act {
			act[i] = data[(i+len(w))%len(data)] ^ byte(i*13)
		}
		sanitize(typ, w)
		sanitize(vd, act)
		defer SetTier(DefaultTier().Name())
		for _, name := range Tiers() {
			SetTier(name)
			out := make([]float32, rows)
			MatVec(typ, out, w, cols, act)
			for i := range out {
				want, mag := refDots[typ](cols, w[i*rowBytes:(i+1)*rowBytes], act)
				if math.IsNaN(want) || math.IsInf(want, 0) || mag > 1e30 {
					continue
				}
				if !within(out[i], want, mag) {
					t.Errorf("%s/%v %dx%d row %d: got %g, want %g (mag %g)", name, typ, rows, cols, i, out[i], want, mag)
				}
			}
		}
	})
}
